#include "attention/milk.h"

#include <limits>

namespace attnmt {

namespace {

constexpr double kTinyPrefixSum = 1e-30;  // floor of D_j (all its terms underflowed)

}  // namespace

torch::Tensor milk_weights(const torch::Tensor& alpha, const torch::Tensor& energies, const torch::Tensor& mask) {
  auto u = energies.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  auto top = std::get<0>(u.max(1, /*keepdim=*/true)).detach();  // [B, 1]; every row has a real position
  auto e = torch::exp(u - top);                                  // [B, S], exactly 0 on padding
  auto prefix_sums = e.cumsum(1).clamp_min(kTinyPrefixSum);       // D_j
  auto ratio = alpha / prefix_sums;                              // alpha_j / D_j
  auto from_right = ratio.flip({1}).cumsum(1).flip({1});          // sum_{j>=k}
  return e * from_right;
}

torch::Tensor differentiable_average_lagging(const torch::Tensor& delays, const torch::Tensor& source_lengths,
                                             const torch::Tensor& target_lengths) {
  const auto x = source_lengths.to(delays.scalar_type());                 // |x| [B]
  const auto y = target_lengths.to(delays.scalar_type()).clamp_min(1);    // |y| [B]
  const auto step = x / y;                                                // 1 / gamma
  auto lagged = delays.select(1, 0);                                      // g'_1
  auto total = lagged.clone();                                            // t = 1: (t - 1) / gamma = 0
  for (int64_t t = 1; t < delays.size(1); ++t) {
    lagged = torch::maximum(delays.select(1, t), lagged + step);
    const auto real = target_lengths.gt(t).to(delays.scalar_type());
    total = total + real * (lagged - static_cast<double>(t) * step);
  }
  return total / y;
}

MilkAttention::MilkAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : MonotonicAttention(config, query_size, memory_size),
      soft_energy_(*this, ScoreKind::kConcat, query_size, memory_size,
                   additive_hidden_size(config.hidden_size, query_size), /*coverage=*/false, "milk"),
      latency_weight_(config.latency_loss) {}

AttentionMemory MilkAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = MonotonicAttention::prepare(memory, mask);
  m.extra = {soft_energy_.keys(memory)};  // [B, S, A]
  return m;
}

AttentionOutput MilkAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                       const AttentionState& state, int64_t /*step*/) {
  auto alpha = alignment(query, memory, state.tensors.at(0));  // [B, S]
  auto beta = milk_weights(alpha, soft_energy_(query, memory.extra.at(0)), memory.mask);
  if (is_training() && latency_weight_ > 0) {
    const auto lengths = memory.mask.sum(1).to(alpha.scalar_type());                       // |x| [B]
    const auto positions = torch::arange(1, alpha.size(1) + 1, alpha.options());          // 1..S
    delays_.push_back((alpha * positions).sum(1) + (1 - alpha.sum(1)) * lengths);           // g_t [B]
    source_lengths_ = lengths;
  }
  return {weighted_sum(beta, memory.values), beta, AttentionState{{alpha}}};
}

torch::Tensor MilkAttention::take_auxiliary_loss(const torch::Tensor& /*sentence_log_likelihood*/,
                                                const torch::Tensor& target_lengths) {
  if (delays_.empty()) return {};
  auto delays = torch::stack(delays_, 1);  // [B, T]
  delays_.clear();
  const auto dal = differentiable_average_lagging(delays, source_lengths_, target_lengths.to(delays.device()));
  source_lengths_ = torch::Tensor();
  return dal.sum() * latency_weight_;
}

}  // namespace attnmt
