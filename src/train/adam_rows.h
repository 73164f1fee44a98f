// The one-pass Adam update's loop over a run of parameters (train/optimizer.cpp drives it).
// Torch-free and in a file of its own: it is compiled with -fno-math-errno (CMakeLists.txt), so that
// sqrt needs no scalar errno path and the loop vectorises (AVX-512 / AVX2 / baseline clones): as a
// scalar loop the update was a visible share of a bf16 training step (docs/performance.md, "Adam's
// loop vectorised").
#pragma once
#include <cstdint>

namespace attnmt {

struct AdamConstants {
  float scale;            // gradient multiplier (clipping), 1 = none
  float weight_decay;     // added to the gradient times the parameter
  float beta1, beta2;
  float one_minus_beta1, one_minus_beta2;
  float inv_sqrt_bc2;     // 1 / sqrt(1 - beta2^step)
  float eps;
  float step_size;        // lr / (1 - beta1^step)
};

// g = scale grad + weight_decay p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= step_size m / (sqrt(v) inv_sqrt_bc2 + eps). n elements from each pointer (no overlap).
void adam_rows(float* p, const float* grad, float* m, float* v, int64_t n, const AdamConstants& c);

}  // namespace attnmt
