// Which kinds of matrix-product kernels a CPU runs natively, decided from its feature flags.
//
// Why: a bf16 product has a native kernel only on CPUs with bfloat16 instructions (AVX512-BF16:
// AMD Zen 4 and later, Intel Cooper Lake and Sapphire Rapids; AMX-BF16 tiles: Intel Sapphire
// Rapids and later). Elsewhere oneDNN (2.6) has no bf16 matmul at all on AVX2 and emulates it on
// plain AVX-512, and LibTorch's own bf16 product is a scalar loop: on an AVX2-only CPU a bf16
// training update, and still more the decoder's output layer, takes many times as long as in fp32
// (issue 72; docs/performance.md, "Figures behind design choices in the code"). train/ refuses
// bf16 training there, decoding/ decodes in fp32.
//
// The decision is a pure function of a flag set (tested in tests/base/test_cpu_kernels.cpp); the
// flags of this machine are read once from /proc/cpuinfo. Torch-free.
#pragma once
#include <set>
#include <string>

namespace attnmt {

// Feature flags as Linux's /proc/cpuinfo names them: "avx2", "fma", "avx512f", "avx512_bf16",
// "amx_bf16", "amx_tile", "avx512_vnni", "avx_vnni", "amx_int8".
using CpuFlags = std::set<std::string>;

// The kernel class of bf16 matrix products (bfloat16 operands, fp32 accumulation).
enum class Bf16Kernel {
  kAmx,       // AMX tiles (amx_bf16 and amx_tile)
  kAvx512,    // AVX512-BF16 dot products (avx512_bf16)
  kEmulated,  // none: bfloat16 converted to fp32 and multiplied in software, slower than fp32
};

Bf16Kernel bf16_kernel(const CpuFlags& flags);
// "AMX-BF16" | "AVX512-BF16" | "emulated"
const char* bf16_kernel_name(Bf16Kernel kernel);
inline bool has_native_bf16(const CpuFlags& flags) { return bf16_kernel(flags) != Bf16Kernel::kEmulated; }

// Why bf16 products are emulated on a CPU with these flags, for a message, as one clause:
// "this CPU has no native bf16 matrix products (no avx512_bf16, no amx_bf16)". Empty where they
// have a native kernel.
std::string no_native_bf16(const CpuFlags& flags);
// How much slower than fp32 the emulation is there, as one clause for a message: the ratio
// measured on a CPU without AVX-512 (issue 72; docs/performance.md, "Figures behind design choices
// in the code"), "slower than fp32" with AVX-512 (oneDNN's emulation, not measured here).
std::string emulated_bf16_cost(const CpuFlags& flags);

// The flags of `flags` that decide which products are native (those named above), in that order,
// space-separated: what bench and the training log record about the CPU.
std::string kernel_flags(const CpuFlags& flags);

// This machine's flags: the first "flags" line of /proc/cpuinfo (what the OS and hypervisor let
// programs use); where there is none (not Linux), the flags named above as the compiler's
// __builtin_cpu_supports sees them. Read once.
const CpuFlags& this_cpu_flags();
// Parses /proc/cpuinfo's text: the flags of its first "flags" line (empty set when it has none).
CpuFlags parse_cpuinfo_flags(const std::string& cpuinfo);

}  // namespace attnmt
