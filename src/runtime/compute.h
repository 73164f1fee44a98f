// The compute settings a command applies once, after reading its config and options.
#pragma once
#include <string>

namespace attnmt {

// Intra-op threads (0 = all cores) and the library for fp32 matrix products (runtime/gemm.h:
// auto | onednn | blas). Throws InputError for a bad gemm name.
void configure_compute(int threads, const std::string& gemm);

}  // namespace attnmt
