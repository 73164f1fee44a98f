// The rules that bar tokens at a search step, whatever the search: decode.min_length (no eos
// yet), decode.no_repeat_ngram_size (no n-gram twice) and a sentence's forced prefix. A barred
// token's log-probability becomes -inf; the others keep theirs (no renormalisation, as fairseq
// and OpenNMT-py do), so a hypothesis's score stays its log-probability under the model. A prefix
// with SentenceGuide::prefix_bias_beta > 0 is not forced but mixed into the distribution of the
// rows that have followed it so far (search_types.h).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>
#include <utility>

#include "decoding/search_types.h"

namespace attnmt {

class TokenRules {
 public:
  TokenRules(const SearchOptions& options, const Guides& guides, int64_t eos);
  // Whether a rule may bar a token at step t (t tokens generated so far); when not, search uses
  // the step's logits as they are.
  bool active(int64_t t) const;
  // log_probs [N, V] CPU float, contiguous: row n belongs to sentence sentence[n] and extends the
  // tokens history(n); column v is token vocabulary[v] (vocabulary may be null: column v is v).
  // Sets the barred entries to -inf.
  template <typename History>
  void apply(torch::Tensor& log_probs, int64_t t, const std::vector<int64_t>& sentence, History&& history,
             const int64_t* vocabulary) const {
    apply_at(log_probs, [t](int64_t) { return t; }, sentence, std::forward<History>(history), vocabulary);
  }
  // Whether a rule may bar a token of sentence `sentence`'s row at its step t: active(t) for that
  // sentence alone (a running batch's rows are at different steps: running_search.h).
  bool active_for(int64_t t, int64_t sentence) const;
  // apply() with each row n at its own step step_of(n).
  template <typename StepOf, typename History>
  void apply_at(torch::Tensor& log_probs, StepOf&& step_of, const std::vector<int64_t>& sentence, History&& history,
                const int64_t* vocabulary) const {
    for (int64_t n = 0; n < log_probs.size(0); ++n) {
      const int64_t t = step_of(n);
      const int64_t b = sentence[static_cast<size_t>(n)];
      const SentenceGuide* guide = b < static_cast<int64_t>(guides_.size()) ? &guides_[static_cast<size_t>(b)] : nullptr;
      const bool in_prefix = guide && t < static_cast<int64_t>(guide->prefix.size());
      if (in_prefix && guide->prefix_bias_beta > 0) {
        const std::vector<int64_t> h = history(n);
        if (follows(h, guide->prefix, t)) bias_row(log_probs, n, guide->prefix[static_cast<size_t>(t)], guide->prefix_bias_beta, vocabulary);
        apply_row(log_probs, n, t, nullptr, h, vocabulary);
      } else {
        apply_row(log_probs, n, t, in_prefix ? &guide->prefix : nullptr,
                  ngram_ > 0 ? history(n) : std::vector<int64_t>(), vocabulary);
      }
    }
  }
  // Whether `history` (t tokens) is prefix[0, t).
  static bool follows(const std::vector<int64_t>& history, const std::vector<int64_t>& prefix, int64_t t);
  // Row `row` of log_probs (log-probabilities) becomes log((1 - beta) P + beta [v == token]).
  static void bias_row(torch::Tensor& log_probs, int64_t row, int64_t token, double beta, const int64_t* vocabulary);
  // The tokens that would repeat an n-gram of `tokens` (n = no_repeat_ngram_size) if appended.
  static std::vector<int64_t> repeating_tokens(const std::vector<int64_t>& tokens, int n);

 private:
  void apply_row(torch::Tensor& log_probs, int64_t row, int64_t t, const std::vector<int64_t>* prefix,
                 const std::vector<int64_t>& history, const int64_t* vocabulary) const;
  int min_length_, ngram_;
  size_t longest_prefix_ = 0;
  const Guides& guides_;
  int64_t eos_;
};

}  // namespace attnmt
