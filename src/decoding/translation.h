// One translation of a line, as translate_lines (translator.h) returns it and MBR (mbr.h),
// the output formats (output.h) and the server read it.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace attnmt {

struct Translation {
  std::string text;                      // detokenized
  std::vector<std::string> src_pieces;   // source subwords (+ "</s>"), with return_pieces or attention
  std::vector<std::string> tgt_pieces;   // target subwords (+ "</s>" if finished), the same
  double score = 0;                     // log P / length penalty (+ coverage penalty); MBR: expected utility
  double log_prob = 0;                  // log P(Y|X), eos included when finished
  size_t target_tokens = 0;             // generated subwords, </s> included when finished
  std::vector<std::vector<float>> attention;  // [tgt_pieces][src_pieces], if requested
  bool constraints_met = true;          // holds every constraint of its line (LineGuides, translator.h)
};

}  // namespace attnmt
