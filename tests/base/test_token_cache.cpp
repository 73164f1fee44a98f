// data/token_cache.h, data/train_pairs.h and the windowed make_batches: the cached corpus is the
// in-memory one (encode_dataset) example for example; a later open maps it without tokenizing;
// changed text, another vocabulary or a damaged file rebuild it; bad text names its line and leaves
// no file; several weighted corpora give their shares of each epoch.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "data/batcher.h"
#include "data/corpus.h"
#include "data/memo_encoder.h"
#include "data/token_cache.h"
#include "data/tokenizer.h"
#include "data/train_pairs.h"
#include "util/error.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using attnmt::CorpusConfig;
using attnmt::Tokenizer;
using attnmt::TokenCorpus;

namespace {

struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("attnmt_token_cache_" + std::to_string(::getpid()));
  attnmt::ParallelText text;
  attnmt::Tokenizers tokenizers;
  CorpusConfig corpus;

  Fixture() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    // 3,000 pairs of 0-12 words: some empty, some long.
    for (int i = 0; i < 3000; ++i) {
      std::string src, tgt;
      for (int w = 0; w < (i * 7) % 13; ++w) src += "s" + std::to_string((i + w) % 50) + " ";
      for (int w = 0; w < (i * 5) % 12; ++w) tgt += "t" + std::to_string((i * w) % 50) + " ";
      text.src.push_back(src);
      text.tgt.push_back(tgt);
    }
    corpus.src = write("train.src", text.src);
    corpus.tgt = write("train.tgt", text.tgt);
    tokenizers = train_words("w", 40);
  }
  ~Fixture() { fs::remove_all(dir); }

  std::string write(const std::string& name, const std::vector<std::string>& lines) const {
    std::ofstream out(dir / name);
    for (const auto& l : lines) out << l << "\n";
    return (dir / name).string();
  }
  attnmt::Tokenizers train_words(const std::string& name, int vocab) const {
    attnmt::TokenizerConfig config;
    config.type = attnmt::TokenizerType::none;
    config.vocab_size = vocab;
    std::vector<std::string> both(text.src);
    both.insert(both.end(), text.tgt.begin(), text.tgt.end());
    Tokenizer::train(both, (dir / name).string(), config, 1);
    auto tok = std::make_shared<Tokenizer>((dir / (name + ".model")).string());
    return {tok, tok};
  }
  std::string cache() const { return (dir / "cache").string(); }
};

// Every line of the cache equals its encoding in memory.
void check_same(const TokenCorpus& ids, const attnmt::ParallelText& text, const attnmt::Tokenizers& tokenizers) {
  REQUIRE(ids.lines() == text.src.size());
  attnmt::Example ex;
  for (size_t i = 0; i < ids.lines(); ++i) {
    ids.fetch(i, ex);
    REQUIRE(ex.line == i);
    REQUIRE(ex.src == tokenizers.src->encode(text.src[i]));
    REQUIRE(ex.tgt == tokenizers.tgt->encode(text.tgt[i]));
    REQUIRE(ids.src_length(i) == ex.src.size());
    REQUIRE(ids.tgt_length(i) == ex.tgt.size());
  }
}

}  // namespace

TEST_CASE("token cache: built once, mapped later, the in-memory corpus line for line", "[data][cache]") {
  Fixture f;
  for (int threads : {1, 2}) {
    fs::remove_all(f.cache());
    const auto built = TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), threads, "train");
    CHECK(built.built());
    check_same(built, f.text, f.tokenizers);
  }
  const auto mapped = TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "train");
  CHECK_FALSE(mapped.built());
  check_same(mapped, f.text, f.tokenizers);

  // TrainPairs keeps what encode_dataset keeps, in the same order.
  const auto dataset = attnmt::encode_dataset(f.text, f.tokenizers, 10, 1);
  std::vector<attnmt::TrainCorpus> one;
  one.push_back({TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 1, "train"), 1.0, "train"});
  const attnmt::TrainPairs data(std::move(one), 10);
  REQUIRE(data.size() == dataset.examples.size());
  CHECK(data.skipped_empty(0) == dataset.skipped_empty);
  CHECK(data.skipped_long(0) == dataset.skipped_long);
  std::vector<size_t> all(data.size());
  std::iota(all.begin(), all.end(), 0);
  const auto examples = data.gather(all);
  for (size_t i = 0; i < examples.size(); ++i) {
    REQUIRE(examples[i].line == dataset.examples[i].line);
    REQUIRE(examples[i].src == dataset.examples[i].src);
    REQUIRE(examples[i].tgt == dataset.examples[i].tgt);
  }
  // One corpus: the epoch's batches are those of the in-memory dataset.
  CHECK(data.epoch_examples(7, 3) == all);
  CHECK(attnmt::make_batches(data.epoch_examples(7, 3), data.src_lengths(), data.tgt_lengths(), 0, 200, true, 7, 3) ==
        attnmt::make_batches(dataset.examples, 0, 200, true, 7, 3));
}

