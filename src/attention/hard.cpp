#include "attention/hard.h"
#include "runtime/random.h"

#include <cmath>

namespace attnmt {

HardAttention::HardAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : ScoredAttention(config, query_size, memory_size) {
  baseline_ = register_buffer("baseline", torch::full({1}, std::nan("")));
}

AttentionOutput HardAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                       const AttentionState& state, int64_t /*step*/) {
  auto alpha = masked_softmax(score_(query, memory.keys), memory.mask);  // [B, S]
  torch::Tensor k;                                                       // [B]
  if (is_training()) {
    k = torch::multinomial(alpha.detach(), 1, /*replacement=*/false, random_stream()).squeeze(1);
    auto log_alpha = alpha.clamp_min(1e-30).log();
    auto log_prob = log_alpha.gather(1, k.unsqueeze(1)).squeeze(1);
    auto entropy = -(alpha * log_alpha).sum(1);  // 0 * log(tiny) = 0 on padding
    log_prob_sum_ = log_prob_sum_.defined() ? log_prob_sum_ + log_prob : log_prob;
    entropy_sum_ = entropy_sum_.defined() ? entropy_sum_ + entropy : entropy;
  } else {
    k = alpha.argmax(1);
  }
  auto weights = torch::one_hot(k, alpha.size(1)).to(alpha.scalar_type());
  auto context = memory.values.gather(1, k.view({-1, 1, 1}).expand({-1, 1, memory.values.size(2)})).squeeze(1);
  return {context, weights, state};
}

torch::Tensor HardAttention::take_auxiliary_loss(const torch::Tensor& sentence_log_likelihood,
                                                const torch::Tensor& /*target_lengths*/) {
  if (!log_prob_sum_.defined()) return {};
  auto reward = sentence_log_likelihood.detach().to(log_prob_sum_.scalar_type());  // [B]
  {
    torch::NoGradGuard no_grad;
    const double mean = reward.mean().item<double>();
    const double old = baseline_.item<double>();
    baseline_.fill_(std::isnan(old) ? mean : kBaselineDecay * old + (1.0 - kBaselineDecay) * mean);
  }
  auto advantage = reward - baseline_.item<double>();
  auto loss = -(advantage * log_prob_sum_).sum() - kEntropyBonus * entropy_sum_.sum();
  log_prob_sum_ = entropy_sum_ = torch::Tensor();
  return loss;
}

}  // namespace attnmt
