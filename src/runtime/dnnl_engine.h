// The one oneDNN CPU engine the runtime's products share (runtime/packed_linear.h,
// runtime/matmul_bf16.h). Included only where ATTNMT_WITH_DNNL is set (CMakeLists.txt).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

namespace attnmt {

inline dnnl::engine& dnnl_cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

}  // namespace attnmt
