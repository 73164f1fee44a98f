#include "attention/forced_forward.h"

namespace attnmt {

ForcedForwardAttention::ForcedForwardAttention(const AttentionConfig& config, int64_t query_size,
                                               int64_t memory_size)
    : ScoredAttention(config, query_size, memory_size) {}

AttentionOutput ForcedForwardAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                                const AttentionState& state, int64_t /*step*/) {
  auto e = score_(query, memory.keys);  // [B, S]
  const bool first = state.tensors.empty();
  auto weights = masked_softmax(first ? e : e - state.tensors[0], memory.mask);
  auto history = first ? e : torch::logaddexp(state.tensors[0], e);  // L_t [B, S]
  return {weighted_sum(weights, memory.values), weights, AttentionState{{history}}};
}

}  // namespace attnmt
