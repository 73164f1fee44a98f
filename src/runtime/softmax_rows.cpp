#include "runtime/softmax_rows.h"

#include <cmath>
#include <type_traits>

#include "runtime/bf16_bits.h"
#include "runtime/fast_exp.h"

namespace attnmt {

namespace {

template <typename G, typename X>
inline G round_to(X v) {
  if constexpr (std::is_same_v<G, uint16_t>) {
    return bf16_bits(static_cast<float>(v));
  } else {
    return static_cast<G>(v);
  }
}

}  // namespace

template <typename X, typename G>
__attribute__((target_clones("avx512f", "avx2", "default"))) void softmax_rows(
    X* __restrict x, const int64_t* __restrict y, int64_t begin, int64_t end, int64_t V, X eps, X* __restrict nll,
    X* __restrict smooth, G* __restrict g, X* __restrict colsum) {
  const X off = eps / static_cast<X>(V);
  for (int64_t r = begin; r < end; ++r) {
    X* __restrict row = x + r * V;
    const int64_t target = y[r];
    X max = row[0], total = 0;
#pragma omp simd reduction(max : max) reduction(+ : total)
    for (int64_t v = 0; v < V; ++v) {
      max = row[v] > max ? row[v] : max;
      total += row[v];
    }
    const X x_y = row[target];
    X sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t v = 0; v < V; ++v) {
      const X e = fast_exp(row[v] - max);
      row[v] = e;
      sum += e;
    }
    const X lse = max + std::log(sum);
    nll[r] = lse - x_y;
    smooth[r] = lse - total / static_cast<X>(V);
    if (!g) continue;
    const X inv = X(1) / sum;
    G* __restrict gr = g + r * V;
#pragma omp simd
    for (int64_t v = 0; v < V; ++v) {
      const X d = row[v] * inv - off;
      gr[v] = round_to<G>(d);
      colsum[v] += d;
    }
    const X d = row[target] * inv - off;
    gr[target] = round_to<G>(d - (X(1) - eps));
    colsum[target] -= X(1) - eps;
  }
}

template void softmax_rows<float, float>(float*, const int64_t*, int64_t, int64_t, int64_t, float, float*, float*,
                                         float*, float*);
template void softmax_rows<float, uint16_t>(float*, const int64_t*, int64_t, int64_t, int64_t, float, float*, float*,
                                            uint16_t*, float*);
template void softmax_rows<double, double>(double*, const int64_t*, int64_t, int64_t, int64_t, double, double*,
                                           double*, double*, double*);

}  // namespace attnmt
