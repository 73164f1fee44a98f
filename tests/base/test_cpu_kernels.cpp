// util/cpu_kernels.h: the bf16 kernel class as a pure function of the CPU's flags, on the flag
// sets of real CPUs (their /proc/cpuinfo, trimmed), and the parsing of /proc/cpuinfo.
#include <catch2/catch.hpp>

#include "build_features.h"
#include "util/cpu_kernels.h"

using attnmt::Bf16Kernel;
using attnmt::CpuFlags;
using attnmt::CpuIsa;
using attnmt::Int8Kernel;

namespace {

// issue 72's AMD EPYC (Zen 3 class: AVX2 and FMA, no AVX-512).
const CpuFlags kAvx2 = {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"};
// Intel Cascade Lake: AVX-512 and VNNI, no bf16 instructions.
const CpuFlags kAvx512 = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"};
// AMD Zen 4: AVX512-BF16 and both VNNIs, no AMX.
const CpuFlags kZen4 = {"avx2",        "fma",         "avx512f", "avx512bw", "avx512vl",
                        "avx512_vnni", "avx512_bf16", "avx_vnni"};
// Intel Sapphire Rapids: AMX tiles beside AVX512-BF16.
const CpuFlags kSapphireRapids = {"avx2",     "fma",      "avx512f",  "avx512bw", "avx512vl", "avx512_vnni",
                                  "avx512_bf16", "avx_vnni", "amx_bf16", "amx_tile", "amx_int8"};
// Intel Alder Lake (client): AVX-VNNI, no AVX-512.
const CpuFlags kAlderLake = {"avx2", "fma", "avx_vnni"};

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
        "avx2 fma avx512f avx512bw avx512vl avx512_bf16 amx_tile amx_bf16 avx512_vnni avx_vnni amx_int8");
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

TEST_CASE("int8 kernel: the fastest the flags allow, and every one below it", "[cpu_kernels][isa]") {
  CHECK(attnmt::int8_kernel({}) == Int8Kernel::kPortable);
  CHECK(attnmt::int8_kernel({"avx2"}) == Int8Kernel::kPortable);  // the AVX2 kernel uses FMA too
  CHECK(attnmt::int8_kernel(kAvx2) == Int8Kernel::kAvx2);
  CHECK(attnmt::int8_kernel(kAlderLake) == Int8Kernel::kAvxVnni);
  CHECK(attnmt::int8_kernel(kAvx512) == Int8Kernel::kAvx512Vnni);  // Cascade Lake: no AVX-VNNI needed
  CHECK(attnmt::int8_kernel(kZen4) == Int8Kernel::kAvx512Vnni);
  // AVX512-VNNI without AVX512BW (no such CPU, but the kernel needs both): AVX2.
  CHECK(attnmt::int8_kernel({"avx2", "fma", "avx512f", "avx512vl", "avx512_vnni"}) == Int8Kernel::kAvx2);
#ifdef ATTNMT_WITH_DNNL
  CHECK(attnmt::int8_kernel(kSapphireRapids) == Int8Kernel::kAmx);
#else
  CHECK(attnmt::int8_kernel(kSapphireRapids) == Int8Kernel::kAvx512Vnni);
#endif
  using V = std::vector<Int8Kernel>;
  CHECK(attnmt::int8_kernels_runnable({}) == V{Int8Kernel::kPortable});
  CHECK(attnmt::int8_kernels_runnable(kAvx2) == V{Int8Kernel::kPortable, Int8Kernel::kAvx2});
  CHECK(attnmt::int8_kernels_runnable(kAvx512) == V{Int8Kernel::kPortable, Int8Kernel::kAvx2, Int8Kernel::kAvx512Vnni});
  CHECK(attnmt::int8_kernels_runnable(kZen4) ==
        V{Int8Kernel::kPortable, Int8Kernel::kAvx2, Int8Kernel::kAvxVnni, Int8Kernel::kAvx512Vnni});
  CHECK(std::string(attnmt::int8_kernel_name(Int8Kernel::kAvx512Vnni)) == "AVX512-VNNI");
  CHECK(std::string(attnmt::int8_kernel_name(Int8Kernel::kAvxVnni)) == "AVX-VNNI");
  CHECK(std::string(attnmt::int8_kernel_name(Int8Kernel::kPortable)) == "portable");
}

TEST_CASE("ATTNMT_CPU_ISA: levels, caps, and the flag a CPU lacks", "[cpu_kernels][isa]") {
  CHECK(attnmt::best_cpu_isa({}) == CpuIsa::kPortable);
  CHECK(attnmt::best_cpu_isa(kAvx2) == CpuIsa::kAvx2);
  CHECK(attnmt::best_cpu_isa(kAlderLake) == CpuIsa::kAvx2Vnni);
  CHECK(attnmt::best_cpu_isa(kAvx512) == CpuIsa::kAvx512Vnni);
  CHECK(attnmt::best_cpu_isa(kZen4) == CpuIsa::kAvx512Bf16);
  CHECK(attnmt::best_cpu_isa(kSapphireRapids) == CpuIsa::kAmx);
  CHECK(attnmt::cpu_isa_names() == "portable|avx2|avx2_vnni|avx512|avx512_vnni|avx512_bf16|amx");

  // The empty setting: the CPU's best. A level it has: that level. One it lacks: the missing flag.
  CHECK(attnmt::parse_cpu_isa("", kZen4) == CpuIsa::kAvx512Bf16);
  CHECK(attnmt::parse_cpu_isa("avx2", kZen4) == CpuIsa::kAvx2);
  CHECK(attnmt::parse_cpu_isa("portable", {}) == CpuIsa::kPortable);
  CHECK_THROWS_WITH(attnmt::parse_cpu_isa("amx", kZen4), "ATTNMT_CPU_ISA=amx: this CPU has no amx_tile");
  CHECK_THROWS_WITH(attnmt::parse_cpu_isa("avx2_vnni", kAvx512), "ATTNMT_CPU_ISA=avx2_vnni: this CPU has no avx_vnni");
  CHECK_THROWS_WITH(attnmt::parse_cpu_isa("avx512_bf16", kAvx2), "ATTNMT_CPU_ISA=avx512_bf16: this CPU has no avx512f");
  CHECK_THROWS_WITH(attnmt::parse_cpu_isa("AVX2", kZen4),
                    "ATTNMT_CPU_ISA=AVX2: not an instruction-set level "
                    "(portable|avx2|avx2_vnni|avx512|avx512_vnni|avx512_bf16|amx)");

  // A cap takes out the flags of the levels above it, and so the kernels they would choose.
  const auto capped = [](const CpuFlags& flags, CpuIsa cap) { return attnmt::cap_cpu_flags(flags, cap); };
  CHECK(attnmt::int8_kernel(capped(kSapphireRapids, CpuIsa::kAvx512Bf16)) == Int8Kernel::kAvx512Vnni);
  CHECK(attnmt::bf16_kernel(capped(kSapphireRapids, CpuIsa::kAvx512Bf16)) == Bf16Kernel::kAvx512);
  CHECK(attnmt::bf16_kernel(capped(kSapphireRapids, CpuIsa::kAvx512Vnni)) == Bf16Kernel::kEmulated);
  CHECK(attnmt::int8_kernel(capped(kZen4, CpuIsa::kAvx512)) == Int8Kernel::kAvxVnni);
  CHECK(attnmt::int8_kernel(capped(kZen4, CpuIsa::kAvx2Vnni)) == Int8Kernel::kAvxVnni);
  CHECK(attnmt::int8_kernel(capped(kZen4, CpuIsa::kAvx2)) == Int8Kernel::kAvx2);
  CHECK(attnmt::int8_kernel(capped(kZen4, CpuIsa::kPortable)) == Int8Kernel::kPortable);
  CHECK(capped(kZen4, CpuIsa::kAvx2) == CpuFlags{"avx2", "fma"});
  CHECK(capped({"sse4_2", "avx2", "fma", "avx512f"}, CpuIsa::kPortable) == CpuFlags{"sse4_2"});  // unnamed flags stay
  CHECK(capped(kZen4, CpuIsa::kAmx) == kZen4);
}
