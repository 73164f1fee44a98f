#include "attention/inference_products.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

namespace attnmt {

namespace {

// Independent partial sums, one per SIMD lane of AVX-512, so that the compiler vectorises the
// dot product without reassociating a single sum.
constexpr int64_t kLanes = 16;

__attribute__((target_clones("avx512f", "avx2", "default"))) void dot_rows(
    const float* __restrict query, const float* __restrict keys, float* __restrict out, int64_t begin, int64_t end,
    int64_t S, int64_t D, int64_t group, const int64_t* extent) {
  const int64_t whole = D - D % kLanes;
  for (int64_t n = begin; n < end; ++n) {
    const float* q = query + n * D;
    const float* memory = keys + (n / group) * S * D;
    const int64_t read = extent[n / group];
    std::fill(out + n * S + read, out + (n + 1) * S, 0.0f);
    for (int64_t s = 0; s < read; ++s) {
      const float* k = memory + s * D;
      float lanes[kLanes] = {};
      for (int64_t d = 0; d < whole; d += kLanes) {
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] += q[d + j] * k[d + j];
      }
      float total = 0.0f;
      for (int64_t d = whole; d < D; ++d) total += q[d] * k[d];
      for (int64_t j = 0; j < kLanes; ++j) total += lanes[j];
      out[n * S + s] = total;
    }
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void context_rows(
    const float* __restrict weights, const float* __restrict values, float* __restrict out, int64_t begin,
    int64_t end, int64_t S, int64_t D, int64_t group, const int64_t* extent) {
  for (int64_t n = begin; n < end; ++n) {
    float* o = out + n * D;
    std::fill(o, o + D, 0.0f);
    const float* w = weights + n * S;
    const float* memory = values + (n / group) * S * D;
    const int64_t read = extent[n / group];
    for (int64_t s = 0; s < read; ++s) {
      const float ws = w[s];
      const float* v = memory + s * D;
      for (int64_t d = 0; d < D; ++d) o[d] += ws * v[d];
    }
  }
}

// Rows per task: enough that a task is worth a thread (~32k multiply-adds, ATen's grain).
int64_t grain(int64_t per_row) { return std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(1, per_row)); }

using RowsKernel = void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                            const int64_t*);

// Per memory row, the positions read: up to its mask's last true one (all S without a mask, or
// where none is true).
std::vector<int64_t> read_extents(const torch::Tensor& mask_in, int64_t B, int64_t S, const char* what) {
  std::vector<int64_t> extent(static_cast<size_t>(B), S);
  if (!mask_in.defined()) return extent;
  TORCH_CHECK(mask_in.dim() == 2 && mask_in.size(0) == B && mask_in.size(1) == S && mask_in.scalar_type() == torch::kBool,
              what, ": the mask is not [", B, ", ", S, "] bool");
  const auto mask = mask_in.to(torch::kCPU).contiguous();
  const bool* m = mask.data_ptr<bool>();
  for (int64_t b = 0; b < B; ++b) {
    int64_t e = S;
    while (e > 0 && !m[b * S + e - 1]) --e;
    if (e > 0) extent[static_cast<size_t>(b)] = e;
  }
  return extent;
}

// rows [N, W] against memory [N / group, S, D] -> [N, S] (scores: W = D) or [N, D] (contexts:
// W = S), the kernel run over slices of the rows in parallel.
torch::Tensor over_rows(const torch::Tensor& rows_in, const torch::Tensor& memory_in, int64_t group,
                        const torch::Tensor& mask, bool scores, RowsKernel kernel, const char* what) {
  const auto rows = rows_in.contiguous(), memory = memory_in.contiguous();
  const int64_t N = rows.size(0), S = memory.size(1), D = memory.size(2);
  TORCH_CHECK(group >= 1 && memory.size(0) * group == N, what, ": ", N, " rows for ", memory.size(0),
              " memory rows in groups of ", group);
  TORCH_CHECK(rows.size(1) == (scores ? D : S), what, ": sizes do not match");
  const auto extent = read_extents(mask, memory.size(0), S, what);
  auto out = torch::empty({N, scores ? S : D}, rows.options());
  const float* r = rows.data_ptr<float>();
  const float* m = memory.data_ptr<float>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, N, grain(S * D), [&](int64_t b, int64_t e) { kernel(r, m, o, b, e, S, D, group, extent.data()); });
  return out;
}

}  // namespace

bool inference_products_apply(const torch::Tensor& rows, const torch::Tensor& memory) {
  if (!rows.device().is_cpu() || !memory.device().is_cpu()) return false;
  if (rows.scalar_type() != torch::kFloat || memory.scalar_type() != torch::kFloat) return false;
  if (rows.dim() != 2 || memory.dim() != 3) return false;
  return !(torch::GradMode::is_enabled() && (rows.requires_grad() || memory.requires_grad()));
}

torch::Tensor inference_dot_scores(const torch::Tensor& query, const torch::Tensor& keys, int64_t group,
                                   const torch::Tensor& mask) {
  return over_rows(query, keys, group, mask, /*scores=*/true, dot_rows, "inference_dot_scores");
}

torch::Tensor inference_weighted_sum(const torch::Tensor& weights, const torch::Tensor& values, int64_t group,
                                     const torch::Tensor& mask) {
  return over_rows(weights, values, group, mask, /*scores=*/false, context_rows, "inference_weighted_sum");
}

}  // namespace attnmt
