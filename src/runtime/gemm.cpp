#include "runtime/gemm.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "util/error.h"

#include "build_features.h"
#ifdef ATTNMT_WITH_DNNL
#include <oneapi/dnnl/dnnl.h>

#include "runtime/dnnl_engine.h"
#endif

namespace attnmt {

namespace {

#ifdef ATTNMT_WITH_DNNL
constexpr bool kHaveOnednn = true;
#else
constexpr bool kHaveOnednn = false;
#endif
std::atomic<bool> g_onednn{kHaveOnednn};  // constant-initialised: right even for products made before main()
std::atomic<uint64_t> g_onednn_calls{0};

}  // namespace

bool onednn_gemm_available() { return kHaveOnednn; }

void use_gemm_backend(GemmBackend backend) {
  switch (backend) {
    case GemmBackend::automatic:
      g_onednn = onednn_gemm_available();
      break;
    case GemmBackend::blas:
      g_onednn = false;
      break;
    case GemmBackend::onednn:
      if (!onednn_gemm_available()) {
        throw InputError("config key 'gemm': 'onednn', but this build has no oneDNN (Debian: libdnnl-dev); use auto or blas");
      }
      g_onednn = true;
      break;
  }
}

std::string gemm_description() { return g_onednn ? "oneDNN sgemm" : "BLAS sgemm"; }
std::string gemm_description(bool on_cpu) { return on_cpu ? gemm_description() : "the device's"; }

uint64_t onednn_gemm_calls() { return g_onednn_calls.load(std::memory_order_relaxed); }

}  // namespace attnmt

#ifdef ATTNMT_WITH_DNNL
// The Fortran BLAS entry point, column-major: C = alpha op(A) op(B) + beta C, C m x n. Defined in
// the program, it takes precedence over the BLAS library's for LibTorch's calls (ELF symbol
// interposition). oneDNN's sgemm is row-major, and a column-major matrix read row-major is its
// transpose, so C^T = op(B)^T op(A)^T is oneDNN's product with the operands swapped.
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc) {
  using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
  // Empty products (BLAS's meaning: C = beta C) and the "blas" backend go to the library's sgemm_.
  if (attnmt::g_onednn.load(std::memory_order_relaxed) && *m > 0 && *n > 0 && *k > 0) {
    attnmt::cap_onednn_isa();  // (once; before oneDNN's first kernel)
    if (dnnl_sgemm(*transb, *transa, *n, *m, *k, *alpha, b, *ldb, a, *lda, *beta, c, *ldc) == dnnl_success) {
      attnmt::g_onednn_calls.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  static const auto blas = reinterpret_cast<Sgemm>(dlsym(RTLD_NEXT, "sgemm_"));
  if (blas == nullptr) {  // no BLAS library behind this definition: LibTorch always links one
    std::fputs("attnmt: error: sgemm_: no BLAS library found\n", stderr);
    std::abort();
  }
  blas(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
#endif
