// Stochastic hard attention (Xu et al., 2015, "Show, Attend and Tell", section 4.1):
//   alpha_t = masked_softmax(score(q_t, h_.)),  c_t = h_k,
// with k ~ Categorical(alpha_t) while training and k = argmax_i alpha_{t,i} when decoding; the
// weights returned are the one-hot of k. Sampling is not differentiable, so the score learns by
// REINFORCE (eq. 11-12) with the paper's three variance reductions and two of ours:
//   - a moving-average baseline of the batch mean reward (decay 0.9, a checkpointed buffer);
//   - an entropy bonus lambda_e = 0.01;
//   - with probability 1/2 per sentence, its context is the expected value sum_i alpha_i h_i for
//     the whole batch (the paper's "set the sampled location to its expected value"); such
//     sentences learn by backpropagation and add no REINFORCE term;
//   - ours: the advantage is divided by the batch's standard deviation of the reward;
//   - ours: the REINFORCE term's gradient reaches the score's own parameters only (log alpha is
//     recomputed from the decoder states and encoder states with their gradients stopped).
// take_auxiliary_loss(R) returns
//   -sum_b [b sampled] (R_b - baseline) / sd(R) sum_t log alpha'_{t,k_t}  -  lambda_e sum_b sum_t H(alpha_t),
// where R_b is the log-likelihood of sentence b's target (the trainer passes it in). Without the
// last three, REINFORCE's gradient on the shared encoder and decoder states drowned the
// likelihood's (docs/attention_results.md has the measurements). Target steps past a sentence's
// end also sample; their choice does not change R, so they add variance but no bias.
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
  static constexpr double kExpectedValueShare = 0.5;  // sentences whose context is sum_i alpha_i h_i

 private:
  torch::Tensor baseline_;      // [1] buffer; NaN until the first batch
  // Per training batch, drawn at its first step:
  torch::Tensor sampled_rows_;   // [B] 1 = hard (sampled) context, 0 = expected value
  torch::Tensor detached_keys_;  // the keys of the encoder states with their gradient stopped
  torch::Tensor log_prob_sum_;   // [B] sum_t log alpha'_{t,k_t} since the last take (0 on expected rows)
  torch::Tensor entropy_sum_;    // [B] sum_t H(alpha_t)
};

}  // namespace attnmt
