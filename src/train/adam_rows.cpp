#include "train/adam_rows.h"

#include <cmath>

namespace attnmt {

__attribute__((target_clones("avx512f", "avx2", "default"))) void adam_rows(
    float* __restrict p, const float* __restrict grad, float* __restrict m, float* __restrict v, int64_t n,
    const AdamConstants& c) {
  const AdamConstants k = c;  // a local copy: no aliasing with the arrays
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] * k.scale + k.weight_decay * p[i];
    const float mi = k.beta1 * m[i] + k.one_minus_beta1 * g;
    const float vi = k.beta2 * v[i] + k.one_minus_beta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    p[i] -= k.step_size * mi / (std::sqrt(vi) * k.inv_sqrt_bc2 + k.eps);
  }
}

}  // namespace attnmt
