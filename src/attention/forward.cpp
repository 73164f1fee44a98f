#include "attention/forward.h"

namespace attnmt {

namespace F = torch::nn::functional;

ForwardAttention::ForwardAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : Attention(query_size, memory_size) {
  const int64_t A = additive_hidden_size(config.hidden_size, query_size);
  score_ = ScoreFunction(*this, parse_score_kind(config.score, "model.attention.score"), query_size,
                         memory_size, A, /*coverage=*/false, config.type);
  agent_hidden_ = register_module("agent_hidden", torch::nn::Linear(memory_size + query_size, A));
  agent_out_ = register_module("agent_out", torch::nn::Linear(A, 1));
}

AttentionMemory ForwardAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = Attention::prepare(memory, mask);
  m.keys = score_.keys(memory);
  return m;
}

AttentionState ForwardAttention::initial_state(const AttentionMemory& memory) const {
  auto alpha0 = torch::zeros(memory.mask.sizes(), memory.values.options());
  alpha0.select(1, 0).fill_(1.0);
  auto u0 = torch::full({memory.mask.size(0), 1}, 0.5, memory.values.options());
  return {{alpha0, u0}};
}

AttentionOutput ForwardAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                          const AttentionState& state, int64_t /*step*/) {
  const auto& previous = state.tensors.at(0);  // alpha_{t-1} [B, S]
  const auto& u = state.tensors.at(1);         // u_{t-1} [B, 1]
  auto y = masked_softmax(score_(query, memory.keys), memory.mask);                     // [B, S]
  auto shifted = F::pad(previous, F::PadFuncOptions({1, 0})).narrow(1, 0, previous.size(1));  // alpha_{t-1}(i-1)
  auto unnormalised = ((1.0 - u) * previous + u * shifted) * y;                          // [B, S]
  auto weights = unnormalised / unnormalised.sum(1, /*keepdim=*/true).clamp_min(1e-20);
  auto context = weighted_sum(weights, memory.values);
  auto next_u = torch::sigmoid(agent_out_(torch::tanh(agent_hidden_(torch::cat({context, query}, 1)))));
  return {context, weights, AttentionState{{weights, next_u}}};
}

}  // namespace attnmt
