// Luong et al. (2015), section 3.1, "general" (multiplicative):
//   e_{t,i} = q_t^T W_a h_i.
// W_a h_i is computed once per batch in prepare() (keys [B, S, Dq]); each step is then one
// batched dot product, exactly as luong_dot.
#pragma once
#include "attention/attention.h"

namespace attnmt {

class LuongGeneralAttention : public Attention {
 public:
  LuongGeneralAttention(int64_t query_size, int64_t memory_size);
  AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask) override;
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;

 private:
  torch::nn::Linear w_a_{nullptr};  // Dm -> Dq, no bias
};

}  // namespace attnmt
