// The one oneDNN CPU engine the runtime's products share (runtime/packed_linear.h,
// runtime/matmul_bf16.h, runtime/int8_gemm.h's AMX path). Included only where ATTNMT_WITH_DNNL is
// set (CMakeLists.txt).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <exception>

#include "util/cpu_kernels.h"

namespace attnmt {

// ATTNMT_CPU_ISA (util/cpu_kernels.h) applied to oneDNN's kernels too: its highest ISA set to the
// level's, before any kernel is made (oneDNN takes the cap only then). Called by dnnl_cpu_engine()
// and before oneDNN's sgemm (runtime/gemm.cpp).
inline void cap_onednn_isa() {
  static const bool done = [] {
    try {
      if (!cpu_isa_forced()) return true;
    } catch (const std::exception&) {
      return true;  // a bad ATTNMT_CPU_ISA: the program's entry point reports it
    }
    auto cap = dnnl::cpu_isa::all;
    switch (this_cpu_isa()) {
      case CpuIsa::kPortable: cap = dnnl::cpu_isa::sse41; break;
      case CpuIsa::kAvx2: cap = dnnl::cpu_isa::avx2; break;
      case CpuIsa::kAvx2Vnni: cap = dnnl::cpu_isa::avx2_vnni; break;
      case CpuIsa::kAvx512: cap = dnnl::cpu_isa::avx512_core; break;
      case CpuIsa::kAvx512Vnni: cap = dnnl::cpu_isa::avx512_core_vnni; break;
      case CpuIsa::kAvx512Bf16: cap = dnnl::cpu_isa::avx512_core_bf16; break;
      case CpuIsa::kAmx: break;
    }
    dnnl::set_max_cpu_isa(cap);
    return true;
  }();
  (void)done;
}

// The row count a product of m rows runs at (1, 2, 4, 8, then multiples of 8; the extra rows computed
// and dropped): each row count needs a kernel of its own, and decoding's rows shrink one sentence
// at a time, so exact counts compiled hundreds of kernels per run. For runtime/packed_linear.cpp's
// fp32/bf16 products and runtime/int8_gemm.cpp's oneDNN ones.
inline int64_t dnnl_row_count(int64_t m) {
  int64_t rows = 1;
  while (rows < m && rows < 8) rows *= 2;
  return m > 8 ? (m + 7) / 8 * 8 : rows;
}

inline dnnl::engine& dnnl_cpu_engine() {
  static dnnl::engine engine = [] {
    cap_onednn_isa();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

}  // namespace attnmt
