#include "attention/forced_forward.h"

namespace attnmt {

ForcedForwardAttention::ForcedForwardAttention(const AttentionConfig& config, int64_t query_size,
                                               int64_t memory_size)
    : Attention(query_size, memory_size) {
  score_ = ScoreFunction(*this, parse_score_kind(config.score, "model.attention.score"), query_size,
                         memory_size, additive_hidden_size(config.hidden_size, query_size),
                         /*coverage=*/false, config.type);
}

AttentionMemory ForcedForwardAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = Attention::prepare(memory, mask);
  m.keys = score_.keys(memory);
  return m;
}

AttentionOutput ForcedForwardAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                                const AttentionState& state, int64_t /*step*/) {
  auto e = score_(query, memory.keys);  // [B, S]
  const bool first = state.tensors.empty();
  auto weights = masked_softmax(first ? e : e - state.tensors[0], memory.mask);
  auto history = first ? e : torch::logaddexp(state.tensors[0], e);  // L_t [B, S]
  return {weighted_sum(weights, memory.values), weights, AttentionState{{history}}};
}

}  // namespace attnmt
