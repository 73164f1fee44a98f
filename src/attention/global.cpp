#include "attention/global.h"

namespace attnmt {

GlobalAttention::GlobalAttention(ScoreKind kind, const AttentionConfig& config, int64_t query_size,
                                 int64_t memory_size)
    : ScoredAttention(kind, config, query_size, memory_size),
      coverage_(config.coverage),
      coverage_loss_weight_(config.coverage_loss) {}

AttentionState GlobalAttention::initial_state(const AttentionMemory& memory) const {
  if (!coverage_) return {};
  return {{torch::zeros(memory.mask.sizes(), memory.values.options())}};  // cov_0 = 0 [B, S]
}

AttentionOutput GlobalAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                         const AttentionState& state, int64_t /*step*/) {
  if (!coverage_) {
    auto weights = masked_softmax(score_(query, memory.keys), memory.mask);  // [B, S]
    return {weighted_sum(weights, memory.values), weights, state};
  }
  const auto& coverage = state.tensors.at(0);  // [B, S]
  auto weights = masked_softmax(score_(query, memory.keys, coverage), memory.mask);
  if (is_training() && coverage_loss_weight_ > 0) {
    auto term = torch::minimum(weights, coverage).sum();
    coverage_loss_ = coverage_loss_.defined() ? coverage_loss_ + term : term;
  }
  return {weighted_sum(weights, memory.values), weights, AttentionState{{coverage + weights}}};
}

torch::Tensor GlobalAttention::take_auxiliary_loss(const torch::Tensor& /*sentence_log_likelihood*/) {
  if (!coverage_loss_.defined()) return {};
  auto loss = coverage_loss_ * coverage_loss_weight_;
  coverage_loss_ = torch::Tensor();
  return loss;
}

}  // namespace attnmt
