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
// One kernel per instruction set (util/cpu_kernels.h's Int8Kernel, chosen at run time):
//  - AVX2: vpmaddubsw into int16 pairs, vpmaddwd into int32 (the 7-bit input above is for this);
//  - AVX-VNNI / AVX512-VNNI: vpdpbusd, u8 x s8 summed in fours straight into int32, on 8 / 16
//    columns a register: a 16-column block's 4 k are one 64-byte zmm load as packed;
//  - AMX-INT8: oneDNN's brgemm (u8 x s8 -> s32 tiles) on its own reorder of the same qw, then the
//    same dequantisation as here; oneDNN asks the OS for the tiles itself. AVX512-VNNI takes the
//    same oneDNN path from 16 rows (its brgemm outruns the kernel here there; below, the kernel
//    wins: no packing of the input, no call overhead).
//  - portable: plain loops, any CPU.
// All of them quantise the same way and compute the same int32 sums, and dequantise with the same
// float operations in the same order, so every kernel gives bit-identical results (the test runs
// every kernel the CPU has against the portable one). Torch-free; the caller splits the column
// blocks over threads (`multiply` is const and thread-safe), except where oneDNN runs the product
// whole on the calling thread's OpenMP team (multiply_whole).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "util/cpu_kernels.h"

namespace attnmt {

// Input rows quantised for Int8Matrix::multiply.
struct Int8Rows {
  int64_t rows = 0, padded_cols = 0;
  // [Int8Matrix::product_rows(rows), padded_cols]: qx + 64 (padding, and rows past `rows`: 64,
  // i.e. qx = 0)
  std::vector<uint8_t> values;
  std::vector<float> scales;  // [rows] sx
};

class Int8Matrix {
 public:
  static constexpr int64_t kBlock = 16;  // output columns per packed block
  static constexpr int kWeightMax = 127, kInputMax = 63;

  Int8Matrix();
  // weight [n, k] row-major fp32, bias [n] or null.
  Int8Matrix(const float* weight, const float* bias, int64_t n, int64_t k);
  Int8Matrix(Int8Matrix&&) noexcept;
  Int8Matrix& operator=(Int8Matrix&&) noexcept;
  ~Int8Matrix();

  int64_t rows() const { return n_; }   // N: outputs
  int64_t cols() const { return k_; }   // K: inputs
  int64_t blocks() const { return (n_ + kBlock - 1) / kBlock; }
  // The quantised weight qw[n, k] and its scale sw[n] (tests and the int8 export).
  int8_t value(int64_t n, int64_t k) const;
  float scale(int64_t n) const { return scales_[static_cast<size_t>(n)]; }

  // x [m, cols()] row-major -> rows quantised for this matrix.
  void quantize(const float* x, int64_t m, Int8Rows& out, Int8Kernel kernel = kernel_in_use()) const;
  // y[r, c] for the output columns of blocks [first_block, end_block); y row-major with leading
  // dimension ldy (>= rows()). Where multiply_whole, every block is computed. y_rows: the rows y
  // has room for; with product_rows(x.rows) of them and ldy == blocks() * kBlock, oneDNN writes its
  // int32 sums into y itself and they are dequantised in place (no second buffer to stream).
  void multiply(const Int8Rows& x, int64_t first_block, int64_t end_block, float* y, int64_t ldy,
                Int8Kernel kernel = kernel_in_use(), int64_t y_rows = 0) const;
  // The rows a product of m rows computes: m, or where oneDNN runs it (multiply_whole), m rounded
  // up as its kernels are made (1, 2, 4, 8, then multiples of 8), the extra rows zero.
  static int64_t product_rows(Int8Kernel kernel, int64_t m);
  // Whether `rows` rows run on all blocks at once, threaded by oneDNN on the caller's OpenMP team,
  // rather than on the caller's split of the blocks: AMX always, AVX512-VNNI from 16 rows (oneDNN's
  // brgemm is faster there, attnmt's below: docs/performance.md); never without oneDNN.
  static bool multiply_whole(Int8Kernel kernel, int64_t rows);

  // The kernel this process uses: the best of this_cpu_flags() (ATTNMT_CPU_ISA caps it).
  static Int8Kernel kernel_in_use();

 private:
  int64_t n_ = 0, k_ = 0, padded_k_ = 0;
  std::vector<int8_t> packed_;      // [blocks][padded_k / 4][16 columns][4]
  std::vector<float> scales_;       // [blocks * 16] sw (0 for a zero row and for padding)
  std::vector<float> bias_;         // [blocks * 16]
  std::vector<int32_t> shift_sum_;  // [blocks * 16] 64 * sum_k qw[n, k]
  struct OneDnn;                     // oneDNN's reorder of qw and its primitives, made at first use
  struct OneDnnSlot;                 // (its once_flag: made at construction, so that Int8Matrix moves)
  std::unique_ptr<OneDnnSlot> onednn_;
  const OneDnn& onednn() const;
  std::unique_ptr<OneDnn> make_onednn() const;
  void dequantize(const int32_t* sums, int64_t ld_sums, const Int8Rows& x, int64_t first_block, int64_t end_block,
                  float* y, int64_t ldy) const;
};

}  // namespace attnmt
