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
// int8 products likewise have one kernel per instruction set (runtime/int8_gemm.h): AVX2's
// vpmaddubsw, AVX-VNNI's and AVX512-VNNI's vpdpbusd, AMX-INT8's tiles; a portable loop elsewhere.
//
// ATTNMT_CPU_ISA caps the instruction sets every one of these decisions may use (as CTranslate2's
// CT2_FORCE_CPU_ISA does): the flags above the cap are taken out of this_cpu_flags(), and oneDNN's
// kernels are capped likewise (runtime/dnnl_engine.h). So one CPU runs, and its tests prove, every
// path below its own; asking for one it lacks is an error naming the missing flag.
//
// The decisions are pure functions of a flag set (tested in tests/base/test_cpu_kernels.cpp); the
// flags of this machine are read once from /proc/cpuinfo. Torch-free.
#pragma once
#include <set>
#include <string>
#include <vector>

namespace attnmt {

// Feature flags as Linux's /proc/cpuinfo names them: "avx2", "fma", "avx512f", "avx512bw",
// "avx512vl", "avx512_bf16", "amx_bf16", "amx_tile", "avx512_vnni", "avx_vnni", "amx_int8".
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

// The kernel of int8 products (decode.precision: int8), the fastest the flags allow.
enum class Int8Kernel {
  kPortable,    // plain C++ (any CPU)
  kAvx2,        // vpmaddubsw + vpmaddwd, 256 bits (avx2, fma)
  kAvxVnni,     // vpdpbusd, 256 bits (avx_vnni: Intel Alder Lake and later, AMD Zen 4 and later)
  kAvx512Vnni,  // vpdpbusd, 512 bits (avx512_vnni with avx512bw: Intel Cascade Lake and later, Zen 4)
  kAmx,         // AMX-INT8 tiles, through oneDNN's brgemm (amx_int8 and amx_tile: Sapphire Rapids)
};
Int8Kernel int8_kernel(const CpuFlags& flags);
// "portable" | "AVX2" | "AVX-VNNI" | "AVX512-VNNI" | "AMX-INT8"
const char* int8_kernel_name(Int8Kernel kernel);
// Every kernel a CPU with these flags can run, portable first (what the tests run it through).
std::vector<Int8Kernel> int8_kernels_runnable(const CpuFlags& flags);

// The instruction-set levels ATTNMT_CPU_ISA may name, lowest first; each enables the kernels that
// its flags (cpu_isa_flags) allow, and every level below it.
enum class CpuIsa { kPortable, kAvx2, kAvx2Vnni, kAvx512, kAvx512Vnni, kAvx512Bf16, kAmx };
// "portable" | "avx2" | "avx2_vnni" | "avx512" | "avx512_vnni" | "avx512_bf16" | "amx"
const char* cpu_isa_name(CpuIsa isa);
// All the levels, lowest first; "portable|avx2|..." for a message.
const std::vector<CpuIsa>& cpu_isas();
std::string cpu_isa_names();
// The flags a level needs (all of them).
std::vector<std::string> cpu_isa_flags(CpuIsa isa);
// The highest level the flags reach.
CpuIsa best_cpu_isa(const CpuFlags& flags);
// The flags with those of the levels above `cap` removed (flags no level names are kept).
CpuFlags cap_cpu_flags(const CpuFlags& flags, CpuIsa cap);
// ATTNMT_CPU_ISA's value checked against the flags: the level, or an InputError naming the value
// ("ATTNMT_CPU_ISA=amx: this CPU has no amx_int8") or listing the valid names. Empty: best_cpu_isa.
CpuIsa parse_cpu_isa(const std::string& value, const CpuFlags& flags);

// The flags of `flags` that decide which products are native (those named above), in that order,
// space-separated: what bench and the training log record about the CPU.
std::string kernel_flags(const CpuFlags& flags);

// This machine's flags: the first "flags" line of /proc/cpuinfo (what the OS and hypervisor let
// programs use); where there is none (not Linux), the flags named above as the compiler's
// __builtin_cpu_supports sees them; capped at ATTNMT_CPU_ISA. Read once.
const CpuFlags& this_cpu_flags();
// The same without the cap.
const CpuFlags& this_cpu_hardware_flags();
// The level this process runs at: ATTNMT_CPU_ISA, else the CPU's best. Throws InputError for a bad
// ATTNMT_CPU_ISA (the program's entry points call it first, so that the error comes at once).
CpuIsa this_cpu_isa();
// this_cpu_isa() at a program's start; where ATTNMT_CPU_ISA lowers the level below AVX-512,
// LibTorch's own vectorised operators are lowered too (ATEN_CPU_CAPABILITY, unless it is set).
void select_cpu_isa();
// Whether ATTNMT_CPU_ISA lowered the level (for the logs: "ATTNMT_CPU_ISA=avx2").
bool cpu_isa_forced();
// Parses /proc/cpuinfo's text: the flags of its first "flags" line (empty set when it has none).
CpuFlags parse_cpuinfo_flags(const std::string& cpuinfo);

}  // namespace attnmt
