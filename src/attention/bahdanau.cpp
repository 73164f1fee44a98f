#include "attention/bahdanau.h"

#include <cmath>

namespace attnmt {

AdditiveAttention::AdditiveAttention(int64_t query_size, int64_t memory_size, int64_t hidden_size)
    : Attention(query_size, memory_size) {
  w_a_ = register_module("w_a", torch::nn::Linear(query_size, hidden_size));
  u_a_ = register_module("u_a", torch::nn::Linear(
                                    torch::nn::LinearOptions(memory_size, hidden_size).bias(false)));
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  v_a_ = register_parameter("v_a", torch::empty({hidden_size}).uniform_(-bound, bound));
}

AttentionMemory AdditiveAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = Attention::prepare(memory, mask);
  m.keys = u_a_(memory);  // [B, S, A]: U_a h_i, once per batch
  return m;
}

torch::Tensor AdditiveAttention::scores(const torch::Tensor& query, const AttentionMemory& memory) {
  auto hidden = torch::tanh(memory.keys + w_a_(query).unsqueeze(1));  // [B, S, A]
  return torch::matmul(hidden, v_a_);                                  // [B, S]
}

AttentionOutput AdditiveAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                           const AttentionState& state, int64_t /*step*/) {
  auto weights = masked_softmax(scores(query, memory), memory.mask);
  return {weighted_sum(weights, memory.values), weights, state};
}

}  // namespace attnmt
