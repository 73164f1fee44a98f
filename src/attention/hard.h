// Stochastic hard attention (Xu et al., 2015, "Show, Attend and Tell", section 4.1):
//   alpha_t = masked_softmax(score(q_t, h_.)),  c_t = h_k,
// with k ~ Categorical(alpha_t) while training and k = argmax_i alpha_{t,i} when decoding; the
// weights returned are the one-hot of k. Sampling is not differentiable, so the score parameters
// learn by REINFORCE (eq. 11-12): take_auxiliary_loss(R) returns
//   -sum_b (R_b - baseline) sum_t log alpha_{t,k_t}  -  lambda_e sum_b sum_t H(alpha_t),
// where R_b is the log-likelihood of sentence b's target (the trainer passes it in), the baseline
// is a moving average of the batch mean of R (decay 0.9, kept as a buffer so it is checkpointed),
// and lambda_e = 0.01 is the entropy bonus. Choices: target steps past a sentence's end also
// sample; their choice does not change R, so they add variance but no bias.
#pragma once
#include "attention/attention.h"
#include "attention/score.h"
#include "config/config.h"

namespace attnmt {

class HardAttention : public ScoredAttention {
 public:
  HardAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;
  torch::Tensor take_auxiliary_loss(const torch::Tensor& sentence_log_likelihood,
                                    const torch::Tensor& target_lengths) override;

  static constexpr double kEntropyBonus = 0.01;
  static constexpr double kBaselineDecay = 0.9;

 private:
  torch::Tensor baseline_;      // [1] buffer; NaN until the first batch
  torch::Tensor log_prob_sum_;  // [B] sum_t log alpha_{t,k_t} since the last take
  torch::Tensor entropy_sum_;   // [B] sum_t H(alpha_t)
};

}  // namespace attnmt
