// Location-based attention (Luong et al., 2015, section 3.1, eq. 8):
//   alpha_t = masked_softmax(W_a q_t)  over source positions: the weights depend on the decoder
//   state alone, not on the encoder states; c_t = sum_i alpha_{t,i} h_i.
// W_a has one output row per source position, up to model.attention.max_positions = P. Choice
// (the paper pads/truncates to a fixed length): positions at or beyond P share the score of
// position P - 1, so longer sentences still get exact, normalised weights.
#pragma once
#include "attention/attention.h"
#include "config/config.h"

namespace attnmt {

class LuongLocationAttention : public Attention {
 public:
  LuongLocationAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;

 private:
  int64_t max_positions_;
  torch::nn::Linear w_a_{nullptr};  // Dq -> P
};

}  // namespace attnmt
