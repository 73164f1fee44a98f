// Local attention, predictive alignment "local-p" (Luong et al., 2015, section 3.2, eq. 9-10):
//   p_t = S_b * sigmoid(v_p^T tanh(W_p q_t))   a real position in [0, S_b],
//   align_t = masked_softmax of score(q_t, h_.) over the window |i - p_t| <= D of real positions,
//   alpha_{t,i} = align_{t,i} * exp(-(i - p_t)^2 / (2 sigma^2)),  sigma = D / 2,
//   c_t = sum_i alpha_{t,i} h_i.
// As in the paper the Gaussian-weighted alpha is not renormalised, so it sums to less than 1.
// p_t is differentiable (through the Gaussian), so v_p and W_p learn where to look. Choices: the
// window is taken around the real p_t (not its rounding), 0-based positions, and W_p has no bias
// (eq. 9). The window always holds a real position because D >= 1 and p_t is at most one
// position past the last real one.
#pragma once
#include "attention/attention.h"
#include "attention/score.h"
#include "config/config.h"

namespace attnmt {

class LocalPAttention : public ScoredAttention {
 public:
  LocalPAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;
  // p_t [B] for a query [B, Dq] (exposed for tests and inspection).
  torch::Tensor predict_position(const torch::Tensor& query, const AttentionMemory& memory);

 private:
  int64_t window_;
  torch::nn::Linear w_p_{nullptr};  // Dq -> A, no bias
  torch::Tensor v_p_;               // [A]
};

}  // namespace attnmt
