// Forward attention with a transition agent (Zhang et al., 2018, "Forward Attention in
// Sequence-to-Sequence Acoustic Modeling for Speech Synthesis", algorithms 1-2):
//   y_t = masked_softmax(score(q_t, h_.)),  alpha_0 = one-hot at the first position, u_0 = 0.5,
//   alpha^_t(i) = ((1 - u_{t-1}) alpha_{t-1}(i) + u_{t-1} alpha_{t-1}(i - 1)) * y_t(i),
//   alpha_t = alpha^_t / sum_i alpha^_t(i),  c_t = sum_i alpha_t(i) h_i,
//   u_t = sigmoid(MLP([c_t; q_t]))  (the transition agent: one tanh layer of size A, then 1 unit).
// The alignment moves at most one source position per target step, so it suits monotone data
// whose target is at least as long as its source (speech synthesis); on translation, where the
// target is often shorter, it cannot reach the end of the source. The state is (alpha_{t-1},
// u_{t-1}), reordered with the beams. Choices: the normalisation is done in log space
// (alpha_t = softmax(log transition + log y_t) over the positions the transition reaches), which
// is exact where the paper adds an epsilon, and stays finite where a product of small
// probabilities would underflow (training diverged within 10 steps without it); the transition
// term is floored at 1e-30 inside the log and u is clamped to [1e-6, 1 - 1e-6].
#pragma once
#include "attention/attention.h"
#include "attention/score.h"
#include "config/config.h"

namespace attnmt {

class ForwardAttention : public ScoredAttention {
 public:
  ForwardAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionState initial_state(const AttentionMemory& memory) const override;
  // alpha_{t-1} grows with the memory; u_{t-1} [B, 1] is per row, not per position.
  AttentionState grow_state(const AttentionState& state, int64_t rows) const override;
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;

 private:
  torch::nn::Linear agent_hidden_{nullptr}, agent_out_{nullptr};
};

}  // namespace attnmt
