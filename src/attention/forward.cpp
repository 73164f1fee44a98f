#include "attention/forward.h"

#include <limits>

namespace attnmt {

namespace F = torch::nn::functional;

namespace {
// u is kept inside [kMinGate, 1 - kMinGate] so that neither move can lose all of the mass.
constexpr double kMinGate = 1e-6;
constexpr double kMinTransition = 1e-30;
}  // namespace

ForwardAttention::ForwardAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : ScoredAttention(config, query_size, memory_size) {
  const int64_t A = additive_hidden_size(config.hidden_size, query_size);
  agent_hidden_ = register_module("agent_hidden", torch::nn::Linear(memory_size + query_size, A));
  agent_out_ = register_module("agent_out", torch::nn::Linear(A, 1));
}

AttentionState ForwardAttention::initial_state(const AttentionMemory& memory) const {
  auto u0 = torch::full({memory.mask.size(0), 1}, 0.5, memory.values.options());
  return {{first_position_alignment(memory), u0}};
}

AttentionState ForwardAttention::grow_state(const AttentionState& state, int64_t rows) const {
  AttentionState alignment;
  alignment.tensors.push_back(state.tensors.at(0));
  AttentionState grown = Attention::grow_state(alignment, rows);
  grown.tensors.push_back(state.tensors.at(1));
  return grown;
}

AttentionOutput ForwardAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                          const AttentionState& state, int64_t /*step*/) {
  const auto& previous = state.tensors.at(0);                    // alpha_{t-1} [B, S]
  const auto u = state.tensors.at(1).clamp(kMinGate, 1.0 - kMinGate);  // u_{t-1} [B, 1]
  auto shifted = F::pad(previous, F::PadFuncOptions({1, 0})).narrow(1, 0, previous.size(1));  // alpha_{t-1}(i-1)
  auto transition = (1.0 - u) * previous + u * shifted;          // [B, S], >= 0
  auto reachable = memory.mask.logical_and(transition > 0);
  // Only float underflow can leave a row with no reachable position; it restarts at the first one.
  auto first = torch::arange(previous.size(1), memory.lengths.options()).unsqueeze(0) == 0;  // [1, S]
  reachable = torch::where(reachable.any(1, /*keepdim=*/true), reachable, first.expand_as(reachable));
  // alpha_t = normalise(transition * y_t), in log space: a product of small probabilities would
  // underflow, and dividing by a vanishing sum makes the gradient explode.
  // (The floor keeps d log / d transition finite for float's denormals.)
  auto log_transition = torch::where(reachable, transition, torch::ones_like(transition)).clamp_min(kMinTransition).log();
  auto neg_inf = -std::numeric_limits<double>::infinity();
  auto log_y = torch::log_softmax(score_(query, memory.keys).masked_fill(memory.mask.logical_not(), neg_inf), 1);
  auto weights = masked_softmax(log_transition + log_y, reachable);  // [B, S]
  auto context = weighted_sum(weights, memory.values);
  auto next_u = torch::sigmoid(agent_out_(torch::tanh(agent_hidden_(torch::cat({context, query}, 1)))));
  return {context, weights, AttentionState{{weights, next_u}}};
}

}  // namespace attnmt
