// y = x W^T + b with W quantised to int8 once (per output row) and x quantised at each product
// (per input row), accumulated exactly in int32 and dequantised into fp32 (decode.precision: int8).
//
//   W[n, :] ~ sw[n] * qw[n, :],  qw in [-127, 127], sw[n] = max_k |W[n, k]| / 127
//   x[m, :] ~ sx[m] * qx[m, :],  qx in [-63, 63],   sx[m] = max_k |x[m, k]| / 63
//   y[m, n] = sx[m] sw[n] sum_k qx[m, k] qw[n, k] + b[n]
//
// Why attnmt's own kernel and not oneDNN's int8 matmul: oneDNN 2.6 (Debian bookworm) has brgemm
// int8 kernels only from AVX512-VNNI up; on AVX2 its matmul falls back to a gemm that repacks the
// weight at every call (slower than fp32 at a beam's 5 rows) and that saturates: it shifts s8
// inputs to u8 and multiplies pairs into int16 with vpmaddubsw, and 255 * 127 * 2 overflows (errors
// of 0.6 on logits of 4). Here the input is kept to 7 bits and shifted by +64 into [1, 127], so
// that a pair is at most 2 * 127 * 127 = 32,258 and never saturates; the shift is taken back
// exactly by 64 * sum_k qw[n, k], precomputed per row. The weight is packed once into 16-column
// blocks read in order (docs/performance.md has the figures per product).
//
// The sums are exact integers, so the AVX2 kernel and the portable loop give bit-identical results
// (the portable one runs where the CPU has no AVX2). Torch-free; the caller splits the column
// blocks over threads (`multiply` is const and thread-safe).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace attnmt {

// Input rows quantised for Int8Matrix::multiply.
struct Int8Rows {
  int64_t rows = 0, padded_cols = 0;
  std::vector<uint8_t> values;  // [rows, padded_cols]: qx + 64 (padding: 64, i.e. qx = 0)
  std::vector<float> scales;    // [rows] sx
};

class Int8Matrix {
 public:
  static constexpr int64_t kBlock = 16;  // output columns per packed block
  static constexpr int kWeightMax = 127, kInputMax = 63;

  Int8Matrix() = default;
  // weight [n, k] row-major fp32, bias [n] or null.
  Int8Matrix(const float* weight, const float* bias, int64_t n, int64_t k);

  int64_t rows() const { return n_; }   // N: outputs
  int64_t cols() const { return k_; }   // K: inputs
  int64_t blocks() const { return (n_ + kBlock - 1) / kBlock; }
  // The quantised weight qw[n, k] and its scale sw[n] (tests and the int8 export).
  int8_t value(int64_t n, int64_t k) const;
  float scale(int64_t n) const { return scales_[static_cast<size_t>(n)]; }

  // x [m, cols()] row-major -> rows quantised for this matrix.
  void quantize(const float* x, int64_t m, Int8Rows& out) const;
  // y[r, c] for the output columns of blocks [first_block, end_block); y row-major with leading
  // dimension ldy (>= rows()).
  void multiply(const Int8Rows& x, int64_t first_block, int64_t end_block, float* y, int64_t ldy) const;

 private:
  int64_t n_ = 0, k_ = 0, padded_k_ = 0;
  std::vector<int8_t> packed_;      // [blocks][padded_k / 4][16 columns][4]
  std::vector<float> scales_;       // [blocks * 16] sw (0 for a zero row and for padding)
  std::vector<float> bias_;         // [blocks * 16]
  std::vector<int32_t> shift_sum_;  // [blocks * 16] 64 * sum_k qw[n, k]
};

// Whether Int8Matrix runs its AVX2 kernel on this CPU (else the portable loop).
bool int8_kernel_avx2();

}  // namespace attnmt
