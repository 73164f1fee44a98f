// Greedy and batched beam search over a StepModel (step_model.h). They know no concrete model.
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

#include "decoding/step_model.h"

namespace attnmt {

// Whose beam and greedy search rules search() follows (decode.search_rules).
enum class SearchRules {
  attnmt,   // this file's
  opennmt,  // OpenNMT-py 2.3's BeamSearch (toolkit_search.h)
  joeynmt,  // Joey NMT 2.3's beam_search and recurrent_greedy (toolkit_search.h)
};

struct SearchOptions {
  SearchRules rules = SearchRules::attnmt;
  int beam_size = 5;
  double length_penalty = 0.6;    // GNMT alpha; 0 = raw log-probability
  double coverage_penalty = 0.0;  // GNMT beta; 0 = off
  double max_length_ratio = 2.0;  // max target tokens = floor(ratio * source tokens) + 5
  int n_best = 1;                 // hypotheses returned per sentence (sampling: samples drawn)
  bool return_attention = false;
  int min_length = 0;             // no eos before this many target tokens
  int max_length = 0;             // at most this many target tokens (0 = only the ratio's limit)
                                  // (opennmt / joeynmt rules: the only limit, eos counted;
                                  // 0: opennmt refuses it, joeynmt takes Joey's 1.5 x source)
  bool ban_unk = false;           // opennmt / joeynmt rules: the unknown word is never chosen
  int no_repeat_ngram_size = 0;   // 0 = off
  bool sampling = false;
  double temperature = 1.0;
  int top_k = 0;                  // 0 = all
  double top_p = 1.0;
  double epsilon = 0.0;           // sampling: tokens of model probability < epsilon are not drawn
  uint64_t seed = 1;
};

// What search is given for each sentence of a batch besides its source.
struct SentenceGuide {
  std::vector<int64_t> prefix;  // target tokens forced first, then search goes on (no eos)
  // Phrases every output must contain (lexically constrained decoding, constraints.h).
  std::vector<std::vector<int64_t>> constraints;
  uint64_t id = 0;              // the sentence's number in its input: seeds its samples
};

struct Hypothesis {
  std::vector<int64_t> tokens;  // without bos/eos
  double score = 0;             // log P / lp + cp
  double log_prob = 0;          // log P(Y|X), eos included
  bool finished = true;         // false when cut at the maximum length
  std::vector<std::vector<float>> attention;  // [|tokens| + eos?][source length], if requested
  bool constraints_met = true;  // every constraint of its sentence is in tokens
};

// src [B, S] int64 on the model's device, lengths [B] int64; guides: empty, or one per sentence.
// Returns B n-best lists, best first.
using Guides = std::vector<SentenceGuide>;
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

// The most target tokens of a sentence of src_len source tokens (eos not counted):
// floor(ratio * src_len) + 5, and at most max_length when max_length > 0.
int64_t max_target_length(int64_t src_len, const SearchOptions& options);

double gnmt_length_penalty(int64_t length, double alpha);

}  // namespace attnmt