TEST_CASE("token cache: changed text, another vocabulary or a damaged file are rebuilt", "[data][cache]") {
  Fixture f;
  CHECK(TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "train").built());
  const std::string path = (fs::path(f.cache()) / TokenCorpus::file_name(f.corpus)).string();
  REQUIRE(fs::exists(path));

  SECTION("changed text") {
    f.text.src[5] = "s1 s2 s3";
    f.write("train.src", f.text.src);
    const auto again = TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "train");
    CHECK(again.built());
    check_same(again, f.text, f.tokenizers);
  }
  SECTION("another vocabulary") {
    const auto other = f.train_words("w2", 30);
    const auto again = TokenCorpus::open(f.corpus, other, f.cache(), 2, "train");
    CHECK(again.built());
    check_same(again, f.text, other);
  }
  SECTION("the same vocabulary trained again (other model bytes) reuses the cache") {
    CHECK_FALSE(TokenCorpus::open(f.corpus, f.train_words("w3", 40), f.cache(), 2, "train").built());
  }
  SECTION("a truncated file") {
    fs::resize_file(path, fs::file_size(path) / 2);
    const auto again = TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "train");
    CHECK(again.built());
    check_same(again, f.text, f.tokenizers);
  }
  SECTION("garbage in the index") {
    {
      std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(-80, std::ios::end);  // the footer's sizes
      io.write("\xff\xff\xff\xff\xff\xff\xff\xff", 8);
    }
    CHECK(TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "train").built());
  }
  SECTION("temp files of a killed build are removed") {
    std::ofstream(path + ".tmp.999999") << "half";
    f.text.tgt[0] = "t1";
    f.write("train.tgt", f.text.tgt);
    CHECK(TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "train").built());
    CHECK_FALSE(fs::exists(path + ".tmp.999999"));
  }
}

TEST_CASE("PairReader: pairs in order, and a side that ends first is named with both counts", "[data][bad-input]") {
  Fixture f;
  SECTION("equal sides: every pair, then false") {
    attnmt::PairReader pairs(f.corpus, "train");
    std::string src, tgt;
    size_t n = 0;
    bool same = true;
    while (pairs.next(src, tgt)) {
      same = same && src == f.text.src[n] && tgt == f.text.tgt[n];
      ++n;
      CHECK(pairs.line_number() == n);
    }
    CHECK(same);
    CHECK(n == 3000);
  }
  SECTION("training corpora are named in messages as data.train lists them") {
    CHECK(attnmt::training_corpus_name(0, 1) == "train");
    CHECK(attnmt::training_corpus_name(1, 3) == "train corpus 2");
  }
  // The shorter side, either one, ends the read with the longer side's full count.
  for (const bool short_src : {true, false}) {
    DYNAMIC_SECTION((short_src ? "source" : "target") << " side 2 lines short") {
      auto lines = short_src ? f.text.src : f.text.tgt;
      lines.resize(2998);
      f.write(short_src ? "train.src" : "train.tgt", lines);
      attnmt::PairReader pairs(f.corpus, "valid");
      std::string src, tgt;
      const std::string expected = short_src ? "valid: '" + f.corpus.src + "' has 2998 lines but '" + f.corpus.tgt + "' has 3000"
                                             : "valid: '" + f.corpus.src + "' has 3000 lines but '" + f.corpus.tgt + "' has 2998";
      size_t n = 0;
      CHECK_THROWS_WITH([&] { while (pairs.next(src, tgt)) ++n; }(), expected);
      CHECK(n == 2998);
    }
  }
}

