#include "attention/local_m.h"

namespace attnmt {

torch::Tensor window_mask(const torch::Tensor& mask, const torch::Tensor& center, int64_t window) {
  auto positions = torch::arange(mask.size(1), center.options()).unsqueeze(0);  // [1, S]
  return mask.logical_and((positions - center.unsqueeze(1)).abs() <= window);
}

LocalMAttention::LocalMAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : ScoredAttention(config, query_size, memory_size), window_(config.window) {}

AttentionOutput LocalMAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                         const AttentionState& state, int64_t step) {
  auto center = (memory.lengths - 1).clamp_max(step);                         // [B] p_t
  auto in_window = window_mask(memory.mask, center, window_);                 // [B, S]
  auto weights = masked_softmax(score_(query, memory.keys), in_window);       // 0 outside
  return {weighted_sum(weights, memory.values), weights, state};
}

}  // namespace attnmt
