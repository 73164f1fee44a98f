// output_layer_loss (model/loss.h) against the textbook computation: logits for every position,
// log_softmax, label-smoothed NLL over the non-padding targets, gradients by autograd.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "model/loss.h"

using namespace attnmt;

namespace {

struct Reference {
  torch::Tensor loss, grad_h, grad_w, grad_b, sentence_nll;
  double nll_sum = 0;
  int64_t tokens = 0;
};

Reference reference(const torch::Tensor& h0, const torch::Tensor& w0, const torch::Tensor& b0, const torch::Tensor& y,
                    double eps, double scale) {
  auto h = h0.detach().clone().requires_grad_(true), w = w0.detach().clone().requires_grad_(true),
       b = b0.detach().clone().requires_grad_(true);
  auto logp = torch::log_softmax(torch::matmul(h, w.t()) + b, -1);  // [B, T, V]
  auto mask = y.ne(0).to(logp.dtype());
  auto nll = -logp.gather(-1, y.unsqueeze(-1)).squeeze(-1) * mask;
  auto smooth = -logp.mean(-1) * mask;
  auto loss = ((1 - eps) * nll + eps * smooth).sum();
  (loss * scale).backward();
  return {loss.detach(), h.grad(), w.grad(), b.grad(), nll.sum(1).detach(), nll.sum().item<double>(),
          static_cast<int64_t>(mask.sum().item<double>())};
}

}  // namespace

TEST_CASE("output_layer_loss equals the full-logits loss and its gradients", "[loss]") {
  torch::manual_seed(7);
  const int64_t B = 3, T = 5, H = 4, V = 11;
  auto opt = torch::kDouble;
  auto h = torch::randn({B, T, H}, opt), w = torch::randn({V, H}, opt), b = torch::randn({V}, opt);
  // Targets 1..V-1 with padding (0) at the end of rows 1 and 2; row 2 is all padding but one.
  auto y = torch::randint(1, V, {B, T}, torch::kLong);
  y[1].slice(0, 3).fill_(0);
  y[2].slice(0, 1).fill_(0);
  for (double eps : {0.0, 0.1}) {
    for (int64_t chunk : {2, 1024}) {
      CAPTURE(eps, chunk);
      const double scale = 0.37;
      auto ref = reference(h, w, b, y, eps, scale);
      auto hv = h.clone().requires_grad_(true), wv = w.clone().requires_grad_(true), bv = b.clone().requires_grad_(true);
      auto r = output_layer_loss(hv, wv, bv, y, /*pad_id=*/0, eps, /*bf16=*/false, chunk);
      (r.loss * scale).backward();
      CHECK(r.loss.item<double>() == Approx(ref.loss.item<double>()).epsilon(1e-12));
      CHECK(r.nll_sum == Approx(ref.nll_sum).epsilon(1e-12));
      CHECK(r.tokens == ref.tokens);
      CHECK(r.tokens == 3 * 5 - 2 - 4);
      CHECK(torch::allclose(r.sentence_nll, ref.sentence_nll, 1e-12, 1e-12));
      CHECK(torch::allclose(hv.grad(), ref.grad_h, 1e-12, 1e-12));
      CHECK(torch::allclose(wv.grad(), ref.grad_w, 1e-12, 1e-12));
      CHECK(torch::allclose(bv.grad(), ref.grad_b, 1e-12, 1e-12));
      // Padding positions get exactly zero gradient.
      CHECK(hv.grad()[2].slice(0, 1).abs().max().item<double>() == 0.0);
      // Without gradients (validation): the same values.
      torch::NoGradGuard no_grad;
      auto v = output_layer_loss(h, w, b, y, 0, eps, false, chunk);
      CHECK(v.loss.item<double>() == Approx(ref.loss.item<double>()).epsilon(1e-12));
      CHECK(torch::allclose(v.sentence_nll, ref.sentence_nll, 1e-12, 1e-12));
    }
  }
}

TEST_CASE("output_layer_loss in bf16 stays close to fp32", "[loss]") {
  torch::manual_seed(3);
  const int64_t B = 4, T = 6, H = 32, V = 50;
  auto h = torch::randn({B, T, H}) * 0.3, w = torch::randn({V, H}) * 0.3, b = torch::randn({V}) * 0.1;
  auto y = torch::randint(1, V, {B, T}, torch::kLong);
  auto ref = reference(h, w, b, y, 0.1, 1.0);
  auto hv = h.clone().requires_grad_(true), wv = w.clone().requires_grad_(true), bv = b.clone().requires_grad_(true);
  auto r = output_layer_loss(hv, wv, bv, y, 0, 0.1, /*bf16=*/true, 7);
  r.loss.backward();
  CHECK(r.loss.item<double>() == Approx(ref.loss.item<double>()).epsilon(1e-2));
  CHECK(wv.grad().dtype() == torch::kFloat);
  CHECK(((hv.grad() - ref.grad_h).norm() / ref.grad_h.norm()).item<double>() < 2e-2);
  CHECK(((wv.grad() - ref.grad_w).norm() / ref.grad_w.norm()).item<double>() < 2e-2);
  CHECK(((bv.grad() - ref.grad_b).norm() / ref.grad_b.norm()).item<double>() < 2e-2);  // softmax of bf16 logits
}