TEST_CASE("token cache: bad text is named by file and line, and leaves no cache", "[data][cache][bad-input]") {
  Fixture f;
  auto lines = f.text.tgt;
  SECTION("invalid UTF-8") {
    lines[2500] = "t1 \xC3\x28 t2";
    f.write("train.tgt", lines);
    CHECK_THROWS_WITH(TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "train"),
                      Contains("train.tgt' line 2501: invalid UTF-8 at byte 3"));
  }
  SECTION("line counts differ") {
    lines.pop_back();
    f.write("train.tgt", lines);
    CHECK_THROWS_WITH(TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "train"),
                      Contains("has 3000 lines but '" + f.corpus.tgt + "' has 2999"));
  }
  SECTION("an empty corpus") {
    f.write("train.src", {});
    f.write("train.tgt", {});
    CHECK_THROWS_WITH(TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "train"), Contains("is empty"));
  }
  for (const auto& entry : fs::directory_iterator(f.cache())) {
    CHECK(entry.path().extension() == ".lock");  // no cache, no temp file
  }
}

TEST_CASE("train data: weighted corpora give their shares of each epoch", "[data][cache]") {
  Fixture f;
  // A second corpus of 300 pairs (the first 300 lines of the first).
  CorpusConfig small{f.write("small.src", {f.text.src.begin(), f.text.src.begin() + 300}),
                     f.write("small.tgt", {f.text.tgt.begin(), f.text.tgt.begin() + 300}), 1.0};
  auto make = [&](double w1, double w2) {
    std::vector<attnmt::TrainCorpus> corpora;
    corpora.push_back({TokenCorpus::open(f.corpus, f.tokenizers, f.cache(), 2, "big"), w1, "big"});
    corpora.push_back({TokenCorpus::open(small, f.tokenizers, f.cache(), 2, "small"), w2, "small"});
    return attnmt::TrainPairs(std::move(corpora), 0);
  };
  const auto data = make(1, 1);
  const size_t big = data.kept(0), little = data.kept(1);
  REQUIRE(data.size() == big + little);
  // Equal weights: half of the epoch each; the small corpus is repeated, the big one is spread.
  CHECK(data.per_epoch(0) + data.per_epoch(1) == data.size());
  CHECK(data.per_epoch(0) == (data.size() + 1) / 2);
  for (int64_t epoch : {0, 1, 2}) {
    const auto ids = data.epoch_examples(5, epoch);
    CHECK(ids.size() == data.size());
    CHECK(ids == data.epoch_examples(5, epoch));  // a pure function of (seed, epoch)
    std::map<size_t, int> count;
    size_t from_small = 0;
    for (size_t i : ids) {
      ++count[i];
      if (i >= big) ++from_small;
    }
    CHECK(from_small == data.per_epoch(1));
    // The small corpus's share spans whole passes (each pair once) and two partial ones.
    const int passes = static_cast<int>(data.per_epoch(1) / little);
    for (const auto& [i, n] : count) {
      if (i >= big) CHECK((n >= passes - 1 && n <= passes + 2));
      if (i < big) CHECK(n <= 2);
    }
  }
  // Two epochs of the big corpus's share walk one permutation: no pair twice before all once.
  std::vector<size_t> first_pass;
  for (int64_t epoch = 0; first_pass.size() < big; ++epoch) {
    for (size_t i : data.epoch_examples(5, epoch))
      if (i < big && first_pass.size() < big) first_pass.push_back(i);
  }
  CHECK(std::set<size_t>(first_pass.begin(), first_pass.end()).size() == big);
  CHECK(data.epoch_examples(5, 0) != data.epoch_examples(6, 0));

  const auto weighted = make(1, 3);  // a quarter and three quarters
  CHECK(weighted.per_epoch(1) == (weighted.size() * 3 + 3) / 4);
  CHECK(weighted.per_epoch(0) + weighted.per_epoch(1) == weighted.size());
}

