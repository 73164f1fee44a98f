// util/cpu_kernels.h: the bf16 kernel class as a pure function of the CPU's flags, on the flag
// sets of real CPUs (their /proc/cpuinfo, trimmed), and the parsing of /proc/cpuinfo.
#include <catch2/catch.hpp>

#include "util/cpu_kernels.h"

using attnmt::Bf16Kernel;
using attnmt::CpuFlags;

namespace {

// issue 72's AMD EPYC (Zen 3 class: AVX2 and FMA, no AVX-512).
const CpuFlags kAvx2 = {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"};
// Intel Cascade Lake: AVX-512 and VNNI, no bf16 instructions.
const CpuFlags kAvx512 = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"};
// AMD Zen 4: AVX512-BF16, no AMX.
const CpuFlags kZen4 = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"};
// Intel Sapphire Rapids: AMX tiles beside AVX512-BF16.
const CpuFlags kSapphireRapids = {"avx2",     "fma",      "avx512f",  "avx512_vnni", "avx512_bf16",
                                  "avx_vnni", "amx_bf16", "amx_tile", "amx_int8"};

}  // namespace

TEST_CASE("bf16 kernel class: native only with bfloat16 instructions", "[cpu_kernels]") {
  CHECK(attnmt::bf16_kernel(kSapphireRapids) == Bf16Kernel::kAmx);
  CHECK(attnmt::bf16_kernel(kZen4) == Bf16Kernel::kAvx512);
  CHECK(attnmt::bf16_kernel(kAvx512) == Bf16Kernel::kEmulated);
  CHECK(attnmt::bf16_kernel(kAvx2) == Bf16Kernel::kEmulated);
  CHECK(attnmt::bf16_kernel({}) == Bf16Kernel::kEmulated);
  CHECK(attnmt::has_native_bf16(kSapphireRapids));
  CHECK(attnmt::has_native_bf16(kZen4));
  CHECK_FALSE(attnmt::has_native_bf16(kAvx512));
  CHECK_FALSE(attnmt::has_native_bf16(kAvx2));
  // AMX needs its tiles as well as the bf16 instruction; without them AVX512-BF16 remains.
  CHECK(attnmt::bf16_kernel({"amx_bf16", "amx_tile"}) == Bf16Kernel::kAmx);
  CHECK(attnmt::bf16_kernel({"amx_bf16", "avx512_bf16"}) == Bf16Kernel::kAvx512);
  CHECK(attnmt::bf16_kernel({"amx_bf16"}) == Bf16Kernel::kEmulated);
  // int8 instructions do not make bf16 products native.
  CHECK(attnmt::bf16_kernel({"avx512_vnni", "avx_vnni", "amx_int8", "amx_tile"}) == Bf16Kernel::kEmulated);

  CHECK(std::string(attnmt::bf16_kernel_name(Bf16Kernel::kAmx)) == "AMX-BF16");
  CHECK(std::string(attnmt::bf16_kernel_name(Bf16Kernel::kAvx512)) == "AVX512-BF16");
  CHECK(std::string(attnmt::bf16_kernel_name(Bf16Kernel::kEmulated)) == "emulated");
}

TEST_CASE("bf16 kernel class: what a message says the CPU lacks, and what it costs", "[cpu_kernels]") {
  CHECK(attnmt::no_native_bf16(kAvx2) == "this CPU has no native bf16 matrix products (no avx512_bf16, no amx_bf16)");
  CHECK(attnmt::no_native_bf16(kAvx512) == attnmt::no_native_bf16(kAvx2));
  CHECK(attnmt::no_native_bf16({"amx_bf16"}) ==
        "this CPU has no native bf16 matrix products (no avx512_bf16, no amx_tile)");
  CHECK(attnmt::no_native_bf16(kZen4).empty());
  CHECK(attnmt::no_native_bf16(kSapphireRapids).empty());
  CHECK(attnmt::emulated_bf16_cost(kAvx2) == "~14x slower than fp32");  // measured there (issue 72)
  CHECK(attnmt::emulated_bf16_cost(kAvx512) == "slower than fp32");
}

TEST_CASE("kernel flags: the flags that decide the kernels, in a fixed order", "[cpu_kernels]") {
  CHECK(attnmt::kernel_flags(kAvx2) == "avx2 fma");
  CHECK(attnmt::kernel_flags(kSapphireRapids) ==
        "avx2 fma avx512f avx512_bf16 amx_tile amx_bf16 avx512_vnni avx_vnni amx_int8");
  CHECK(attnmt::kernel_flags({}).empty());
}

TEST_CASE("/proc/cpuinfo: the first processor's flags", "[cpu_kernels]") {
  const std::string cpuinfo =
      "processor\t: 0\n"
      "model name\t: AMD EPYC\n"
      "flags\t\t: fpu sse2 avx2 fma avx512_bf16\n"
      "bugs\t\t: sysret_ss_attrs\n"
      "\n"
      "processor\t: 1\n"
      "flags\t\t: fpu\n";
  CHECK(attnmt::parse_cpuinfo_flags(cpuinfo) == CpuFlags{"fpu", "sse2", "avx2", "fma", "avx512_bf16"});
  CHECK(attnmt::parse_cpuinfo_flags("processor\t: 0\nFeatures\t: fp asimd bf16\n").empty());  // not x86
  CHECK(attnmt::parse_cpuinfo_flags("").empty());
  // This machine: whatever it is, the decision and the message agree.
  const auto& flags = attnmt::this_cpu_flags();
  CHECK(attnmt::has_native_bf16(flags) == attnmt::no_native_bf16(flags).empty());
}
