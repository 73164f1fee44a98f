#include "attention/milk.h"

namespace attnmt {

namespace {

constexpr double kTinyPrefixSum = 1e-30;  // floor of D_j (all its terms underflowed)

}  // namespace

torch::Tensor milk_weights(const torch::Tensor& alpha, const torch::Tensor& energies, const torch::Tensor& mask) {
  auto e = reachable_exp(alpha, energies, mask);                 // [B, S]
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
    : ChunkwiseAttention(config, query_size, memory_size), latency_weight_(config.latency_loss) {}

torch::Tensor MilkAttention::soft_weights(const torch::Tensor& alpha, const torch::Tensor& energies,
                                          const torch::Tensor& mask) const {
  return milk_weights(alpha, energies, mask);
}

AttentionOutput MilkAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                       const AttentionState& state, int64_t step) {
  auto out = ChunkwiseAttention::forward(query, memory, state, step);
  if (is_training() && latency_weight_ > 0) {
    const auto& alpha = out.state.tensors.at(0);                                            // [B, S]
    const auto lengths = memory.mask.sum(1).to(alpha.scalar_type());                       // |x| [B]
    const auto positions = torch::arange(1, alpha.size(1) + 1, alpha.options());          // 1..S
    delays_.push_back((alpha * positions).sum(1) + (1 - alpha.sum(1)) * lengths);           // g_t [B]
    source_lengths_ = lengths;
  }
  return out;
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
