#include "runtime/compute.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

#include "runtime/gemm.h"

namespace attnmt {

void configure_compute(int threads, GemmBackend gemm) {
  use_gemm_backend(gemm);
  at::set_num_threads(threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
}

}  // namespace attnmt
