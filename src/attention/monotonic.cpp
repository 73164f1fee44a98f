#include "attention/monotonic.h"
#include "runtime/random.h"

#include <cmath>

#include "attention/score.h"

namespace attnmt {

namespace {
constexpr double kNoiseStd = 1.0;      // pre-sigmoid noise while training
constexpr double kTiny = 1e-10;        // floor of 1 - p_i (p is 1.0 exactly in float for energies > ~17)
constexpr double kTinyMass = 1e-30;    // floor of alpha_{t-1} before its log (a weight this small adds nothing)
}  // namespace

torch::Tensor monotonic_expected_alignment(const torch::Tensor& p, const torch::Tensor& previous) {
  // alpha_{t,i} = p_i sum_{k<=i} alpha_{t-1,k} prod_{k<=l<i} (1 - p_l), summed in log space:
  //   log_cumprod_i = sum_{l<i} log(1 - p_l)   (exclusive),
  //   alpha_{t,i}   = p_i exp(log_cumprod_i + logcumsumexp_k(log alpha_{t-1,k} - log_cumprod_k)).
  // Dividing by a clamped cumprod instead loses the mass whenever positions left of the focus
  // have p near 1 (their product falls under the clamp although the ratio the formula needs,
  // prod_{k<=l<i}, does not): the attention died out in training. Here each term's exponent is
  // log alpha_{t-1,k} + sum_{k<=l<i} log(1 - p_l) <= 0, so nothing overflows or underflows early.
  auto log_keep = torch::log((1.0 - p).clamp(kTiny, 1.0));                        // [B, S]
  auto log_cumprod = torch::cumsum(log_keep, 1) - log_keep;                        // exclusive
  auto log_previous = torch::log(previous.clamp_min(kTinyMass));                   // 0 -> ~-69
  return p * torch::exp(log_cumprod + torch::logcumsumexp(log_previous - log_cumprod, 1));  // [B, S]
}

MonotonicAttention::MonotonicAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : Attention(query_size, memory_size), hard_decode_(config.hard_decode) {
  const int64_t A = additive_hidden_size(config.hidden_size, query_size);
  w_ = register_module("w", torch::nn::Linear(query_size, A));
  u_ = register_module("u", torch::nn::Linear(torch::nn::LinearOptions(memory_size, A).bias(false)));
  const double bound = 1.0 / std::sqrt(static_cast<double>(A));
  v_ = register_parameter("v", torch::empty({A}).uniform_(-bound, bound));
  g_ = register_parameter("g", torch::full({1}, bound));
  r_ = register_parameter("r", torch::full({1}, config.score_bias_init));
}

AttentionMemory MonotonicAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = Attention::prepare(memory, mask);
  m.keys = u_(memory);  // [B, S, A]: U h_i, once per batch
  return m;
}

AttentionState MonotonicAttention::initial_state(const AttentionMemory& memory) const {
  return {{first_position_alignment(memory)}};
}

torch::Tensor MonotonicAttention::energy(const torch::Tensor& query, const AttentionMemory& memory) {
  auto hidden = torch::tanh(memory.keys + w_(query).unsqueeze(1));  // [B, S, A]
  return torch::matmul(hidden, v_ / v_.norm()) * g_ + r_;           // [B, S]
}

torch::Tensor MonotonicAttention::selection_probabilities(const torch::Tensor& query, const AttentionMemory& memory) {
  return torch::sigmoid(energy(query, memory)).masked_fill(memory.mask.logical_not(), 0.0);
}

torch::Tensor MonotonicAttention::alignment(const torch::Tensor& query, const AttentionMemory& memory,
                                            const torch::Tensor& previous) {
  if (hard_decode_ && !is_training()) {
    const int64_t S = memory.mask.size(1);
    auto p = selection_probabilities(query, memory);
    auto positions = torch::arange(S, memory.lengths.options()).unsqueeze(0);       // [1, S]
    // Where the previous step attended; S (past the end) once the attention stopped.
    auto start = torch::where(previous.sum(1) > 0, previous.argmax(1),
                              torch::full_like(memory.lengths, S)).unsqueeze(1);     // [B, 1]
    auto candidate = memory.mask.logical_and(positions >= start).logical_and(p >= 0.5);  // [B, S]
    auto first = (candidate.to(torch::kLong) * (S - positions)).argmax(1);         // leftmost candidate
    return torch::one_hot(first, S).to(previous.scalar_type()) *
           candidate.any(1, /*keepdim=*/true).to(previous.scalar_type());
  }
  auto e = energy(query, memory);
  if (is_training()) e = e + at::randn(e.sizes(), random_stream(), e.options()) * kNoiseStd;
  auto p = torch::sigmoid(e).masked_fill(memory.mask.logical_not(), 0.0);
  return monotonic_expected_alignment(p, previous);
}

AttentionOutput MonotonicAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                            const AttentionState& state, int64_t /*step*/) {
  auto weights = alignment(query, memory, state.tensors.at(0));  // from alpha_{t-1} [B, S]
  return {weighted_sum(weights, memory.values), weights, AttentionState{{weights}}};
}

}  // namespace attnmt
