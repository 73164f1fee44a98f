#include "attention/static_attention.h"

#include "attention/score.h"

namespace attnmt {

StaticAttention::StaticAttention(const AttentionConfig& /*config*/, int64_t query_size, int64_t memory_size)
    : Attention(query_size, memory_size) {
  w_u_ = register_module("w_u", torch::nn::Linear(torch::nn::LinearOptions(2 * memory_size, memory_size).bias(false)));
}

AttentionMemory StaticAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = Attention::prepare(memory, mask);
  const int64_t Dm = memory.size(2);
  auto last = (m.lengths - 1).view({-1, 1, 1}).expand({memory.size(0), 1, Dm});
  auto ends = torch::cat({memory.gather(1, last).squeeze(1), memory.select(1, 0)}, 1);  // [B, 2 Dm]
  auto weights = masked_softmax(dot_scores(w_u_(ends), memory), mask);                 // [B, S]
  m.extra = {weights, weighted_sum(weights, memory)};
  return m;
}

AttentionOutput StaticAttention::forward(const torch::Tensor& /*query*/, const AttentionMemory& memory,
                                         const AttentionState& state, int64_t /*step*/) {
  return {memory.extra.at(1), memory.extra.at(0), state};
}

AttentionMemory StaticAttention::extend(const AttentionMemory& memory, const torch::Tensor& row) {
  if (!memory.values.defined()) return Attention::extend(memory, row);
  auto values = torch::cat({memory.values, row.unsqueeze(1)}, 1);  // values are the encoder states here
  return prepare(values, torch::ones({values.size(0), values.size(1)}, row.options().dtype(torch::kBool)));
}

}  // namespace attnmt
