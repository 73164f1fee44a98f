// The compute settings a command applies once, after reading its config and options.
#pragma once
#include "util/choices.h"

namespace attnmt {

// Intra-op threads (0 = all cores) and the library for fp32 matrix products (runtime/gemm.h).
// Throws InputError for onednn in a build without it.
void configure_compute(int threads, GemmBackend gemm);

}  // namespace attnmt
