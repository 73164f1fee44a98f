#include "attention/local_p.h"

#include <cmath>

#include "attention/local_m.h"

namespace attnmt {

LocalPAttention::LocalPAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : ScoredAttention(config, query_size, memory_size), window_(config.window) {
  const int64_t hidden = additive_hidden_size(config.hidden_size, query_size);
  w_p_ = register_module("w_p", torch::nn::Linear(torch::nn::LinearOptions(query_size, hidden).bias(false)));
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  v_p_ = register_parameter("v_p", torch::empty({hidden}).uniform_(-bound, bound));
}

torch::Tensor LocalPAttention::predict_position(const torch::Tensor& query, const AttentionMemory& memory) {
  auto gate = torch::sigmoid(torch::matmul(torch::tanh(w_p_(query)), v_p_));  // [B]
  return memory.lengths.to(gate.scalar_type()) * gate;                         // [B] in [0, S_b]
}

AttentionOutput LocalPAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                         const AttentionState& state, int64_t /*step*/) {
  auto p = predict_position(query, memory);                                   // [B]
  auto in_window = window_mask(memory.mask, p.detach(), window_);             // [B, S]
  auto align = masked_softmax(score_(query, memory.keys), in_window);         // [B, S]
  const double sigma = static_cast<double>(window_) / 2.0;
  auto positions = torch::arange(memory.mask.size(1), p.options()).unsqueeze(0);     // [1, S]
  auto gauss = torch::exp(-(positions - p.unsqueeze(1)).pow(2) / (2.0 * sigma * sigma));  // [B, S]
  auto weights = align * gauss;  // exactly 0 wherever align is (outside the window, padding)
  return {weighted_sum(weights, memory.values), weights, state};
}

}  // namespace attnmt
