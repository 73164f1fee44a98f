// c = a b (+ c) for bfloat16 operands with an fp32 result, through oneDNN's matmul (brgemm
// kernels on AVX512-BF16), for training's large products (the output layer and its gradients).
//
// Why not at::mm on bf16 tensors: it returns bfloat16, so an fp32 result costs a conversion pass,
// and an accumulated one (a weight's gradient over chunks) a conversion and an add; each of the
// loss's products is faster here (docs/performance.md).
#pragma once
#include <ATen/core/Tensor.h>

namespace attnmt {

// a [M, K] and b [K, N] bfloat16 with any strides (a transposed view is read as it is); c [M, N]
// fp32 with unit column stride; bias [N] fp32 or undefined. accumulate: c += a b (+ bias), else
// c = a b (+ bias). Runs on the calling thread's OpenMP team. Returns false, leaving c as it was,
// where it cannot run (a build without oneDNN, no kernel for this CPU, other types): the caller
// computes the product itself.
bool matmul_bf16_f32(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias, const at::Tensor& c,
                     bool accumulate);

// The same product in the operands' type, always: bfloat16 operands through matmul_bf16_f32, else
// LibTorch's bfloat16 product converted to c's type; fp32/fp64 operands through LibTorch's addmm
// (c of the same type). For the loss (train/loss.cpp) and the encoder layer (runtime/lstm_cell.h).
void matmul_into(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias, const at::Tensor& c,
                 bool accumulate);

// Whether CPU autocast is on in bfloat16 (train.precision: bf16): training's hand-written nodes
// (runtime/lstm_cell.h's lstm_layer, runtime/step_weight.h) then take bfloat16 operands.
bool cpu_autocast_bf16();

}  // namespace attnmt
