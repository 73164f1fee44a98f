// The decoder's products, fp32 (oneDNN's matmul on a packed weight, as runtime/packed_linear.cpp
// runs them) against int8 (runtime/int8_gemm.h), at a beam's row counts; one thread; best of 5
// timings of REPS products each (docs/performance.md#int8-decoding). Also prints the largest
// difference between the two results. Build and run from the repository root:
//   g++ -O2 -std=c++17 -Isrc tools/bench_int8_products.cpp src/runtime/int8_gemm.cpp -ldnnl -o /tmp/b
//   OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE /tmp/b [REPS]
#include <oneapi/dnnl/dnnl.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <random>
#include <vector>
#include <algorithm>
#include "runtime/int8_gemm.h"
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
engine eng(engine::kind::cpu, 0);
stream strm(eng);

int main(int argc, char** argv) {
  std::mt19937 g(1);
  std::normal_distribution<float> nd(0, 1);
  int reps = argc > 1 ? atoi(argv[1]) : 200;
  for (auto [K, N] : std::vector<std::pair<int64_t,int64_t>>{{256, 8000}, {256, 1024}, {512, 1024}, {768, 256}, {256, 512}}) {
    for (int64_t M : {5, 64, 320}) {
      std::vector<float> W(N * K), X(M * K), B(N);
      for (auto& v : W) v = nd(g) * 0.1f;
      for (auto& v : X) v = std::tanh(nd(g));
      for (auto& v : B) v = nd(g) * 0.1f;
      // fp32 packed
      memory::desc src({M, K}, dt::f32, tag::ab), wany({K, N}, dt::f32, tag::any), dst({M, N}, dt::f32, tag::ab), bd({1, N}, dt::f32, tag::ab);
      matmul::primitive_desc pf(matmul::desc(src, wany, bd, dst), eng);
      memory wuser({{K, N}, dt::f32, tag::ba}, eng, W.data());
      memory wpack(pf.weights_desc(), eng);
      reorder(wuser, wpack).execute(strm, wuser, wpack);
      std::vector<float> Y(M * N), Y8(M * N);
      memory xm(src, eng, X.data()), ym(dst, eng, Y.data()), bm(bd, eng, B.data());
      matmul pfm(pf);
      // int8: quantize W per N
      std::vector<int8_t> Wq(N * K); std::vector<float> ws(N);
      for (int64_t n = 0; n < N; ++n) {
        float mx = 0; for (int64_t k = 0; k < K; ++k) mx = std::max(mx, std::fabs(W[n * K + k]));
        ws[n] = mx / 127.f;
        for (int64_t k = 0; k < K; ++k) Wq[n * K + k] = (int8_t)std::lrint(W[n * K + k] / ws[n]);
      }
      primitive_attr attr; attr.set_output_scales(2, ws);
      memory::desc s8src({M, K}, dt::s8, tag::ab), w8any({K, N}, dt::s8, tag::any);
      matmul::primitive_desc p8(matmul::desc(s8src, w8any, dst), attr, eng);
      memory w8user({{K, N}, dt::s8, tag::ba}, eng, Wq.data());
      memory w8pack(p8.weights_desc(), eng);
      reorder(w8user, w8pack).execute(strm, w8user, w8pack);
      strm.wait();
      std::vector<int8_t> Xq(M * K); std::vector<float> xs(M);
      memory xqm(s8src, eng, Xq.data()), y8m(dst, eng, Y8.data());
      matmul p8m(p8);
      auto run_f = [&] { pfm.execute(strm, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wpack}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, ym}}); strm.wait(); };
      attnmt::Int8Matrix pk(W.data(), B.data(), N, K); attnmt::Int8Rows ub; auto run_8 = [&] { pk.quantize(X.data(), M, ub); pk.multiply(ub, 0, pk.blocks(), Y8.data(), N); };
      run_f(); run_8();
      double tf = 1e9, t8 = 1e9;
      for (int round = 0; round < 5; ++round) {
        auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) run_f();
        auto t1 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) run_8();
        auto t2 = std::chrono::steady_clock::now();
        tf = std::min(tf, std::chrono::duration<double>(t1 - t0).count() / reps);
        t8 = std::min(t8, std::chrono::duration<double>(t2 - t1).count() / reps);
      }
      double maxd = 0, maxy = 0;
      for (int64_t i = 0; i < M * N; ++i) { maxd = std::max(maxd, (double)std::fabs(Y[i] - Y8[i])); maxy = std::max(maxy, (double)std::fabs(Y[i])); }
      printf("K=%4ld N=%5ld M=%4ld  fp32 %8.1f us (%5.1f GF/s)  int8 %8.1f us (%5.1f GOP/s)  ratio %.2f  maxdiff %.4f / %.2f\n", K, N, M, tf * 1e6, 2.0 * M * N * K / tf / 1e9, t8 * 1e6, 2.0 * M * N * K / t8 / 1e9, tf / t8, maxd, maxy);
    }
  }
}
