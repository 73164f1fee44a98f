// Small pieces that the searches (search.cpp, sampling.cpp, constraints.cpp) share.
#pragma once
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "decoding/search_types.h"
#include "decoding/step_model.h"

namespace attnmt {

inline std::vector<int64_t> to_vector(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU, torch::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

inline torch::Tensor index_tensor(const std::vector<int64_t>& v, torch::Device device) {
  return torch::tensor(v, torch::kLong).to(device);
}

// Row `row` of a CPU float tensor [N, S], cut to the sentence's real length.
inline std::vector<float> attention_row(const torch::Tensor& att_cpu, int64_t row, int64_t length) {
  auto r = att_cpu[row];
  const float* p = r.data_ptr<float>();
  return {p, p + length};
}

// GNMT coverage penalty of one hypothesis from its attention sums over real source positions.
inline double coverage_score(const torch::Tensor& coverage_row, double beta) {
  auto cov = coverage_row.clamp(1e-20, 1.0);
  return beta * cov.log().sum().item<double>();
}

// The step's scores as log-probabilities on the CPU (float, contiguous, a copy of their own) for
// the token rules to bar tokens in.
inline torch::Tensor ruled_log_probs(const StepResult& r) {
  auto x = r.logits.to(torch::kCPU, torch::kFloat);
  return r.log_probs ? x.clone().contiguous() : x.log_softmax(-1).contiguous();
}

}  // namespace attnmt

namespace attnmt {

// Beam search's state follows the next step's rows: when every sentence stays, rows only move
// among their own sentence's (reorder_beams, source memory left in place), else index_select.
inline void select_beam_rows(SearchState& state, const std::vector<int64_t>& rows, bool same_sentences,
                             torch::Device device) {
  const auto index = index_tensor(rows, device);
  if (same_sentences) {
    state.reorder_beams(index);
  } else {
    state.index_select(index);
  }
}

// The longest prefix that every sequence of `sequences` begins with (the tokens a watched
// sentence has decided: search_types.h's DecidedWatch).
inline std::vector<int64_t> common_prefix(const std::vector<std::vector<int64_t>>& sequences) {
  if (sequences.empty()) return {};
  std::vector<int64_t> prefix = sequences[0];
  for (const auto& s : sequences) {
    const auto end = std::mismatch(prefix.begin(), prefix.end(), s.begin(), s.end()).first;
    prefix.erase(end, prefix.end());
  }
  return prefix;
}

// Each sentence's n_best finished hypotheses, best first: those that hold their constraints
// before those that do not (constraints.h; without constraints every one holds them), then by score.
inline std::vector<std::vector<Hypothesis>> best_finished(std::vector<std::vector<Hypothesis>>& finished, int n_best) {
  std::vector<std::vector<Hypothesis>> out(finished.size());
  for (size_t b = 0; b < finished.size(); ++b) {
    auto& f = finished[b];
    std::stable_sort(f.begin(), f.end(), [](const Hypothesis& x, const Hypothesis& y) {
      return x.constraints_met != y.constraints_met ? x.constraints_met : x.score > y.score;
    });
    const size_t n = std::min<size_t>(f.size(), static_cast<size_t>(n_best));
    out[b].assign(std::make_move_iterator(f.begin()), std::make_move_iterator(f.begin() + static_cast<std::ptrdiff_t>(n)));
  }
  return out;
}

// A hypothesis's score without the coverage penalty: log P / lp(|Y| + 1), GNMT's length penalty
// counting the end of sentence.
inline double length_normalised(const Hypothesis& h, double alpha) {
  return h.log_prob / gnmt_length_penalty(static_cast<int64_t>(h.tokens.size()) + 1, alpha);
}

// Beam search's start: each of the B sentences' rows repeated K times (row b*K + k from row b).
inline void expand_to_beams(SearchState& state, int64_t B, int64_t K, torch::Device device) {
  std::vector<int64_t> expand;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k) expand.push_back(b);
  state.expand_beams(index_tensor(expand, device), K);
}

// Beam search's attention bookkeeping: each step's weights on the CPU (for the hypotheses'
// attention rows, with return_attention) and each row's running sum (for the coverage penalty).
class AttentionTrack {
 public:
  AttentionTrack(const SearchOptions& options, const std::vector<int64_t>& src_len)
      : options_(options), src_len_(src_len) {}
  // Whether search must ask the model for its attention.
  bool wanted() const { return options_.return_attention || options_.coverage_penalty != 0.0; }
  void add_step(const torch::Tensor& attention) {  // [rows, S]
    if (!wanted()) return;
    att_ = attention.to(torch::kCPU, torch::kFloat).contiguous();
    coverage_ = coverage_.defined() ? coverage_ + att_ : att_.clone();
  }
  // This step's attention of `row` (of `sentence`), cut to the source length; empty unless kept.
  std::vector<float> row(int64_t row, int64_t sentence) const {
    return options_.return_attention ? attention_row(att_, row, src_len_[static_cast<size_t>(sentence)])
                                     : std::vector<float>();
  }
  // A hypothesis's GNMT score, finished at `row`: log P / lp(|Y| + 1) + the coverage penalty.
  double score(const Hypothesis& h, int64_t row, int64_t sentence) const {
    double score = length_normalised(h, options_.length_penalty);
    if (options_.coverage_penalty != 0.0) {
      score += coverage_score(coverage_[row].slice(0, 0, src_len_[static_cast<size_t>(sentence)]),
                              options_.coverage_penalty);
    }
    return score;
  }
  // The next step's rows come from these rows.
  void select_rows(const std::vector<int64_t>& rows) {
    if (coverage_.defined()) coverage_ = coverage_.index_select(0, torch::tensor(rows, torch::kLong));
  }

 private:
  const SearchOptions& options_;
  const std::vector<int64_t>& src_len_;
  torch::Tensor att_;       // [rows, S] this step's weights
  torch::Tensor coverage_;  // [rows, S] the sum of each row's weights so far
};

}  // namespace attnmt
