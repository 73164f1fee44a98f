// libFuzzer target: the translate input path up to the model: the input file read and checked
// like `attnmt translate` reads it, every line encoded by a SentencePiece model (trained at start
// from tests/data), the pieces looked up and the ids decoded back. Bad input must be an
// InputError; encoding and decoding must never fail on text that passed the checks.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "config/config.h"
#include "data/tokenizer.h"
#include "util/error.h"
#include "util/text_io.h"

namespace {
std::unique_ptr<attnmt::Tokenizer> g_tokenizer;
std::string g_input;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string data = ATTNMT_TEST_DATA_DIR;
  auto sentences = attnmt::read_lines(data + "/tiny.de");
  for (auto& l : attnmt::read_lines(data + "/tiny.en")) sentences.push_back(l);
  const std::string prefix = "/tmp/attnmt_fuzz_spm_" + std::to_string(::getpid());
  attnmt::TokenizerConfig config;
  config.vocab_size = 300;
  attnmt::Tokenizer::train(sentences, prefix, config, 1);
  g_tokenizer = std::make_unique<attnmt::Tokenizer>(prefix + ".model");
  g_input = prefix + ".input";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::ofstream(g_input, std::ios::binary) << std::string(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> lines;
  try {
    lines = attnmt::read_lines(g_input);
  } catch (const attnmt::InputError&) {
    return 0;
  }
  for (const auto& line : lines) {
    const auto ids = g_tokenizer->encode(line);
    for (int id : ids) (void)g_tokenizer->piece(id);
    (void)g_tokenizer->decode(ids);
    (void)g_tokenizer->encode_pieces(line);
  }
  return 0;
}
