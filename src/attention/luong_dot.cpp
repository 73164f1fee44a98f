#include "attention/luong_dot.h"

#include "util/error.h"

namespace attnmt {

torch::Tensor dot_scores(const torch::Tensor& query, const torch::Tensor& keys) {
  // sum_d [B, S, D] * [B, 1, D] -> [B, S] (elementwise, see weighted_sum for why not bmm)
  return (keys * query.unsqueeze(1)).sum(2);
}

LuongDotAttention::LuongDotAttention(int64_t query_size, int64_t memory_size)
    : Attention(query_size, memory_size) {
  if (query_size != memory_size) {
    throw InputError("model.attention.type: luong_dot needs the decoder hidden size (" +
                     std::to_string(query_size) + ") to equal the encoder output size (" +
                     std::to_string(memory_size) + "); use luong_general or change the sizes");
  }
}

AttentionOutput LuongDotAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                           const AttentionState& state, int64_t /*step*/) {
  auto weights = masked_softmax(dot_scores(query, memory.keys), memory.mask);  // [B, S]
  return {weighted_sum(weights, memory.values), weights, state};
}

}  // namespace attnmt
