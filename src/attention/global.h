// Global attention (Luong et al., 2015, section 3.1; Bahdanau et al., 2015, A.1.2):
//   alpha_t = masked_softmax(score(q_t, h_.)),  c_t = sum_i alpha_{t,i} h_i,
// over every source position, with any score of score.h. The registry makes the names
//   bahdanau, luong_concat  (concat/additive), luong_dot (dot), luong_general (general),
//   scaled_dot (dot / sqrt(d))
// from this one class: they differ only in the score, and in the decoder style their configs pair
// them with (decoder.style: bahdanau for bahdanau).
//
// Coverage (model.attention.coverage, concat scores only; See et al., 2017, section 2.2):
//   cov_t = sum_{t'<t} alpha_{t'} is the per-step state (reordered with the beams), the score gets
//   the term w_c cov_{t,i}, and with model.attention.coverage_loss = lambda > 0 training adds
//   lambda * sum_t sum_i min(alpha_{t,i}, cov_{t,i}), summed over the real target steps only
//   (t < the sentence's target length: a padded step's attention is never used); the trainer
//   divides it by the batch's target tokens like the cross-entropy.
#pragma once
#include "attention/attention.h"
#include "attention/score.h"
#include "config/config.h"

namespace attnmt {

class GlobalAttention : public ScoredAttention {
 public:
  GlobalAttention(ScoreKind kind, const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionState initial_state(const AttentionMemory& memory) const override;
  bool shares_memory_across_beams() const override { return true; }
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;
  torch::Tensor take_auxiliary_loss(const torch::Tensor& sentence_log_likelihood,
                                    const torch::Tensor& target_lengths) override;

 private:
  bool coverage_;
  double coverage_loss_weight_;
  // Per decoder step since the last take_auxiliary_loss() (training): sum_i min(alpha, cov) [B].
  std::vector<torch::Tensor> coverage_terms_;
};

}  // namespace attnmt
