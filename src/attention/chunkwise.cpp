#include "attention/chunkwise.h"

#include <limits>

namespace attnmt {

namespace {

constexpr double kTinySum = 1e-30;  // floor of a chunk's sum of exp(u) (all its terms underflowed)

// out_j = sum_{l=j-w+1}^{j} x_l (window ending at j: `ending`) or sum_{l=j}^{j+w-1} x_l (starting at j).
torch::Tensor moving_sum(const torch::Tensor& x, int64_t w, bool ending) {
  namespace F = torch::nn::functional;
  auto padded = F::pad(x, F::PadFuncOptions(ending ? std::vector<int64_t>{w - 1, 0} : std::vector<int64_t>{0, w - 1}));
  return padded.unfold(1, w, 1).sum(2);  // [B, S]
}

}  // namespace

torch::Tensor reachable_exp(const torch::Tensor& alpha, const torch::Tensor& energies, const torch::Tensor& mask) {
  const auto reach = mask.logical_and(alpha.flip({1}).cumsum(1).flip({1}).gt(0));  // sum_{j>=k} alpha_j > 0
  auto u = energies.masked_fill(reach.logical_not(), -std::numeric_limits<double>::infinity());
  auto top = std::get<0>(u.max(1, /*keepdim=*/true)).detach();  // [B, 1]; -inf for a row with no mass
  top = top.masked_fill(top.isinf(), 0.0);
  return torch::exp(u - top);  // exactly 0 where unreachable
}

torch::Tensor chunkwise_weights(const torch::Tensor& alpha, const torch::Tensor& energies, const torch::Tensor& mask,
                                int64_t chunk_size) {
  auto e = reachable_exp(alpha, energies, mask);  // [B, S]
  auto chunk_sums = moving_sum(e, chunk_size, /*ending=*/true).clamp_min(kTinySum);
  return e * moving_sum(alpha / chunk_sums, chunk_size, /*ending=*/false);
}

ChunkwiseAttention::ChunkwiseAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size)
    : MonotonicAttention(config, query_size, memory_size),
      chunk_size_(config.chunk_size),
      chunk_energy_(*this, ScoreKind::kConcat, query_size, memory_size,
                    additive_hidden_size(config.hidden_size, query_size), /*coverage=*/false, "chunkwise") {}

AttentionMemory ChunkwiseAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = MonotonicAttention::prepare(memory, mask);
  m.extra = {chunk_energy_.keys(memory)};  // [B, S, A]
  return m;
}

AttentionOutput ChunkwiseAttention::forward(const torch::Tensor& query, const AttentionMemory& memory,
                                            const AttentionState& state, int64_t /*step*/) {
  auto alpha = alignment(query, memory, state.tensors.at(0));  // [B, S]
  auto beta = soft_weights(alpha, chunk_energy_(query, memory.extra.at(0)), memory.mask);
  return {weighted_sum(beta, memory.values), beta, AttentionState{{alpha}}};
}

torch::Tensor ChunkwiseAttention::soft_weights(const torch::Tensor& alpha, const torch::Tensor& energies,
                                               const torch::Tensor& mask) const {
  return chunkwise_weights(alpha, energies, mask, chunk_size_);
}

}  // namespace attnmt
