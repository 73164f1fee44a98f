// Luong et al. (2015), "Effective Approaches to Attention-based NMT", section 3.1, "dot":
//   e_{t,i} = q_t^T h_i,  alpha_t = masked_softmax(e_t),  c_t = sum_i alpha_{t,i} h_i.
// Requires query size == memory size (checked at construction).
#pragma once
#include "attention/attention.h"

namespace attnmt {

class LuongDotAttention : public Attention {
 public:
  LuongDotAttention(int64_t query_size, int64_t memory_size);
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;
};

// Scores q_t against keys [B, S, D] with one batched matrix product: [B, S].
torch::Tensor dot_scores(const torch::Tensor& query, const torch::Tensor& keys);

}  // namespace attnmt
