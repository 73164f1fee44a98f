#include "attention/inference_products.h"

#include <ATen/Parallel.h>

#include <algorithm>

namespace attnmt {

namespace {

// Independent partial sums, one per SIMD lane of AVX-512, so that the compiler vectorises the
// dot product without reassociating a single sum.
constexpr int64_t kLanes = 16;

__attribute__((target_clones("avx512f", "avx2", "default"))) void dot_rows(
    const float* __restrict query, const float* __restrict keys, float* __restrict out, int64_t begin, int64_t end,
    int64_t S, int64_t D, int64_t group) {
  const int64_t whole = D - D % kLanes;
  for (int64_t n = begin; n < end; ++n) {
    const float* q = query + n * D;
    const float* memory = keys + (n / group) * S * D;
    for (int64_t s = 0; s < S; ++s) {
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
    int64_t end, int64_t S, int64_t D, int64_t group) {
  for (int64_t n = begin; n < end; ++n) {
    float* o = out + n * D;
    std::fill(o, o + D, 0.0f);
    const float* w = weights + n * S;
    const float* memory = values + (n / group) * S * D;
    for (int64_t s = 0; s < S; ++s) {
      const float ws = w[s];
      const float* v = memory + s * D;
      for (int64_t d = 0; d < D; ++d) o[d] += ws * v[d];
    }
  }
}

// Rows per task: enough that a task is worth a thread (~32k multiply-adds, ATen's grain).
int64_t grain(int64_t per_row) { return std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(1, per_row)); }

void check_shapes(const torch::Tensor& rows, const torch::Tensor& memory, int64_t group, int64_t row_width,
                  int64_t memory_dim, const char* what) {
  TORCH_CHECK(group >= 1 && memory.size(0) * group == rows.size(0), what, ": ", rows.size(0), " rows for ",
              memory.size(0), " memory rows in groups of ", group);
  TORCH_CHECK(rows.size(1) == row_width && memory.size(memory_dim) == row_width, what, ": sizes do not match");
}

}  // namespace

bool inference_products_apply(const torch::Tensor& rows, const torch::Tensor& memory) {
  if (!rows.device().is_cpu() || !memory.device().is_cpu()) return false;
  if (rows.scalar_type() != torch::kFloat || memory.scalar_type() != torch::kFloat) return false;
  if (rows.dim() != 2 || memory.dim() != 3) return false;
  return !(torch::GradMode::is_enabled() && (rows.requires_grad() || memory.requires_grad()));
}

torch::Tensor inference_dot_scores(const torch::Tensor& query_in, const torch::Tensor& keys_in, int64_t group) {
  const auto query = query_in.contiguous(), keys = keys_in.contiguous();
  const int64_t N = query.size(0), S = keys.size(1), D = keys.size(2);
  check_shapes(query, keys, group, D, 2, "inference_dot_scores");
  auto out = torch::empty({N, S}, query.options());
  const float* q = query.data_ptr<float>();
  const float* k = keys.data_ptr<float>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, N, grain(S * D), [&](int64_t b, int64_t e) { dot_rows(q, k, o, b, e, S, D, group); });
  return out;
}

torch::Tensor inference_weighted_sum(const torch::Tensor& weights_in, const torch::Tensor& values_in, int64_t group) {
  const auto weights = weights_in.contiguous(), values = values_in.contiguous();
  const int64_t N = weights.size(0), S = values.size(1), D = values.size(2);
  check_shapes(weights, values, group, S, 1, "inference_weighted_sum");
  auto out = torch::empty({N, D}, values.options());
  const float* w = weights.data_ptr<float>();
  const float* v = values.data_ptr<float>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, N, grain(S * D), [&](int64_t b, int64_t e) { context_rows(w, v, o, b, e, S, D, group); });
  return out;
}

}  // namespace attnmt
