// The output layer's loss, one row of logits at a time (train/loss.cpp drives it, a chunk of rows
// per call). Torch-free and in a file of its own: compiled with -fopenmp-simd and
// -fno-math-errno (CMakeLists.txt), so that the max and sum reductions and exp vectorise
// (AVX-512 / AVX2 / baseline clones); as LibTorch ops the same pass took ~10 passes over the
// logits (conversions, bias, gather, max, subtract, exp, sum, conversion back).
#pragma once
#include <cstdint>

namespace attnmt {

// Rows [begin, end) of x [*, V] (overwritten with exp(x - max)), targets y[r]:
//   lse = max + log sum exp(x - max);  nll[r] = lse - x_y;  smooth[r] = lse - mean(x).
// With g (else nullptr, and colsum unused): the gradient of the row's smoothed loss
//   (1 - eps) nll + eps (lse - mean(x))  with respect to its logits,
//   g = softmax(x) - (1 - eps) onehot(y) - eps / V,
// written rounded to G (float, double, or uint16_t: bfloat16 bits, nearest even), and colsum[v] +=
// g (unrounded: the bias's gradient). Instantiated for (float, float), (float, uint16_t) and
// (double, double).
template <typename X, typename G>
void softmax_rows(X* x, const int64_t* y, int64_t begin, int64_t end, int64_t V, X eps, X* nll, X* smooth, G* g,
                  X* colsum);

}  // namespace attnmt
