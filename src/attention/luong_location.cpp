#include "attention/luong_location.h"

namespace attnmt {

LuongLocationAttention::LuongLocationAttention(const AttentionConfig& config, int64_t query_size,
                                               int64_t memory_size)
    : Attention(query_size, memory_size), max_positions_(config.max_positions) {
  w_a_ = register_module("w_a", torch::nn::Linear(query_size, max_positions_));
}

AttentionOutput LuongLocationAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                                const AttentionState& state, int64_t /*step*/) {
  const int64_t S = memory.mask.size(1);
  auto scores = w_a_(query);  // [B, P]
  if (S <= max_positions_) {
    scores = scores.slice(1, 0, S);
  } else {
    scores = torch::cat({scores, scores.slice(1, max_positions_ - 1).expand({scores.size(0), S - max_positions_})}, 1);
  }
  auto weights = masked_softmax(scores, memory.mask);  // [B, S]
  return {weighted_sum(weights, memory.values), weights, state};
}

}  // namespace attnmt
