// y = x W^T + b for a weight that does not change (decoding): W is reordered once into oneDNN's
// blocked layout, and every product runs through oneDNN's matmul (brgemm kernels) on it.
//
// Why: a decoder step multiplies a few dozen to a few hundred rows by fixed weights (the output
// layer is 8,000 x 256). OpenBLAS packs both operands on every call, so for such short products
// it spends as much time copying the weight as multiplying; on the packed weight oneDNN runs them
// much faster, in fp32 and more so in bf16 (docs/performance.md, "Decoding on packed weights").
//
// fp32 computes the same products as LibTorch up to the order of the sums (max difference ~1e-4
// on 8,000 logits). bf16 rounds x and W to bfloat16 and accumulates in fp32. int8 quantises W per
// output row once and x per row at each product, and multiplies in attnmt's own int8 kernel
// (runtime/int8_gemm.h), with or without oneDNN.
// Without oneDNN at build time (ATTNMT_WITH_DNNL unset), on a non-CPU tensor, or for a dtype
// other than fp32, the product falls back to torch::addmm on the original weight.
// Thread-safe: one PackedLinear may run in several decoding threads at once. oneDNN runs on the
// calling thread's OpenMP team (at::set_num_threads in that thread).
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>

#include "util/cpu_kernels.h"

namespace attnmt {

// The operands' type of a packed product (decode.precision).
enum class ProductPrecision { kFp32, kBf16, kInt8 };

class PackedLinear {
 public:
  // weight [N, K], bias [N] or undefined. bf16: the products in bfloat16 (fp32 accumulation and
  // output); fast with AVX512-BF16. Where oneDNN has no kernel for the CPU and type (bf16 wants
  // AVX-512), packed() is false and the products are LibTorch's, in fp32. int8 (a CPU fp32
  // weight): always packed, in int8.
  PackedLinear(const at::Tensor& weight, const at::Tensor& bias, ProductPrecision precision);
  PackedLinear(PackedLinear&&) noexcept;
  PackedLinear& operator=(PackedLinear&&) noexcept;
  ~PackedLinear();

  // x [M, K] -> [M, N] (fp32).
  at::Tensor operator()(const at::Tensor& x) const;
  // Whether products run on the packed weight (false: the torch::addmm fallback).
  bool packed() const;
  // Whether they run in int8.
  bool int8() const;
  // int8: the product by a kernel other than the process's (bench's ceilings per instruction set;
  // the kernel must be one this CPU runs: util/cpu_kernels.h's int8_kernels_runnable).
  at::Tensor int8_with(const at::Tensor& x, Int8Kernel kernel) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether this build has oneDNN (packed fp32 and bf16 products are possible at all).
bool packed_linear_available();

}  // namespace attnmt
