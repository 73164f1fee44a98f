#include "attention/luong_general.h"

#include "attention/luong_dot.h"

namespace attnmt {

LuongGeneralAttention::LuongGeneralAttention(int64_t query_size, int64_t memory_size)
    : Attention(query_size, memory_size) {
  w_a_ = register_module("w_a", torch::nn::Linear(
                                    torch::nn::LinearOptions(memory_size, query_size).bias(false)));
}

AttentionMemory LuongGeneralAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = Attention::prepare(memory, mask);
  m.keys = w_a_(memory);  // [B, S, Dq]
  return m;
}

AttentionOutput LuongGeneralAttention::forward(const torch::Tensor& query,
                                               const AttentionMemory& memory,
                                               const AttentionState& state, int64_t /*step*/) {
  auto weights = masked_softmax(dot_scores(query, memory.keys), memory.mask);  // [B, S]
  return {weighted_sum(weights, memory.values), weights, state};
}

}  // namespace attnmt
