// The decoder's products per path, as the runtime runs them: fp32 and bf16 by oneDNN's matmul on a
// packed weight (runtime/packed_linear.cpp), int8 by every kernel this CPU runs (runtime/int8_gemm.h,
// quantisation of the input included), at a beam's row counts (5, 64, 320); one thread; best of 5
// timings of REPS products each (docs/performance.md#int8-decoding). Build and run from the
// repository root after a build (build/generated holds build_features.h):
//   g++ -O3 -std=c++17 -Isrc -Ibuild/generated tools/bench_int8_products.cpp src/runtime/int8_gemm.cpp \
//       src/util/cpu_kernels.cpp -ldnnl -o /tmp/b
//   OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE /tmp/b [REPS]
// ATTNMT_CPU_ISA caps the kernels as it does for attnmt (and oneDNN's, through the engine).
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/dnnl_engine.h"
#include "runtime/int8_gemm.h"
#include "util/cpu_kernels.h"

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

double best_seconds(int reps, const std::function<void()>& run) {
  run();
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  return best;
}

// oneDNN's matmul y = x W^T + b with W packed once, operands in `type` (f32 or bf16).
std::function<void()> packed_product(dt type, const std::vector<float>& w, const std::vector<float>& b,
                                     const std::vector<float>& x, std::vector<float>& y, int64_t m, int64_t k,
                                     int64_t n) {
  auto& eng = attnmt::dnnl_cpu_engine();
  memory::desc src({m, k}, type, tag::ab), wany({k, n}, type, tag::any), dst({m, n}, dt::f32, tag::ab),
      bd({1, n}, dt::f32, tag::ab);
  auto pd = std::make_shared<matmul::primitive_desc>(matmul::desc(src, wany, bd, dst), eng);
  stream strm(eng);
  memory wuser({{k, n}, dt::f32, tag::ba}, eng, const_cast<float*>(w.data()));
  auto wpack = std::make_shared<memory>(pd->weights_desc(), eng);
  reorder(wuser, *wpack).execute(strm, wuser, *wpack);
  memory xuser({{m, k}, dt::f32, tag::ab}, eng, const_cast<float*>(x.data()));
  auto xm = std::make_shared<memory>(src, eng);
  auto ym = std::make_shared<memory>(dst, eng, y.data());
  auto bm = std::make_shared<memory>(bd, eng, const_cast<float*>(b.data()));
  auto prim = std::make_shared<matmul>(*pd);
  const bool convert = type != dt::f32;
  return [=, &eng]() mutable {
    stream s(eng);
    if (convert) reorder(xuser, *xm).execute(s, xuser, *xm);  // the input's conversion, as at run time
    prim->execute(s, {{DNNL_ARG_SRC, convert ? *xm : xuser}, {DNNL_ARG_WEIGHTS, *wpack}, {DNNL_ARG_BIAS, *bm},
                      {DNNL_ARG_DST, *ym}});
    s.wait();
  };
}

std::string dashes(size_t columns) {
  std::string out;
  for (size_t i = 0; i < columns; ++i) out += "---:|";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnmt;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 100;
  std::mt19937 g(1);
  std::normal_distribution<float> nd(0, 1);
  const auto& flags = this_cpu_flags();
  const auto kernels = int8_kernels_runnable(flags);
  const bool bf16 = has_native_bf16(flags);
  std::printf("CPU flags: %s; int8 kernel in use: %s; bf16: %s\n\n", kernel_flags(flags).c_str(),
              int8_kernel_name(Int8Matrix::kernel_in_use()), bf16_kernel_name(bf16_kernel(flags)));
  std::string header = "| K x N | rows | fp32 GFLOP/s |";
  if (bf16) header += " bf16 GFLOP/s |";
  for (auto kernel : kernels) header += std::string(" int8 ") + int8_kernel_name(kernel) + " GOP/s |";
  std::printf("%s\n|---|---:|%s\n", header.c_str(), dashes((bf16 ? 2 : 1) + kernels.size()).c_str());
  for (auto [k, n] : std::vector<std::pair<int64_t, int64_t>>{{256, 4000}, {256, 8000}, {256, 1024}, {768, 256}}) {
    for (int64_t m : {5, 64, 320}) {
      std::vector<float> w(n * k), x(m * k), b(n), y(m * n);
      for (auto& v : w) v = nd(g) * 0.1f;
      for (auto& v : x) v = std::tanh(nd(g));
      for (auto& v : b) v = nd(g) * 0.1f;
      const double ops = 2.0 * static_cast<double>(m * n * k);
      std::string row = "| " + std::to_string(k) + " x " + std::to_string(n) + " | " + std::to_string(m) + " |";
      char cell[32];
      std::snprintf(cell, sizeof cell, " %.0f |", ops / best_seconds(reps, packed_product(dt::f32, w, b, x, y, m, k, n)) / 1e9);
      row += cell;
      if (bf16) {
        std::snprintf(cell, sizeof cell, " %.0f |", ops / best_seconds(reps, packed_product(dt::bf16, w, b, x, y, m, k, n)) / 1e9);
        row += cell;
      }
      Int8Matrix matrix(w.data(), b.data(), n, k);
      Int8Rows rows;
      for (auto kernel : kernels) {
        const double s = best_seconds(reps, [&] {
          matrix.quantize(x.data(), m, rows, kernel);
          matrix.multiply(rows, 0, matrix.blocks(), y.data(), n, kernel);
        });
        std::snprintf(cell, sizeof cell, " %.0f |", ops / s / 1e9);
        row += cell;
      }
      std::printf("%s\n", row.c_str());
    }
  }
}
