// data/bpe_dropout.h against SentencePiece itself: with p = 0 the merges give SentencePiece's own
// segmentation of every sentence; with p > 0 the pieces still spell the sentence, are drawn from
// the seed alone, grow in number with p, and a merge is skipped with probability p (counted on a
// sentence that one merge segments).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "config/loader.h"
#include "data/bpe_dropout.h"
#include "data/corpus.h"
#include "data/tokenizer.h"
#include "util/error.h"

namespace fs = std::filesystem;
using attnmt::BpeDropout;
using attnmt::Tokenizer;

namespace {

struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("attnmt_bpe_dropout_" + std::to_string(::getpid()));
  std::vector<std::string> sentences;
  std::shared_ptr<Tokenizer> tokenizer;

  explicit Fixture(const std::string& user_defined_symbols = "") {
    fs::create_directories(dir);
    const std::string data = std::string(ATTNMT_SOURCE_DIR) + "/data/multi30k/";
    const auto text = attnmt::read_parallel({data + "train.de.gz", data + "train.en.gz", 1.0}, "train");
    for (size_t i = 0; i < 2000; ++i) {
      sentences.push_back(text.src[i]);
      sentences.push_back(text.tgt[i]);
    }
    attnmt::TokenizerConfig config;
    config.vocab_size = 1500;
    config.user_defined_symbols = user_defined_symbols;
    Tokenizer::train(sentences, (dir / "spm").string(), config, 1);
    tokenizer = std::make_shared<Tokenizer>((dir / "spm.model").string());
  }
  ~Fixture() { fs::remove_all(dir); }
};

size_t utf8_chars(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

TEST_CASE("BPE-dropout: p = 0 gives SentencePiece's segmentation, p > 0 spells the same text", "[data][tokenizer]") {
  Fixture f;
  const Tokenizer& t = *f.tokenizer;
  const BpeDropout none(t, 0.0, {});
  for (const auto& s : f.sentences) {
    const auto ids = t.encode(s);
    REQUIRE(none.apply(ids, 7) == ids);
  }
  double previous_ratio = 1.0;
  for (double p : {0.1, 0.3, 0.6}) {
    INFO("p " << p);
    const BpeDropout dropout(t, p, {});
    size_t before = 0, after = 0, changed = 0;
    for (size_t i = 0; i < f.sentences.size(); ++i) {
      const auto ids = t.encode(f.sentences[i]);
      const auto sampled = dropout.apply(ids, i);
      REQUIRE(t.decode(sampled) == t.decode(ids));
      REQUIRE(dropout.apply(ids, i) == sampled);  // the seed decides
      for (int id : sampled) REQUIRE(t.piece_is_normal(id));
      before += ids.size();
      after += sampled.size();
      changed += sampled != ids;
    }
    const double ratio = static_cast<double>(after) / static_cast<double>(before);
    CHECK(ratio > previous_ratio);
    CHECK(changed > f.sentences.size() / 2);
    previous_ratio = ratio;
  }
  // Nearly every merge skipped: one character per piece.
  const BpeDropout all(t, 0.999999, {});
  for (size_t i = 0; i < 200; ++i) {
    for (int id : all.apply(t.encode(f.sentences[i]), i)) REQUIRE(utf8_chars(t.piece(id)) == 1);
  }
}

TEST_CASE("BPE-dropout: one merge is skipped with probability p", "[data][tokenizer]") {
  Fixture f;
  const Tokenizer& t = *f.tokenizer;
  // "a" is "▁a" (one piece, made by one merge of "▁" and "a"): split with probability p.
  const auto ids = t.encode("a");
  REQUIRE(ids.size() == 1);
  REQUIRE(t.piece(ids[0]) == "\xE2\x96\x81" "a");
  const int n = 20000;
  for (double p : {0.1, 0.5}) {
    const BpeDropout dropout(t, p, {});
    int split = 0;
    for (int seed = 0; seed < n; ++seed) {
      const auto sampled = dropout.apply(ids, static_cast<uint64_t>(seed));
      REQUIRE((sampled == ids || sampled.size() == 2));
      split += sampled.size() == 2;
    }
    const double sd = std::sqrt(p * (1 - p) / n);
    CHECK(std::abs(static_cast<double>(split) / n - p) < 4 * sd);
  }
}

TEST_CASE("BPE-dropout: unknown pieces and user-defined symbols stay whole", "[data][tokenizer]") {
  Fixture f("<tag>");
  const Tokenizer& t = *f.tokenizer;
  const auto ids = t.encode("<tag> zwei Hunde \xE2\x98\x83 spielen");  // a snowman: not in the vocabulary
  const int tag = t.encode("<tag>").back();
  REQUIRE(t.piece(tag) == "<tag>");
  REQUIRE(std::count(ids.begin(), ids.end(), tag) == 1);
  REQUIRE(std::count(ids.begin(), ids.end(), Tokenizer::kUnk) == 1);
  const BpeDropout dropout(t, 0.999999, attnmt::split_symbols("<tag>"));
  const auto sampled = dropout.apply(ids, 3);
  CHECK(std::count(sampled.begin(), sampled.end(), tag) == 1);
  CHECK(std::count(sampled.begin(), sampled.end(), Tokenizer::kUnk) == 1);
  CHECK(sampled.size() > ids.size());
  CHECK(attnmt::split_symbols("a,,b,") == std::vector<std::string>{"a", "b"});
}

TEST_CASE("BPE-dropout: the keys take a probability below 1 and a SentencePiece BPE model", "[data][config]") {
  auto error_of = [](const std::string& yaml) {
    try {
      attnmt::parse_config(yaml, "cfg.yaml");
    } catch (const attnmt::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("data:\n  src_bpe_dropout: 0.1\n  tgt_bpe_dropout: 0.1\n").empty());
  CHECK_THAT(error_of("data:\n  src_bpe_dropout: 1\n"), Catch::Contains("data.src_bpe_dropout must be in [0, 1)"));
  CHECK_THAT(error_of("data:\n  tgt_bpe_dropout: -0.1\n"), Catch::Contains("data.tgt_bpe_dropout must be in [0, 1)"));
  CHECK_THAT(error_of("tokenizer:\n  model_type: unigram\ndata:\n  tgt_bpe_dropout: 0.1\n"),
             Catch::Contains("data.tgt_bpe_dropout must be 0 unless tokenizer.type is sentencepiece"));
  CHECK_THAT(error_of("tokenizer:\n  type: none\ndata:\n  src_bpe_dropout: 0.1\n"),
             Catch::Contains("data.src_bpe_dropout must be 0 unless"));
}
