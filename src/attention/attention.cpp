#include "attention/attention.h"

#include "attention/inference_products.h"

namespace attnmt {

namespace {
torch::Tensor select_defined(const torch::Tensor& t, const torch::Tensor& index) {
  return t.defined() ? t.index_select(0, index) : t;
}
}  // namespace

AttentionMemory AttentionMemory::index_select(const torch::Tensor& index) const {
  AttentionMemory out;
  out.values = select_defined(values, index);
  // keys often alias values: keep the alias instead of copying twice
  out.keys = keys.defined() && keys.is_same(values) ? out.values : select_defined(keys, index);
  out.mask = select_defined(mask, index);
  out.lengths = select_defined(lengths, index);
  out.extra.reserve(extra.size());
  for (const auto& t : extra) out.extra.push_back(select_defined(t, index));
  out.group = group;
  return out;
}

torch::Tensor AttentionMemory::row_mask() const {
  return group == 1 ? mask : mask.repeat_interleave(group, 0);
}

AttentionState AttentionState::index_select(const torch::Tensor& index) const {
  AttentionState out;
  out.tensors.reserve(tensors.size());
  for (const auto& t : tensors) out.tensors.push_back(select_defined(t, index));
  return out;
}

AttentionMemory Attention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  AttentionMemory m;
  m.values = memory;
  m.keys = memory;
  m.mask = mask;
  m.lengths = mask.sum(1);
  return m;
}

torch::Tensor masked_softmax(const torch::Tensor& scores, const torch::Tensor& mask) {
  return scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity())
      .softmax(-1);
}

torch::Tensor first_position_alignment(const AttentionMemory& memory) {
  auto alpha0 = torch::zeros(memory.mask.sizes(), memory.values.options());
  alpha0.select(1, 0).fill_(1.0);
  return alpha0;
}

torch::Tensor weighted_sum(const torch::Tensor& weights, const torch::Tensor& values, int64_t group) {
  if (inference_products_apply(weights, values)) return inference_weighted_sum(weights, values, group);
  // sum_i [B, S, 1] * [B, S, Dm] -> [B, Dm]. Not bmm: LibTorch's CPU bmm (and its backward)
  // loops over the batch with one small GEMM per sentence, several times slower at these sizes.
  if (group == 1) return (weights.unsqueeze(2) * values).sum(1);
  // [B, G, S, 1] * [B, 1, S, Dm] summed over S -> [B * G, Dm]
  return (weights.view({-1, group, weights.size(1), 1}) * values.unsqueeze(1)).sum(2).flatten(0, 1);
}

}  // namespace attnmt
