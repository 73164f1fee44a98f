// Text in, text out: tokenizes lines, decodes them in length-sorted batches with greedy or beam
// search, detokenizes, and returns the results in input order. Empty lines give empty output.
#pragma once
#include <string>
#include <vector>

#include "config/config.h"
#include "data/tokenizer.h"
#include "decoding/search.h"
#include "decoding/step_model.h"

namespace attnmt {

struct TranslateOptions {
  SearchOptions search;
  int batch_size = 64;
  int workers = 0;               // batches decoded at once, each in a thread of its own (0 = one per thread on CPU)
  int max_source_tokens = 1024;  // longer inputs are truncated (memory stays bounded); logged
};

struct Translation {
  std::string text;                      // detokenized
  std::vector<std::string> src_pieces;   // source subwords (+ "</s>")
  std::vector<std::string> tgt_pieces;   // target subwords (+ "</s>" if finished)
  double score = 0;
  size_t target_tokens = 0;             // generated subwords, </s> included when finished
  std::vector<std::vector<float>> attention;  // [tgt_pieces][src_pieces], if requested
};

// The decode.* section of a config as options (n-best, beam, penalties, length ratio, batch).
TranslateOptions translate_options(const DecodeConfig& decode);

// One n-best list per input line.
std::vector<std::vector<Translation>> translate_lines(StepModel& model, const Tokenizers& tokenizers,
                                                      const std::vector<std::string>& lines,
                                                      const TranslateOptions& options);

}  // namespace attnmt
