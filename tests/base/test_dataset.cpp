// data/examples.h's encode_dataset: the corpus encoded on several threads is the one-thread
// dataset, example for example (ids, line numbers, what was skipped and why).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "data/examples.h"
#include "data/tokenizer.h"

namespace fs = std::filesystem;
using attnmt::Tokenizer;

TEST_CASE("dataset: encoding on several threads gives the one-thread dataset", "[data]") {
  const auto dir = fs::temp_directory_path() / ("attnmt_dataset_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  attnmt::TokenizerConfig config;
  config.type = attnmt::TokenizerType::none;
  config.vocab_size = 40;
  attnmt::ParallelText text;
  // 5,000 pairs of 0-12 words: some empty (skipped as empty), some over 10 words (too long).
  for (int i = 0; i < 5000; ++i) {
    std::string src, tgt;
    for (int w = 0; w < (i * 7) % 13; ++w) src += "s" + std::to_string((i + w) % 50) + " ";
    for (int w = 0; w < (i * 5) % 12; ++w) tgt += "t" + std::to_string((i * w) % 50) + " ";
    text.src.push_back(src);
    text.tgt.push_back(tgt);
  }
  std::vector<std::string> both(text.src);
  both.insert(both.end(), text.tgt.begin(), text.tgt.end());
  Tokenizer::train(both, (dir / "w").string(), config, 1);
  auto tokenizer = std::make_shared<Tokenizer>((dir / "w.model").string());
  const attnmt::Tokenizers tokenizers{tokenizer, tokenizer};

  const auto one = attnmt::encode_dataset(text, tokenizers, 10, 1);
  CHECK(one.skipped_empty > 0);
  CHECK(one.skipped_long > 0);
  CHECK(one.examples.size() + one.skipped_empty + one.skipped_long == text.src.size());
  for (int threads : {2, 3, 0}) {
    const auto many = attnmt::encode_dataset(text, tokenizers, 10, threads);
    INFO("threads " << threads);
    CHECK(many.skipped_empty == one.skipped_empty);
    CHECK(many.skipped_long == one.skipped_long);
    REQUIRE(many.examples.size() == one.examples.size());
    for (size_t i = 0; i < one.examples.size(); ++i) {
      REQUIRE(many.examples[i].line == one.examples[i].line);
      REQUIRE(many.examples[i].src == one.examples[i].src);
      REQUIRE(many.examples[i].tgt == one.examples[i].tgt);
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("SentencePiece trains on a seeded sample of tokenizer.input_sentence_size lines", "[data][tokenizer]") {
  const auto dir = fs::temp_directory_path() / ("attnmt_sample_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  attnmt::ParallelText text;
  for (int i = 0; i < 1500; ++i) {  // words that come and go along the corpus
    std::string src, tgt;
    for (int w = 0; w < 8; ++w) src += "wort" + std::to_string((i / 10 + w * 37) % 300) + " ";
    for (int w = 0; w < 8; ++w) tgt += "word" + std::to_string((i / 7 + w * 53) % 300) + " ";
    text.src.push_back(src);
    text.tgt.push_back(tgt);
  }
  attnmt::TokenizerConfig config;
  config.vocab_size = 300;
  auto train = [&](const std::string& name, int sample, uint64_t seed) {
    config.input_sentence_size = sample;
    fs::create_directories(dir / name);
    return attnmt::load_or_train_tokenizers(config, (dir / name).string(), &text, seed).src;
  };
  const auto all = train("all", 0, 1);
  CHECK(train("all_big_sample", 3000, 1)->same_vocabulary(*all));  // 3,000 lines in all: no sample
  const auto a = train("a", 200, 1);
  CHECK(train("a_again", 200, 1)->same_vocabulary(*a));  // the seed decides the sample
  CHECK_FALSE(a->same_vocabulary(*all));
  CHECK_FALSE(train("b", 200, 2)->same_vocabulary(*a));
  // Read from the files as streams (what training does): the same lines, the same sample.
  attnmt::CorpusConfig corpus{(dir / "train.src").string(), (dir / "train.tgt").string(), 1.0};
  for (const auto& [path, lines] : {std::pair{corpus.src, &text.src}, std::pair{corpus.tgt, &text.tgt}}) {
    std::ofstream out(path);
    for (const auto& l : *lines) out << l << "\n";
  }
  auto train_files = [&](const std::string& name, int sample, uint64_t seed) {
    config.input_sentence_size = sample;
    return attnmt::load_or_train_tokenizers(config, (dir / name).string(), std::vector{corpus}, seed).src;
  };
  CHECK(train_files("files_a", 200, 1)->same_vocabulary(*a));
  CHECK(train_files("files_all", 0, 1)->same_vocabulary(*all));
  fs::remove_all(dir);
}
