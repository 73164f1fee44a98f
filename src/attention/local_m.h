// Local attention, monotonic alignment "local-m" (Luong et al., 2015, section 3.2):
//   p_t = min(t, S_b - 1)  (0-based target step t, S_b the sentence's real source length),
//   alpha_t = masked_softmax of score(q_t, h_.) restricted to i in [p_t - D, p_t + D] ∩ [0, S_b - 1],
//   exactly 0 outside the window, c_t = sum_i alpha_{t,i} h_i.
// D = model.attention.window; score = model.attention.score (dot | general | concat).
#pragma once
#include "attention/attention.h"
#include "attention/score.h"
#include "config/config.h"

namespace attnmt {

class LocalMAttention : public ScoredAttention {
 public:
  // Not in a running batch: its window is centred on the step itself (Attention::joins_running_batches).
  bool joins_running_batches() const override { return false; }
  LocalMAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;

 private:
  int64_t window_;
};

// [B, S] bool: mask & |i - center_b| <= window. center [B] (integer or real positions).
torch::Tensor window_mask(const torch::Tensor& mask, const torch::Tensor& center, int64_t window);

}  // namespace attnmt
