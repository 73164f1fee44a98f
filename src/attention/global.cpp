#include "attention/global.h"

namespace attnmt {

GlobalAttention::GlobalAttention(ScoreKind kind, const AttentionConfig& config, int64_t query_size,
                                 int64_t memory_size)
    : ScoredAttention(kind, config, query_size, memory_size),
      coverage_(config.coverage),
      coverage_loss_weight_(config.coverage_loss) {}

AttentionState GlobalAttention::initial_state(const AttentionMemory& memory) const {
  if (!coverage_) return {};
  const int64_t rows = memory.mask.size(0) * memory.group;
  return {{torch::zeros({rows, memory.mask.size(1)}, memory.values.options())}};  // cov_0 = 0 [N, S]
}

AttentionOutput GlobalAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                         const AttentionState& state, int64_t /*step*/) {
  const int64_t group = memory.group;  // > 1: one memory row per sentence for its beams
  if (!coverage_) {
    // The mask spares the products the padding of a batch of mixed lengths (inference_products.h).
    auto weights = masked_softmax(score_(query, memory.keys, {}, group, memory.mask), memory.row_mask());  // [N, S]
    return {weighted_sum(weights, memory.values, group, memory.mask), weights, state};
  }
  const auto& coverage = state.tensors.at(0);  // [N, S]
  auto weights = masked_softmax(score_(query, memory.keys, coverage, group, memory.mask), memory.row_mask());
  if (is_training() && coverage_loss_weight_ > 0) {
    coverage_terms_.push_back(torch::minimum(weights, coverage).sum(1));  // [B]
  }
  return {weighted_sum(weights, memory.values, group, memory.mask), weights, AttentionState{{coverage + weights}}};
}

torch::Tensor GlobalAttention::take_auxiliary_loss(const torch::Tensor& /*sentence_log_likelihood*/,
                                                  const torch::Tensor& target_lengths) {
  if (coverage_terms_.empty()) return {};
  auto terms = torch::stack(coverage_terms_, 1);  // [B, T]
  coverage_terms_.clear();
  // Only the real target steps count: a padded step's attention is never used.
  auto steps = torch::arange(terms.size(1), target_lengths.options()).unsqueeze(0);
  auto real = steps.lt(target_lengths.to(terms.device()).unsqueeze(1)).to(terms.scalar_type());
  return (terms * real).sum() * coverage_loss_weight_;
}

}  // namespace attnmt
