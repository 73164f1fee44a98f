// The GEMM backend (runtime/gemm.h): LibTorch's fp32 products routed through attnmt's sgemm_ to
// oneDNN, checked against products computed in double (dgemm, not routed) for every layout
// LibTorch hands to BLAS, and the two backends against each other on an LSTM's gradients.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "program.h"
#include "runtime/gemm.h"
#include "util/error.h"

using namespace attnmt;

namespace {

double max_rel_diff(const torch::Tensor& got, const torch::Tensor& want) {
  return ((got.to(torch::kDouble) - want).abs().max() / want.abs().max().clamp_min(1e-12)).item<double>();
}

// Restores the process-wide choice, whatever a test set.
struct BackendGuard {
  ~BackendGuard() { use_gemm_backend(GemmBackend::automatic); }
};

}  // namespace

TEST_CASE("fp32 products through each GEMM backend match double-precision products", "[gemm]") {
  BackendGuard guard;
  torch::manual_seed(3);
  for (const GemmBackend backend : {GemmBackend::onednn, GemmBackend::blas}) {
    if (backend == GemmBackend::onednn && !onednn_gemm_available()) {
      ATTNMT_MISSING_DEPENDENCY("built without oneDNN: only the BLAS backend is checked");
      continue;
    }
    use_gemm_backend(backend);
    INFO("backend " << name_of(backend) << " (" << gemm_description() << ")");
    const auto calls_before = onednn_gemm_calls();
    const auto a = torch::randn({37, 70}), b = torch::randn({70, 53});
    const auto ad = a.to(torch::kDouble), bd = b.to(torch::kDouble);
    // Every transpose combination: LibTorch passes transposed views to sgemm_ as 'T' operands.
    const auto at_ = a.t().contiguous().t(), bt_ = b.t().contiguous().t();  // same values, column-major
    CHECK(max_rel_diff(torch::mm(a, b), ad.mm(bd)) < 1e-5);
    CHECK(max_rel_diff(torch::mm(at_, b), ad.mm(bd)) < 1e-5);
    CHECK(max_rel_diff(torch::mm(a, bt_), ad.mm(bd)) < 1e-5);
    CHECK(max_rel_diff(torch::mm(at_, bt_), ad.mm(bd)) < 1e-5);
    // Leading dimensions larger than the matrix (a column slice of a wider matrix).
    const auto wide = torch::randn({37, 100});
    const auto slice = wide.narrow(1, 20, 70);
    CHECK(max_rel_diff(torch::mm(slice, b), slice.to(torch::kDouble).mm(bd)) < 1e-5);
    // beta = 1 and alpha != 1 (addmm): C = beta C + alpha A B.
    const auto c = torch::randn({37, 53});
    CHECK(max_rel_diff(torch::addmm(c, a, b, /*beta=*/0.5, /*alpha=*/-2.0),
                       0.5 * c.to(torch::kDouble) - 2.0 * ad.mm(bd)) < 1e-5);
    // beta = 0 must not read C: an output full of NaN is overwritten.
    auto out = torch::full({37, 53}, std::numeric_limits<float>::quiet_NaN());
    torch::mm_out(out, a, b);
    CHECK(max_rel_diff(out, ad.mm(bd)) < 1e-5);
    // Empty inner dimension: C = 0 (BLAS's C = beta C).
    CHECK(torch::mm(torch::randn({4, 0}), torch::randn({0, 5})).abs().sum().item<double>() == 0);
    const auto routed = onednn_gemm_calls() - calls_before;
    if (backend == GemmBackend::onednn) {
      CHECK(routed >= 7);  // LibTorch's products really reached oneDNN
    } else {
      CHECK(routed == 0);
    }
  }
}

TEST_CASE("an LSTM's outputs and gradients agree across GEMM backends", "[gemm]") {
  if (!onednn_gemm_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without oneDNN: nothing to compare");
    return;
  }
  BackendGuard guard;
  torch::manual_seed(4);
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(24, 32).num_layers(2).bidirectional(true));
  const auto x = torch::randn({9, 5, 24});
  std::vector<std::vector<torch::Tensor>> results;
  for (const GemmBackend backend : {GemmBackend::blas, GemmBackend::onednn}) {
    use_gemm_backend(backend);
    lstm->zero_grad();
    auto y = std::get<0>(lstm->forward(x));
    (y * y).sum().backward();
    std::vector<torch::Tensor> r{y.detach()};
    for (const auto& p : lstm->parameters()) r.push_back(p.grad().clone());
    results.push_back(r);
  }
  for (size_t i = 0; i < results[0].size(); ++i) {
    INFO("tensor " << i << " (0: output, then parameter gradients)");
    CHECK(max_rel_diff(results[1][i], results[0][i].to(torch::kDouble)) < 1e-4);
  }
}

TEST_CASE("the gemm key's values", "[gemm]") {
  BackendGuard guard;
  use_gemm_backend(GemmBackend::blas);
  REQUIRE(gemm_description() == "BLAS sgemm");
  use_gemm_backend(GemmBackend::automatic);
  REQUIRE(gemm_description() == (onednn_gemm_available() ? "oneDNN sgemm" : "BLAS sgemm"));
  if (!onednn_gemm_available()) REQUIRE_THROWS_AS(use_gemm_backend(GemmBackend::onednn), InputError);
}
