#include "attention/area.h"

namespace attnmt {

namespace F = torch::nn::functional;

AreaAttention::AreaAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : ScoredAttention(config, query_size, memory_size), max_area_(config.max_area) {}

AttentionMemory AreaAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = ScoredAttention::prepare(memory, mask);  // keys [B, S, K] per position
  const int64_t S = memory.size(1);
  std::vector<torch::Tensor> keys, values, masks;
  for (int64_t w = 1; w <= std::min(max_area_, S); ++w) {
    // Areas [s, s + w) for s = 0 .. S - w, in that order.
    keys.push_back(m.keys.unfold(1, w, 1).mean(3));    // [B, S - w + 1, K]
    values.push_back(memory.unfold(1, w, 1).sum(3));   // [B, S - w + 1, Dm]
    auto end = torch::arange(w, S + 1, m.lengths.options()).unsqueeze(0);  // [1, S - w + 1]
    masks.push_back(end <= m.lengths.unsqueeze(1));
  }
  m.extra = {torch::cat(keys, 1), torch::cat(values, 1), torch::cat(masks, 1)};  // over all areas
  return m;
}

AttentionOutput AreaAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                       const AttentionState& state, int64_t /*step*/) {
  const auto& area_keys = memory.extra.at(0);
  auto beta = masked_softmax(score_(query, area_keys), memory.extra.at(2));  // [B, areas]
  auto context = weighted_sum(beta, memory.extra.at(1));
  // Spread each area's weight over its positions: [B, S].
  const int64_t S = memory.mask.size(1);
  auto weights = torch::zeros({beta.size(0), S}, beta.options());
  int64_t offset = 0;
  for (int64_t w = 1; w <= std::min(max_area_, S); ++w) {
    auto share = beta.narrow(1, offset, S - w + 1) / static_cast<double>(w);  // [B, S - w + 1]
    for (int64_t k = 0; k < w; ++k) weights = weights + F::pad(share, F::PadFuncOptions({k, w - 1 - k}));
    offset += S - w + 1;
  }
  return {context, weights, state};
}

AttentionMemory AreaAttention::extend(const AttentionMemory& memory, const torch::Tensor& row) {
  if (!memory.values.defined()) return Attention::extend(memory, row);
  auto values = torch::cat({memory.values, row.unsqueeze(1)}, 1);  // values are the encoder states here
  return prepare(values, torch::ones({values.size(0), values.size(1)}, row.options().dtype(torch::kBool)));
}

}  // namespace attnmt
