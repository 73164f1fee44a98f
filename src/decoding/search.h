// Greedy and batched beam search over a StepModel (step_model.h), and search(), which picks the
// algorithm; their options and results are search_types.h's. They know no concrete model.
// Beam search: Wu et al. (2016, GNMT, section 7) scoring,
//   score(Y) = log P(Y|X) / lp(Y) + cp(X; Y),  lp(Y) = ((5 + |Y|) / 6)^alpha,
//   cp = beta * sum_i log(min(sum_j p_{i,j}, 1)),
// with |Y| counting the end-of-sentence token. Hypotheses are ranked by log P while searching
// and by score once finished; a sentence is done when it has beam_size finished hypotheses or
// reaches its maximum length (then its live beams are finished as they are). Finished sentences
// leave the batch, so the batch shrinks as decoding proceeds.
// Sampling draws each token from the step's (tempered, top-k/top-p cut) distribution instead.
// With constraints (a phrase list per sentence), beam search allocates its beam dynamically
// (constraints.h). All follow the token rules (token_rules.h): min_length, no_repeat_ngram_size, a prefix.
// With options.rules opennmt or joeynmt, search() follows those toolkits' rules instead
// (toolkit_search.h), for the models converted from them.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "decoding/search_types.h"
#include "decoding/step_model.h"

namespace attnmt {

// src [B, S] int64 on the model's device, lengths [B] int64; guides: empty, or one per sentence.
// Returns B n-best lists, best first.
std::vector<std::vector<Hypothesis>> greedy_search(StepModel& model, const torch::Tensor& src,
                                                   const torch::Tensor& lengths, const SearchOptions& options,
                                                   const Guides& guides = {});
std::vector<std::vector<Hypothesis>> beam_search(StepModel& model, const torch::Tensor& src,
                                                 const torch::Tensor& lengths, const SearchOptions& options,
                                                 const Guides& guides = {});
// n_best samples per sentence (decoding/sampling.cpp).
std::vector<std::vector<Hypothesis>> sampling_search(StepModel& model, const torch::Tensor& src,
                                                     const torch::Tensor& lengths, const SearchOptions& options,
                                                     const Guides& guides = {});
// rules opennmt / joeynmt ? toolkit_search (toolkit_search.h) : sampling ? sampling :
// constraints ? constrained beam (constraints.h) : beam_size == 1 && n_best == 1 ? greedy : beam.
std::vector<std::vector<Hypothesis>> search(StepModel& model, const torch::Tensor& src,
                                            const torch::Tensor& lengths, const SearchOptions& options,
                                            const Guides& guides = {});

}  // namespace attnmt
