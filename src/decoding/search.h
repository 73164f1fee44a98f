// Greedy and batched beam search over a StepModel (step_model.h). They know no concrete model.
// Beam search: Wu et al. (2016, GNMT, section 7) scoring,
//   score(Y) = log P(Y|X) / lp(Y) + cp(X; Y),  lp(Y) = ((5 + |Y|) / 6)^alpha,
//   cp = beta * sum_i log(min(sum_j p_{i,j}, 1)),
// with |Y| counting the end-of-sentence token. Hypotheses are ranked by log P while searching
// and by score once finished; a sentence is done when it has beam_size finished hypotheses or
// reaches its maximum length (then its live beams are finished as they are). Finished sentences
// leave the batch, so the batch shrinks as decoding proceeds.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "decoding/step_model.h"

namespace attnmt {

struct SearchOptions {
  int beam_size = 5;
  double length_penalty = 0.6;    // GNMT alpha; 0 = raw log-probability
  double coverage_penalty = 0.0;  // GNMT beta; 0 = off
  double max_length_ratio = 2.0;  // max target tokens = floor(ratio * source tokens) + 5
  int n_best = 1;
  bool return_attention = false;
};

struct Hypothesis {
  std::vector<int64_t> tokens;  // without bos/eos
  double score = 0;             // log P / lp + cp
  double log_prob = 0;          // log P(Y|X), eos included
  bool finished = true;         // false when cut at the maximum length
  std::vector<std::vector<float>> attention;  // [|tokens| + eos?][source length], if requested
};

// src [B, S] int64 on the model's device, lengths [B] int64. Returns B n-best lists, best first.
std::vector<std::vector<Hypothesis>> greedy_search(StepModel& model, const torch::Tensor& src,
                                                   const torch::Tensor& lengths, const SearchOptions& options);
std::vector<std::vector<Hypothesis>> beam_search(StepModel& model, const torch::Tensor& src,
                                                 const torch::Tensor& lengths, const SearchOptions& options);
// beam_size == 1 && n_best == 1 ? greedy : beam.
std::vector<std::vector<Hypothesis>> search(StepModel& model, const torch::Tensor& src,
                                            const torch::Tensor& lengths, const SearchOptions& options);

double gnmt_length_penalty(int64_t length, double alpha);

}  // namespace attnmt