TEST_CASE("make_batches with a window: batches are cut within windows, every example once", "[data]") {
  std::vector<uint32_t> src, tgt;
  for (uint32_t i = 0; i < 1000; ++i) {
    src.push_back(1 + (i * 37) % 50);
    tgt.push_back(1 + (i * 11) % 40);
  }
  std::vector<size_t> order(1000);
  std::iota(order.begin(), order.end(), 0);
  const auto whole = attnmt::make_batches(order, src, tgt, 16, 0, true, 3, 1, 0);
  CHECK(whole == attnmt::make_batches(order, src, tgt, 16, 0, true, 3, 1, 5000));  // a window over all
  const auto windowed = attnmt::make_batches(order, src, tgt, 16, 0, true, 3, 1, 100);
  CHECK(windowed != whole);
  CHECK(windowed == attnmt::make_batches(order, src, tgt, 16, 0, true, 3, 1, 100));
  std::vector<size_t> seen;
  size_t partial = 0;
  for (const auto& b : windowed) {
    seen.insert(seen.end(), b.begin(), b.end());
    if (b.size() < 16) ++partial;
    for (size_t k = 1; k < b.size(); ++k) CHECK(src[b[k - 1]] <= src[b[k]]);  // sorted within its window
  }
  CHECK(partial <= 10);  // at most one short batch per window of 100
  // Unshuffled, the batches hold the ids in std::stable_sort's order by (src, tgt) length.
  std::vector<size_t> sorted(order);
  std::stable_sort(sorted.begin(), sorted.end(), [&](size_t a, size_t b) {
    return src[a] != src[b] ? src[a] < src[b] : tgt[a] < tgt[b];
  });
  std::vector<size_t> flat;
  for (const auto& b : attnmt::make_batches(order, src, tgt, 16, 0, false, 3, 1, 0)) flat.insert(flat.end(), b.begin(), b.end());
  CHECK(flat == sorted);
  std::vector<size_t> reversed(order.rbegin(), order.rend());  // ties keep the given order
  std::stable_sort(reversed.begin(), reversed.end(), [&](size_t a, size_t b) {
    return src[a] != src[b] ? src[a] < src[b] : tgt[a] < tgt[b];
  });
  flat.clear();
  for (const auto& b : attnmt::make_batches(std::vector<size_t>(order.rbegin(), order.rend()), src, tgt, 16, 0, false, 3, 1, 0))
    flat.insert(flat.end(), b.begin(), b.end());
  CHECK(flat == reversed);
  std::sort(seen.begin(), seen.end());
  CHECK(seen == order);
}

TEST_CASE("MemoEncoder gives Tokenizer::encode's ids (SentencePiece bpe and unigram, words)", "[data][cache]") {
  const auto dir = fs::temp_directory_path() / ("attnmt_memo_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string data = std::string(ATTNMT_SOURCE_DIR) + "/data/multi30k/";
  auto lines = attnmt::read_lines(data + "train.de.gz");
  const auto en = attnmt::read_lines(data + "train.en.gz");
  lines.insert(lines.end(), en.begin(), en.end());
  // Whitespace and characters that normalisation changes: tabs, runs of spaces, no-break and
  // ideographic spaces, leading and trailing spaces, compatibility forms, combining marks.
  const std::vector<std::string> odd = {"  zwei  Hunde\tspielen ", "ein\xC2\xA0Mann\xE3\x80\x80im Park", "\xEF\xBC\xA1\xEF\xBC\xA2 \xEF\xAC\x81sh",
                                        "Cafe\xCC\x81 Caf\xC3\xA9", " ", "", "\t", "x  \t  y", "<x> a<x>b"};
  lines.insert(lines.end(), odd.begin(), odd.end());
  for (const auto model_type : {attnmt::SubwordModel::bpe, attnmt::SubwordModel::unigram}) {
    attnmt::TokenizerConfig config;
    config.model_type = model_type;
    config.vocab_size = 2000;
    config.user_defined_symbols = "<x>";
    const std::vector<std::string> sample(lines.begin(), lines.begin() + 8000);
    const auto prefix = (dir / attnmt::name_string(model_type)).string();
    Tokenizer::train(sample, prefix, config, 1);
    const Tokenizer tok(prefix + ".model");
    attnmt::MemoEncoder memo(tok);
    std::vector<int> ids;
    size_t differ = 0;
    for (const auto& line : lines) {
      memo.encode(line, ids);
      if (ids != tok.encode(line)) {
        ++differ;
        UNSCOPED_INFO(model_type << ": '" << line << "'");
      }
    }
    CHECK(differ == 0);
    CHECK(memo.agrees_on(odd));
  }
  fs::remove_all(dir);
}
