// Which library runs LibTorch's fp32 matrix products on the CPU (config key `gemm`).
//
// LibTorch (Debian's) multiplies fp32 matrices through the Fortran BLAS symbol sgemm_, which the
// dynamic linker resolves to OpenBLAS. attnmt defines sgemm_ itself (runtime/gemm.cpp), so every
// fp32 product LibTorch makes (the model's, autograd's, ATen's LSTM) comes here first, and goes
// to oneDNN's sgemm (JIT-compiled AVX-512/AVX2 kernels) or on to OpenBLAS: at the shapes of a
// training step oneDNN's is the faster (docs/performance.md).
// bf16 products do not pass through sgemm_ (LibTorch sends them to oneDNN already).
//
// Process-wide, like the thread count: set once per command from the config, before products run.
#pragma once
#include <cstdint>
#include <string>

#include "util/choices.h"

namespace attnmt {

// automatic (oneDNN where this build has it, else BLAS) | onednn | blas (config key `gemm`).
// Throws InputError naming the key for onednn in a build without oneDNN.
void use_gemm_backend(GemmBackend backend);
// What runs the products now: "oneDNN sgemm" or "BLAS sgemm".
std::string gemm_description();
// What runs a model's fp32 products: gemm_description() on the CPU, "the device's" on another device.
std::string gemm_description(bool on_cpu);
// Whether this build can route products to oneDNN at all.
bool onednn_gemm_available();
// Products oneDNN has run in this process (lets tests and --stats check that the routing works).
uint64_t onednn_gemm_calls();

}  // namespace attnmt
