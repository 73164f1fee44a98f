#include "util/cpu_kernels.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "build_features.h"
#include "util/error.h"

namespace attnmt {

namespace {

bool has(const CpuFlags& flags, const char* name) { return flags.count(name) > 0; }

// The flags that decide the kernel classes, in /proc/cpuinfo's names and order of kernel_flags().
constexpr const char* kKernelFlags[] = {"avx2",     "fma",      "avx512f",     "avx512bw", "avx512vl", "avx512_bf16",
                                        "amx_tile", "amx_bf16", "avx512_vnni", "avx_vnni", "amx_int8"};

bool has_all(const CpuFlags& flags, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    if (!flags.count(name)) return false;
  }
  return true;
}

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
  ATTNMT_CPU_FLAG("avx512bw", "avx512bw");
  ATTNMT_CPU_FLAG("avx512vl", "avx512vl");
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

Int8Kernel int8_kernel(const CpuFlags& flags) {
#ifdef ATTNMT_WITH_DNNL
  if (has_all(flags, cpu_isa_flags(CpuIsa::kAmx))) return Int8Kernel::kAmx;
#endif
  if (has_all(flags, cpu_isa_flags(CpuIsa::kAvx512Vnni))) return Int8Kernel::kAvx512Vnni;
  if (has_all(flags, cpu_isa_flags(CpuIsa::kAvx2Vnni))) return Int8Kernel::kAvxVnni;
  if (has_all(flags, cpu_isa_flags(CpuIsa::kAvx2))) return Int8Kernel::kAvx2;
  return Int8Kernel::kPortable;
}

const char* int8_kernel_name(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kAvx2:
      return "AVX2";
    case Int8Kernel::kAvxVnni:
      return "AVX-VNNI";
    case Int8Kernel::kAvx512Vnni:
      return "AVX512-VNNI";
    case Int8Kernel::kAmx:
      return "AMX-INT8";
    case Int8Kernel::kPortable:
      break;
  }
  return "portable";
}

std::vector<Int8Kernel> int8_kernels_runnable(const CpuFlags& flags) {
  std::vector<Int8Kernel> kernels;
  for (CpuIsa isa : cpu_isas()) {
    if (!has_all(flags, cpu_isa_flags(isa))) continue;
    const auto kernel = int8_kernel(cap_cpu_flags(flags, isa));
    if (kernels.empty() || kernels.back() != kernel) kernels.push_back(kernel);
  }
  return kernels;
}

const std::vector<CpuIsa>& cpu_isas() {
  static const std::vector<CpuIsa> all = {CpuIsa::kPortable,   CpuIsa::kAvx2,       CpuIsa::kAvx2Vnni, CpuIsa::kAvx512,
                                          CpuIsa::kAvx512Vnni, CpuIsa::kAvx512Bf16, CpuIsa::kAmx};
  return all;
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx2Vnni:
      return "avx2_vnni";
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx512Vnni:
      return "avx512_vnni";
    case CpuIsa::kAvx512Bf16:
      return "avx512_bf16";
    case CpuIsa::kAmx:
      return "amx";
    case CpuIsa::kPortable:
      break;
  }
  return "portable";
}

std::string cpu_isa_names() {
  std::string out;
  for (CpuIsa isa : cpu_isas()) out += (out.empty() ? "" : "|") + std::string(cpu_isa_name(isa));
  return out;
}

std::vector<std::string> cpu_isa_flags(CpuIsa isa) {
  // Not a chain: a CPU with AVX512-VNNI need not have AVX-VNNI (Cascade Lake), so avx2_vnni's
  // flag is not asked of the levels above it.
  const std::vector<std::string> avx2 = {"avx2", "fma"};
  std::vector<std::string> avx512 = avx2;
  avx512.insert(avx512.end(), {"avx512f", "avx512bw", "avx512vl"});
  switch (isa) {
    case CpuIsa::kPortable:
      return {};
    case CpuIsa::kAvx2:
      return avx2;
    case CpuIsa::kAvx2Vnni:
      return {"avx2", "fma", "avx_vnni"};
    case CpuIsa::kAvx512:
      return avx512;
    case CpuIsa::kAvx512Vnni:
      avx512.push_back("avx512_vnni");
      return avx512;
    case CpuIsa::kAvx512Bf16:
      avx512.insert(avx512.end(), {"avx512_vnni", "avx512_bf16"});
      return avx512;
    case CpuIsa::kAmx:
      avx512.insert(avx512.end(), {"avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16"});
      return avx512;
  }
  return {};
}

CpuIsa best_cpu_isa(const CpuFlags& flags) {
  CpuIsa best = CpuIsa::kPortable;
  for (CpuIsa isa : cpu_isas()) {
    if (has_all(flags, cpu_isa_flags(isa))) best = isa;
  }
  return best;
}

CpuFlags cap_cpu_flags(const CpuFlags& flags, CpuIsa cap) {
  CpuFlags allowed, named;
  for (CpuIsa isa : cpu_isas()) {
    for (const auto& flag : cpu_isa_flags(isa)) {
      named.insert(flag);
      if (isa <= cap) allowed.insert(flag);
    }
  }
  CpuFlags out;
  for (const auto& flag : flags) {
    if (!named.count(flag) || allowed.count(flag)) out.insert(flag);
  }
  return out;
}

CpuIsa parse_cpu_isa(const std::string& value, const CpuFlags& flags) {
  if (value.empty()) return best_cpu_isa(flags);
  for (CpuIsa isa : cpu_isas()) {
    if (value != cpu_isa_name(isa)) continue;
    for (const auto& flag : cpu_isa_flags(isa)) {
      if (!flags.count(flag)) throw InputError("ATTNMT_CPU_ISA=" + value + ": this CPU has no " + flag);
    }
    return isa;
  }
  throw InputError("ATTNMT_CPU_ISA=" + value + ": not an instruction-set level (" + cpu_isa_names() + ")");
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

const CpuFlags& this_cpu_hardware_flags() {
  static const CpuFlags flags = [] {
    std::ifstream in("/proc/cpuinfo");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto parsed = parse_cpuinfo_flags(text);
    return parsed.empty() ? compiler_cpu_flags() : parsed;
  }();
  return flags;
}

namespace {
std::string cpu_isa_setting() {
  const char* value = std::getenv("ATTNMT_CPU_ISA");
  return value ? value : "";
}
}  // namespace

CpuIsa this_cpu_isa() {
  // Not cached when it throws: every caller gets the error, not a silently substituted level.
  static const CpuIsa isa = parse_cpu_isa(cpu_isa_setting(), this_cpu_hardware_flags());
  return isa;
}

void select_cpu_isa() {
  const CpuIsa isa = this_cpu_isa();
  if (!cpu_isa_forced() || std::getenv("ATEN_CPU_CAPABILITY") != nullptr) return;
  if (isa == CpuIsa::kPortable) setenv("ATEN_CPU_CAPABILITY", "default", 0);
  if (isa == CpuIsa::kAvx2 || isa == CpuIsa::kAvx2Vnni) setenv("ATEN_CPU_CAPABILITY", "avx2", 0);
}

bool cpu_isa_forced() { return !cpu_isa_setting().empty() && this_cpu_isa() != best_cpu_isa(this_cpu_hardware_flags()); }

const CpuFlags& this_cpu_flags() {
  static const CpuFlags flags = cap_cpu_flags(this_cpu_hardware_flags(), this_cpu_isa());
  return flags;
}

}  // namespace attnmt
