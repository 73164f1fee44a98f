// tokenizer.type none (data/word_vocab.h): the vocabulary of text already tokenized.
#include <catch2/catch.hpp>

#include <filesystem>
#include <unistd.h>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "util/error.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using attnmt::Tokenizer;

TEST_CASE("word vocabulary: the most frequent tokens, whitespace-split, joined by one space", "[tokenizer]") {
  const auto dir = fs::temp_directory_path() / ("attnmt_word_vocab_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  attnmt::TokenizerConfig config;
  config.type = attnmt::TokenizerType::none;
  config.vocab_size = 7;  // the 4 special ids + 3 tokens
  // counts: the 4, a@@ 3, dog 2, cat 2 (tie: byte order keeps "cat"), sat 1
  const std::vector<std::string> text{"the a@@ dog", "the\tcat  sat ", "the a@@ cat", "the a@@ dog", ""};
  Tokenizer::train(text, (dir / "w").string(), config, 1);
  Tokenizer t((dir / "w.model").string());
  CHECK(t.type() == attnmt::TokenizerType::none);
  CHECK(t.vocab_size() == 7);
  CHECK(t.piece(4) == "the");
  CHECK(t.piece(5) == "a@@");
  CHECK(t.piece(6) == "cat");
  CHECK(attnmt::read_file((dir / "w.vocab").string()).find("the\t4\n") != std::string::npos);

  CHECK(t.encode(" the  cat\tdog ") == std::vector<int>{4, 6, Tokenizer::kUnk});
  CHECK(t.encode_pieces("the dog") == std::vector<std::string>{"the", "dog"});
  const auto spans = t.encode_with_offsets("the  cat");
  REQUIRE(spans.size() == 2);
  CHECK(spans[1].id == 6);
  CHECK(spans[1].begin == 5);
  CHECK(spans[1].end == 8);
  CHECK(t.decode({Tokenizer::kBos, 4, 5, 6, Tokenizer::kUnk, Tokenizer::kEos}) == "the a@@ cat <unk>");

  // Model files store it as bytes; they load back as the same vocabulary.
  const auto again = Tokenizer::from_bytes(t.serialized(), "test");
  CHECK(again.type() == attnmt::TokenizerType::none);
  CHECK(again.encode("the cat") == t.encode("the cat"));
  // A damaged vocabulary is refused with a message.
  CHECK_THROWS_AS(Tokenizer::from_bytes("attnmt-word-vocab 1\n<pad>\n<unk>\n", "test"), attnmt::InputError);
  CHECK_THROWS_WITH(Tokenizer::from_bytes("attnmt-word-vocab 1\n<pad>\n<unk>\n<s>\n</s>\nx\nx\n", "bad.pt"),
                    Catch::Contains("bad.pt") && Catch::Contains("'x' twice"));
  fs::remove_all(dir);
}
