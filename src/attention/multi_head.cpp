#include "attention/multi_head.h"

#include <cmath>

#include "runtime/random.h"
#include "util/error.h"

namespace attnmt {

namespace {
torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}
}  // namespace

MultiHeadAttention::MultiHeadAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : Attention(query_size, memory_size), heads_(config.heads), dropout_(config.dropout) {
  if (query_size % heads_ != 0 || memory_size % heads_ != 0) {
    throw InputError("model.attention.heads: " + std::to_string(heads_) + " heads must divide the decoder size (" +
                     std::to_string(query_size) + ") and the encoder output size (" +
                     std::to_string(memory_size) + ")");
  }
  d_k_ = query_size / heads_;
  d_v_ = memory_size / heads_;
  w_q_ = register_module("w_q", linear(query_size, heads_ * d_k_));
  w_k_ = register_module("w_k", linear(memory_size, heads_ * d_k_));
  w_v_ = register_module("w_v", linear(memory_size, heads_ * d_v_));
  w_o_ = register_module("w_o", linear(heads_ * d_v_, memory_size));
}

AttentionMemory MultiHeadAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = Attention::prepare(memory, mask);
  const int64_t B = memory.size(0), S = memory.size(1);
  m.keys = w_k_(memory).view({B, S, heads_, d_k_});    // [B, S, H, d_k]
  m.values = w_v_(memory).view({B, S, heads_, d_v_});  // [B, S, H, d_v]
  return m;
}

AttentionOutput MultiHeadAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                            const AttentionState& state, int64_t /*step*/) {
  const int64_t B = query.size(0);
  auto q = w_q_(query).view({B, 1, heads_, d_k_});                                  // [B, 1, H, d_k]
  auto scores = (memory.keys * q).sum(3) / std::sqrt(static_cast<double>(d_k_));    // [B, S, H]
  auto head_weights = masked_softmax(scores.transpose(1, 2), memory.mask.unsqueeze(1));  // [B, H, S]
  auto used = stream_dropout(head_weights, dropout_, is_training());
  auto heads = (used.transpose(1, 2).unsqueeze(3) * memory.values).sum(1);  // [B, H, d_v]
  auto context = w_o_(heads.reshape({B, heads_ * d_v_}));                           // [B, Dm]
  return {context, head_weights.mean(1), state};
}

}  // namespace attnmt
