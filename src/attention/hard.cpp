#include "attention/hard.h"
#include "runtime/random.h"

#include <cmath>

namespace attnmt {

HardAttention::HardAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : ScoredAttention(config, query_size, memory_size) {
  baseline_ = register_buffer("baseline", torch::full({1}, std::nan("")));
}

AttentionOutput HardAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                       const AttentionState& state, int64_t step) {
  auto alpha = masked_softmax(score_(query, memory.keys), memory.mask);  // [B, S]
  auto gather_state = [&](const torch::Tensor& k) {
    return memory.values.gather(1, k.view({-1, 1, 1}).expand({-1, 1, memory.values.size(2)})).squeeze(1);
  };
  if (!is_training()) {
    auto k = alpha.argmax(1);
    return {gather_state(k), torch::one_hot(k, alpha.size(1)).to(alpha.scalar_type()), state};
  }
  if (step == 0 || !sampled_rows_.defined() || sampled_rows_.size(0) != alpha.size(0)) {  // a new batch
    sampled_rows_ = torch::rand({alpha.size(0)}, random_stream(), alpha.options())
                        .ge(kExpectedValueShare)
                        .to(alpha.scalar_type());
    detached_keys_ = score_.keys(memory.values.detach());
  }
  auto k = torch::multinomial(alpha.detach(), 1, /*replacement=*/false, random_stream()).squeeze(1);
  // log alpha' for REINFORCE: the same scores from inputs whose gradient is stopped.
  auto alpha_score_only = masked_softmax(score_(query.detach(), detached_keys_), memory.mask);
  auto log_prob = alpha_score_only.clamp_min(1e-30).log().gather(1, k.unsqueeze(1)).squeeze(1) * sampled_rows_;
  auto entropy = -(alpha * alpha.clamp_min(1e-30).log()).sum(1);  // 0 * log(tiny) = 0 on padding
  log_prob_sum_ = log_prob_sum_.defined() ? log_prob_sum_ + log_prob : log_prob;
  entropy_sum_ = entropy_sum_.defined() ? entropy_sum_ + entropy : entropy;

  auto hard = sampled_rows_.unsqueeze(1);  // [B, 1]
  auto one_hot = torch::one_hot(k, alpha.size(1)).to(alpha.scalar_type());
  auto expected = torch::bmm(alpha.unsqueeze(1), memory.values).squeeze(1);
  return {hard * gather_state(k) + (1 - hard) * expected, hard * one_hot + (1 - hard) * alpha, state};
}

torch::Tensor HardAttention::take_auxiliary_loss(const torch::Tensor& sentence_log_likelihood,
                                                const torch::Tensor& /*target_lengths*/) {
  if (!log_prob_sum_.defined()) return {};
  auto reward = sentence_log_likelihood.detach().to(log_prob_sum_.scalar_type());  // [B]
  double spread = 1;
  {
    torch::NoGradGuard no_grad;
    const double mean = reward.mean().item<double>();
    const double old = baseline_.item<double>();
    baseline_.fill_(std::isnan(old) ? mean : kBaselineDecay * old + (1.0 - kBaselineDecay) * mean);
    if (reward.size(0) > 1) spread = reward.std().item<double>() + 1e-6;
  }
  auto advantage = (reward - baseline_.item<double>()) / spread;
  auto loss = -(advantage * log_prob_sum_).sum() - kEntropyBonus * entropy_sum_.sum();
  log_prob_sum_ = entropy_sum_ = sampled_rows_ = detached_keys_ = torch::Tensor();
  return loss;
}

}  // namespace attnmt
