#include "attention/key_value.h"

#include "util/error.h"

namespace attnmt {

KeyValueAttention::KeyValueAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : ScoredAttention(config, query_size, memory_size, /*key_source_size=*/memory_size / 2) {
  if (memory_size % 2 != 0) {
    throw InputError("model.attention.type: key_value splits the encoder output in halves; its size (" +
                     std::to_string(memory_size) + ") must be even");
  }
}

AttentionMemory KeyValueAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = ScoredAttention::prepare(memory, mask);  // keys from key_source: the first half
  m.values = memory.narrow(2, memory_size_ / 2, memory_size_ / 2);  // [B, S, Dm/2]
  return m;
}

AttentionOutput KeyValueAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                           const AttentionState& state, int64_t /*step*/) {
  auto weights = masked_softmax(score_(query, memory.keys), memory.mask);  // [B, S]
  return {weighted_sum(weights, memory.values), weights, state};
}

}  // namespace attnmt
