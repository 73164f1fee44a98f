// Bahdanau et al. (2015), "Neural Machine Translation by Jointly Learning to Align and
// Translate", appendix A.1.2: additive attention
//   e_{t,i} = v_a^T tanh(W_a q + U_a h_i),
// with U_a h_i computed once per batch (keys [B, S, A]). In the paper the query is the previous
// decoder state s_{t-1} (decoder.style: bahdanau); the score itself does not care.
// Luong's "concat" score (luong_concat.h) is the same function: v_a^T tanh(W_a [q; h_i]) with
// W_a split into its q and h columns.
#pragma once
#include "attention/attention.h"

namespace attnmt {

class AdditiveAttention : public Attention {
 public:
  // hidden_size: the size A of the tanh layer.
  AdditiveAttention(int64_t query_size, int64_t memory_size, int64_t hidden_size);
  AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask) override;
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;

 protected:
  // e_t [B, S] before masking.
  torch::Tensor scores(const torch::Tensor& query, const AttentionMemory& memory);
  torch::nn::Linear w_a_{nullptr};  // query -> A (with the bias)
  torch::nn::Linear u_a_{nullptr};  // memory -> A, no bias
  torch::Tensor v_a_;               // [A]
};

using BahdanauAttention = AdditiveAttention;

}  // namespace attnmt
