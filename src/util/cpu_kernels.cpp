#include "util/cpu_kernels.h"

#include <fstream>
#include <iterator>
#include <sstream>

namespace attnmt {

namespace {

bool has(const CpuFlags& flags, const char* name) { return flags.count(name) > 0; }

// The flags that decide the kernel classes, in /proc/cpuinfo's names and order of kernel_flags().
constexpr const char* kKernelFlags[] = {"avx2",     "fma",         "avx512f",  "avx512_bf16", "amx_tile",
                                        "amx_bf16", "avx512_vnni", "avx_vnni", "amx_int8"};

// The same flags as the compiler's CPU check sees them (its own names: string literals only).
CpuFlags compiler_cpu_flags() {
  CpuFlags flags;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  __builtin_cpu_init();
#define ATTNMT_CPU_FLAG(linux_name, gcc_name) \
  if (__builtin_cpu_supports(gcc_name)) flags.insert(linux_name)
  ATTNMT_CPU_FLAG("avx2", "avx2");
  ATTNMT_CPU_FLAG("fma", "fma");
  ATTNMT_CPU_FLAG("avx512f", "avx512f");
  ATTNMT_CPU_FLAG("avx512_bf16", "avx512bf16");
  ATTNMT_CPU_FLAG("amx_tile", "amx-tile");
  ATTNMT_CPU_FLAG("amx_bf16", "amx-bf16");
  ATTNMT_CPU_FLAG("avx512_vnni", "avx512vnni");
  ATTNMT_CPU_FLAG("avx_vnni", "avxvnni");
  ATTNMT_CPU_FLAG("amx_int8", "amx-int8");
#undef ATTNMT_CPU_FLAG
#endif
  return flags;
}

}  // namespace

Bf16Kernel bf16_kernel(const CpuFlags& flags) {
  if (has(flags, "amx_bf16") && has(flags, "amx_tile")) return Bf16Kernel::kAmx;
  if (has(flags, "avx512_bf16")) return Bf16Kernel::kAvx512;
  return Bf16Kernel::kEmulated;
}

const char* bf16_kernel_name(Bf16Kernel kernel) {
  switch (kernel) {
    case Bf16Kernel::kAmx:
      return "AMX-BF16";
    case Bf16Kernel::kAvx512:
      return "AVX512-BF16";
    case Bf16Kernel::kEmulated:
      break;
  }
  return "emulated";
}

std::string no_native_bf16(const CpuFlags& flags) {
  if (has_native_bf16(flags)) return "";
  std::string lacks = "no avx512_bf16, ";
  lacks += has(flags, "amx_bf16") ? "no amx_tile" : "no amx_bf16";
  return "this CPU has no native bf16 matrix products (" + lacks + ")";
}

std::string emulated_bf16_cost(const CpuFlags& flags) {
  return has(flags, "avx512f") ? "slower than fp32" : "~14x slower than fp32";
}

std::string kernel_flags(const CpuFlags& flags) {
  std::string out;
  for (const char* name : kKernelFlags) {
    if (has(flags, name)) out += (out.empty() ? "" : " ") + std::string(name);
  }
  return out;
}

CpuFlags parse_cpuinfo_flags(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key != "flags") continue;
    std::istringstream words(line.substr(colon + 1));
    return CpuFlags(std::istream_iterator<std::string>(words), std::istream_iterator<std::string>());
  }
  return {};
}

const CpuFlags& this_cpu_flags() {
  static const CpuFlags flags = [] {
    std::ifstream in("/proc/cpuinfo");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto parsed = parse_cpuinfo_flags(text);
    return parsed.empty() ? compiler_cpu_flags() : parsed;
  }();
  return flags;
}

}  // namespace attnmt
