#include "attention/key_value.h"

#include "util/error.h"

namespace attnmt {

KeyValueAttention::KeyValueAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : ScoredAttention(config, query_size, memory_size, /*key_source_size=*/memory_size / 2) {
  if (memory_size % 4 != 0) {
    throw InputError("model.attention.type: key_value splits each half of the encoder output into a key and a "
                     "value part; its size (" + std::to_string(memory_size) + ") must be a multiple of 4");
  }
}

torch::Tensor KeyValueAttention::quarters(const torch::Tensor& memory, int64_t first) const {
  const int64_t q = memory_size_ / 4;
  return torch::cat({memory.narrow(2, first * q, q), memory.narrow(2, (first + 2) * q, q)}, 2);
}

AttentionMemory KeyValueAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = ScoredAttention::prepare(memory, mask);  // keys from key_source: quarters 0 and 2
  m.values = quarters(memory, 1);                   // [B, S, Dm/2]: quarters 1 and 3
  return m;
}

AttentionOutput KeyValueAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                           const AttentionState& state, int64_t /*step*/) {
  auto weights = masked_softmax(score_(query, memory.keys), memory.mask);  // [B, S]
  return {weighted_sum(weights, memory.values), weights, state};
}

}  // namespace attnmt
