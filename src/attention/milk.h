// Monotonic infinite lookback attention, MILk (Arivazhagan et al., 2019, "Monotonic Infinite
// Lookback Attention for Simultaneous Machine Translation", section 3): the monotonic head of
// monotonic.h picks where to stop, then a soft attention over every state from the first up to
// the stop gives the context, MoChA (chunkwise.h) with the chunk reaching back to the start:
//   u_{t,k}    = v^T tanh(W q_t + U h_k + b)                   (the soft energy, unnormalised)
//   alpha_t    = the monotonic alignment (monotonic.h: expected in training, hard when decoding)
//   beta_{t,k} = sum_{j>=k} alpha_{t,j} exp(u_{t,k}) / sum_{l<=j} exp(u_{t,l})   (eq. 5)
//   c_t        = sum_k beta_{t,k} h_k
// Computed in O(S): with D_j = sum_{l<=j} exp(u_{t,l}) (a cumulative sum), beta_{t,k} =
// exp(u_{t,k}) * sum_{j>=k} alpha_{t,j} / D_j (a cumulative sum from the right); exp(u) after
// subtracting the largest u the stop can reach (reachable_exp), 0 beyond it. With a one-hot alpha_t
// (hard decoding, stop at j) beta_t is the softmax of u_t over positions 1..j; with alpha_t = 0 it
// is 0, and c_t = 0. The state is alpha_{t-1}; the returned weights are beta. Its hard head reads
// no state right of where it stops, so it decodes a stream (decoding/streaming.h) with every state
// read so far in reach.
//
// Latency-augmented training (section 3.3; model.attention.latency_loss = lambda > 0): the loss
// gains lambda * sum over sentences of DAL (Differentiable Average Lagging, eq. 7-8) of the head's
// expected delays. Target step t's delay is the source position (1-based) where the head stops,
//   g_t = sum_j j alpha_{t,j} + (1 - sum_j alpha_{t,j}) |x|
// (the mass that stops nowhere reads the whole source, |x| with its end of sentence), and
//   g'_1 = g_1,  g'_t = max(g_t, g'_{t-1} + 1/gamma),  gamma = |y| / |x|,
//   DAL = (1/|y|) sum_{t=1}^{|y|} (g'_t - (t-1)/gamma),
// |y| the sentence's real target steps (its end of sentence counted).
#pragma once
#include "attention/chunkwise.h"

namespace attnmt {

// chunkwise.h's head, energy and context with the chunk reaching the start (its chunk_size unread).
class MilkAttention : public ChunkwiseAttention {
 public:
  MilkAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;
  torch::Tensor take_auxiliary_loss(const torch::Tensor& sentence_log_likelihood,
                                    const torch::Tensor& target_lengths) override;

 protected:
  torch::Tensor soft_weights(const torch::Tensor& alpha, const torch::Tensor& energies,
                             const torch::Tensor& mask) const override;

 private:
  double latency_weight_;
  // Per decoder step since the last take_auxiliary_loss() (training): g_t [B]; and |x| [B].
  std::vector<torch::Tensor> delays_;
  torch::Tensor source_lengths_;
};

// DAL [B] of expected delays g [B, T] (1-based source positions) for sources of |x| [B] tokens and
// targets of |y| [B] real steps (steps t >= |y| are padding), as above.
torch::Tensor differentiable_average_lagging(const torch::Tensor& delays, const torch::Tensor& source_lengths,
                                             const torch::Tensor& target_lengths);

// beta [B, S] of eq. 5 from alpha [B, S], the soft energies u [B, S] and mask [B, S] (bool).
torch::Tensor milk_weights(const torch::Tensor& alpha, const torch::Tensor& energies, const torch::Tensor& mask);

}  // namespace attnmt
