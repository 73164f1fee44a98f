// Monotonic chunkwise attention, MoChA (Chiu & Raffel, 2018, "Monotonic Chunkwise Attention",
// sections 2.2-2.3): the monotonic head of monotonic.h picks where to stop, then a soft attention
// over the chunk of w = model.attention.chunk_size states ending there gives the context:
//   u_{t,k}    = v^T tanh(W q_t + U h_k + b)                 (ChunkEnergy: concat, unnormalised)
//   alpha_t    = the monotonic alignment (monotonic.h: expected in training, hard when decoding)
//   beta_{t,k} = sum_{j=k}^{k+w-1} alpha_{t,j} exp(u_{t,k}) / sum_{l=j-w+1}^{j} exp(u_{t,l})   (eq. 13)
//   c_t        = sum_k beta_{t,k} h_k
// Both sums run over real positions (the chunk is cut at the sentence's start). With a one-hot
// alpha_t (hard decoding, stop at j) beta_t is the softmax of u_t over positions j-w+1..j, 0
// elsewhere; with alpha_t = 0 (nothing left to stop at) beta_t and c_t are 0. Training and soft
// decoding use the expected alpha_t, so sum_k beta_{t,k} = sum_j alpha_{t,j} <= 1. The two moving
// sums are windows over a padded row (exact, O(S w)); exp(u) is taken after subtracting the largest
// u the stop can reach (reachable_exp). The state is alpha_{t-1} (not beta), as the monotonic head
// needs; the returned weights are beta. Its hard head reads no state right of where it stops, so it
// decodes a stream (decoding/streaming.h).
#pragma once
#include "attention/monotonic.h"
#include "attention/score.h"

namespace attnmt {

class ChunkwiseAttention : public MonotonicAttention {
 public:
  ChunkwiseAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask) override;
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;

 protected:
  // beta [B, S] from alpha [B, S], the soft energies u [B, S] and the mask: eq. 13 over the chunk
  // (milk.h: its chunk reaches back to the start).
  virtual torch::Tensor soft_weights(const torch::Tensor& alpha, const torch::Tensor& energies,
                                     const torch::Tensor& mask) const;

 private:
  int64_t chunk_size_;
  ScoreFunction chunk_energy_;  // u_{t,k}: its keys U h_k are memory.extra[0]
};

// exp(u - m) [B, S] for the soft weights of chunkwise.h and milk.h, m the row's largest u over
// the positions a weight can reach: real ones at or left of the last position alpha [B, S] puts
// mass on (a weight right of it is 0 whatever its energy). The others are exactly 0, and so is a
// row whose alpha is all 0. So a hard stop's weights are the same numbers whatever the memory holds
// right of the stop: a stream that has read up to the stop and the whole sentence agree bit for bit.
torch::Tensor reachable_exp(const torch::Tensor& alpha, const torch::Tensor& energies, const torch::Tensor& mask);

// beta [B, S] of eq. 13 from alpha [B, S], the chunk energies u [B, S] and mask [B, S] (bool).
torch::Tensor chunkwise_weights(const torch::Tensor& alpha, const torch::Tensor& energies, const torch::Tensor& mask,
                                int64_t chunk_size);

}  // namespace attnmt
