// What search is asked and what it returns (search.h runs it): the options, the per-sentence
// guides, the hypotheses, and the two rules every search algorithm shares: the maximum output
// length and GNMT's length penalty (Wu et al., 2016, section 7).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace attnmt {

// The defaults are decode:'s (config.h), which translate_options (translator.h) copies in.
struct SearchOptions {
  SearchRules rules = decode_defaults().search_rules;  // whose rules (util/choices.h)
  int beam_size = decode_defaults().beam_size;
  double length_penalty = decode_defaults().length_penalty;      // GNMT alpha; 0 = raw log-probability
  double coverage_penalty = decode_defaults().coverage_penalty;  // GNMT beta; 0 = off
  // max target tokens = floor(ratio * source tokens) + 5 (rules attnmt and opennmt3; see max_length)
  double max_length_ratio = decode_defaults().max_length_ratio;
  int n_best = decode_defaults().n_best;  // hypotheses returned per sentence (sampling: samples drawn)
  bool return_attention = false;
  int min_length = decode_defaults().min_length;  // no eos before this many target tokens
  // At most this many target tokens (0 = only the ratio's limit); opennmt / joeynmt rules: the
  // only limit, eos counted (0: opennmt refuses it, joeynmt takes Joey's 1.5 x source); opennmt3:
  // with the ratio's, as OpenNMT-py 3.x's min(max_length, ratio * source + 5), eos counted (> 0).
  int max_length = decode_defaults().max_length;
  bool ban_unk = decode_defaults().ban_unk;  // opennmt / joeynmt rules: the unknown word is never chosen
  double unk_penalty = decode_defaults().unk_penalty;  // fairseq rules: subtracted from <unk>'s log-probability
  double word_penalty = decode_defaults().word_penalty;  // marian rules: subtracted per target token
  int no_repeat_ngram_size = decode_defaults().no_repeat_ngram_size;  // 0 = off
  bool sampling = decode_defaults().sampling;
  double temperature = decode_defaults().temperature;
  int top_k = decode_defaults().top_k;  // 0 = all
  double top_p = decode_defaults().top_p;
  double epsilon = decode_defaults().epsilon;  // sampling: tokens of model probability < epsilon are not drawn
  uint64_t seed = decode_defaults().seed;
};

// Told, at every step of a sentence's search, the target tokens decided so far: those that every
// hypothesis that can still be chosen begins with (greedy: its tokens; beam search: the common
// prefix of the live beams and of the hypotheses finished so far). Returning false stops the
// sentence's search: it leaves the batch at once, with no hypothesis.
using DecidedWatch = std::function<bool(const std::vector<int64_t>& decided)>;

// What search is given for each sentence of a batch besides its source.
struct SentenceGuide {
  std::vector<int64_t> prefix;  // target tokens forced first, then search goes on (no eos)
  // In [0, 1): 0 forces the prefix; above, search is only biased towards it, as CTranslate2's
  // prefix_bias_beta: at step t < |prefix|, a hypothesis that has followed the prefix so far
  // scores token v by log((1 - beta) P(v) + beta [v == prefix[t]]); one that has left it is not
  // biased again. Scores and log-probs are then the biased ones.
  double prefix_bias_beta = 0;
  // Phrases every output must contain (lexically constrained decoding, constraints.h).
  std::vector<std::vector<int64_t>> constraints;
  uint64_t id = 0;              // the sentence's number in its input: seeds its samples
  // Greedy and beam search under attnmt's rules call it (search() refuses it with others).
  DecidedWatch watch;
};

struct Hypothesis {
  std::vector<int64_t> tokens;  // without bos/eos
  double score = 0;             // log P / lp + cp
  double log_prob = 0;          // log P(Y|X), eos included
  bool finished = true;         // false when cut at the maximum length
  std::vector<std::vector<float>> attention;  // [|tokens| + eos?][source length], if requested
  bool constraints_met = true;  // every constraint of its sentence is in tokens
};

using Guides = std::vector<SentenceGuide>;

// The most target tokens of a sentence of src_len source tokens (eos not counted):
// floor(ratio * src_len) + 5, and at most max_length when max_length > 0.
int64_t max_target_length(int64_t src_len, const SearchOptions& options);

// ((5 + length) / 6)^alpha; 1 for alpha 0.
double gnmt_length_penalty(int64_t length, double alpha);

}  // namespace attnmt
