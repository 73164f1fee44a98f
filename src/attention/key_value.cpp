#include "attention/key_value.h"

#include "util/error.h"

namespace attnmt {

KeyValueAttention::KeyValueAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : Attention(query_size, memory_size) {
  if (memory_size % 2 != 0) {
    throw InputError("model.attention.type: key_value splits the encoder output in halves; its size (" +
                     std::to_string(memory_size) + ") must be even");
  }
  score_ = ScoreFunction(*this, parse_score_kind(config.score, "model.attention.score"), query_size,
                         memory_size / 2, additive_hidden_size(config.hidden_size, query_size),
                         /*coverage=*/false, config.type);
}

AttentionMemory KeyValueAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = Attention::prepare(memory, mask);
  auto halves = memory.chunk(2, 2);      // [B, S, Dm/2] each
  m.keys = score_.keys(halves[0]);
  m.values = halves[1];
  return m;
}

AttentionOutput KeyValueAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                           const AttentionState& state, int64_t /*step*/) {
  auto weights = masked_softmax(score_(query, memory.keys), memory.mask);  // [B, S]
  return {weighted_sum(weights, memory.values), weights, state};
}

}  // namespace attnmt
