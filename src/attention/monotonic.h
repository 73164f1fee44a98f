// Monotonic attention (Raffel et al., 2017, "Online and Linear-Time Attention by Enforcing
// Monotonic Alignments", sections 2.2-2.5):
//   energy_{t,i} = g (v / ||v||)^T tanh(W q_t + U h_i + b) + r,   p_{t,i} = sigmoid(energy_{t,i}),
// p = 0 on padding. Training (and decoding with model.attention.hard_decode: false) uses the soft
// expected alignment
//   alpha_t = p_t * cumprod_excl(1 - p_t) * cumsum(alpha_{t-1} / cumprod_excl(1 - p_t)),
// alpha_0 = one-hot at the first position, with N(0, 1) noise added to the energies while
// training (section 2.5). It sums to at most 1: the rest is the probability of attending nowhere.
// The closed form is evaluated in log space (cumsum of log(1 - p), logcumsumexp), which is exact
// where the paper's clamp of the cumulative product to [1e-10, 1] loses the alignment (see the
// .cpp). Decoding with hard_decode (the default) is the paper's algorithm 1: from the index
// attended at the previous step, move right to the first real position with p_{t,i} >= 0.5 and
// attend only to it (one-hot weights); if there is none, c_t = 0 and every later step attends
// nowhere, so the attention never moves left. The state is the previous alignment [B, S]
// (reordered with the beams). Choices: r starts at score_bias_init (-4; without a negative bias it collapses onto
// the first position), g at 1/sqrt(A); U h_i is projected once per batch.
#pragma once
#include "attention/attention.h"
#include "config/config.h"

namespace attnmt {

class MonotonicAttention : public Attention {
 public:
  MonotonicAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask) override;
  AttentionState initial_state(const AttentionMemory& memory) const override;
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;
  // p_t [B, S] (0 on padding), without training noise.
  torch::Tensor selection_probabilities(const torch::Tensor& query, const AttentionMemory& memory);

 protected:
  // alpha_t [B, S] from alpha_{t-1} [B, S]: the expected alignment (training, or hard_decode off)
  // or the hard stop (one-hot, or all zero once nothing is left to stop at).
  torch::Tensor alignment(const torch::Tensor& query, const AttentionMemory& memory, const torch::Tensor& previous);

 private:
  torch::Tensor energy(const torch::Tensor& query, const AttentionMemory& memory);
  bool hard_decode_;
  torch::nn::Linear w_{nullptr};  // Dq -> A, with the bias b
  torch::nn::Linear u_{nullptr};  // Dm -> A, no bias
  torch::Tensor v_, g_, r_;       // [A], [1], [1]
};

// The closed form of the expected alignment above: p [B, S], previous [B, S] -> alpha_t [B, S].
torch::Tensor monotonic_expected_alignment(const torch::Tensor& p, const torch::Tensor& previous);

}  // namespace attnmt
