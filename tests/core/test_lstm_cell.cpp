// The fused LSTM cell (runtime/lstm_cell.h): its gradients against central finite differences in
// double, and its values and gradients in float against the same cell written with ATen operators.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <limits>
#include <vector>

#include "runtime/autocast.h"
#include "runtime/lstm_cell.h"

using namespace attnmt;

namespace {

// A scalar that depends on both outputs with weights that differ per element.
torch::Tensor objective(const std::pair<torch::Tensor, torch::Tensor>& out, const torch::Tensor& wh,
                        const torch::Tensor& wc) {
  return (out.first * wh).sum() + (out.second * wc).sum();
}

}  // namespace

TEST_CASE("fused LSTM cell: gradients match finite differences (double)", "[lstm_cell]") {
  torch::manual_seed(5);
  const int64_t N = 3, H = 4;
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  auto gates = (torch::randn({N, 4 * H}, opts) * 2).requires_grad_();
  auto c_prev = torch::randn({N, H}, opts).requires_grad_();
  const auto wh = torch::randn({N, H}, opts), wc = torch::randn({N, H}, opts);
  auto grads = torch::autograd::grad({objective(lstm_cell(gates, c_prev), wh, wc)}, {gates, c_prev});
  const double eps = 1e-6;
  for (int which = 0; which < 2; ++which) {
    auto x = (which == 0 ? gates : c_prev).detach();
    auto flat = x.view(-1);
    for (int64_t k = 0; k < flat.numel(); ++k) {
      const double saved = flat[k].item<double>();
      auto eval = [&] {
        torch::NoGradGuard no_grad;
        return objective(lstm_cell(which == 0 ? x : gates.detach(), which == 1 ? x : c_prev.detach()), wh, wc)
            .item<double>();
      };
      flat[k] = saved + eps;
      const double up = eval();
      flat[k] = saved - eps;
      const double down = eval();
      flat[k] = saved;
      INFO((which == 0 ? "gates" : "c_prev") << " element " << k);
      CHECK(grads[which].view(-1)[k].item<double>() == Approx((up - down) / (2 * eps)).margin(1e-8));
    }
  }
}

TEST_CASE("fused LSTM cell: float values and gradients match the ATen cell", "[lstm_cell]") {
  torch::manual_seed(6);
  const int64_t N = 37, H = 70;  // rows and widths that are not multiples of a vector's length
  auto gates = torch::randn({N, 4 * H}) * 3;
  // Saturated pre-activations at both ends, where the exp polynomial is clamped.
  gates[0].fill_(95.0f);
  gates[1].fill_(-95.0f);
  gates[2].narrow(0, 0, 2 * H).fill_(20.0f);
  const auto c_prev = torch::randn({N, H}) * 2;
  const auto wh = torch::randn({N, H}), wc = torch::randn({N, H});
  auto run = [&](bool fused) {
    auto g = gates.clone().requires_grad_(), c = c_prev.clone().requires_grad_();
    auto out = fused ? lstm_cell(g, c) : lstm_cell_unfused(g, c);
    objective(out, wh, wc).backward();
    return std::vector<torch::Tensor>{out.first.detach(), out.second.detach(), g.grad(), c.grad()};
  };
  const auto fused = run(true), aten = run(false);
  const char* names[] = {"h", "c", "d gates", "d c_prev"};
  for (size_t k = 0; k < fused.size(); ++k) {
    INFO(names[k]);
    REQUIRE(torch::isfinite(fused[k]).all().item<bool>());
    CHECK((fused[k] - aten[k]).abs().max().item<double>() < 2e-6 * std::max(1.0, aten[k].abs().max().item<double>()));
  }
  // Decoding (no gradient) computes the same values without keeping anything for backward.
  torch::NoGradGuard no_grad;
  const auto inference = lstm_cell(gates, c_prev);
  CHECK(torch::equal(inference.first, fused[0]));
  CHECK(torch::equal(inference.second, fused[1]));
}

TEST_CASE("fused LSTM cell: NaN propagates, strided and bf16 inputs work", "[lstm_cell]") {
  torch::manual_seed(7);
  const int64_t H = 8;
  auto gates = torch::randn({2, 4 * H});
  gates[0][3] = std::numeric_limits<float>::quiet_NaN();
  const auto out = lstm_cell(gates, torch::randn({2, H}));
  CHECK(std::isnan(out.first[0][3].item<float>()));  // a diverged step is not hidden by the clamps
  CHECK(torch::isfinite(out.first[1]).all().item<bool>());
  // A column slice of a wider tensor (not contiguous).
  const auto wide = torch::randn({5, 8 * H}), c = torch::randn({5, H});
  const auto slice = wide.narrow(1, 4 * H, 4 * H);
  CHECK((lstm_cell(slice, c).first - lstm_cell_unfused(slice, c).first).abs().max().item<double>() < 2e-6);
  // bf16 gates (products under autocast) are widened to fp32: fp32 states, the fp32 cell's values.
  const auto gb = slice.to(torch::kBFloat16);
  const auto b = lstm_cell(gb, c);
  CHECK(b.first.scalar_type() == torch::kFloat);
  CHECK((b.first - lstm_cell_unfused(gb.to(torch::kFloat), c).first).abs().max().item<double>() < 2e-6);
}

namespace {

// lstm_layer and torch::nn::LSTM (one layer, batch_first, the same weights) on the same input:
// outputs, and the gradients of a weighted sum of them with respect to the input and every weight.
struct LayerRun {
  torch::Tensor out;
  std::vector<torch::Tensor> grads;  // x, w_ih, w_hh, b_ih, b_hh
};

LayerRun run_layer(bool reference, torch::nn::LSTM& lstm, const torch::Tensor& x0, const torch::Tensor& w) {
  auto x = x0.detach().clone().requires_grad_();
  auto p = lstm->named_parameters(false);
  std::vector<torch::Tensor> params{p["weight_ih_l0"], p["weight_hh_l0"], p["bias_ih_l0"], p["bias_hh_l0"]};
  for (auto& t : params) t.mutable_grad() = torch::Tensor();
  auto out = reference ? std::get<0>(lstm->forward(x)) : lstm_layer(x, params[0], params[1], params[2], params[3]);
  (out * w).sum().backward();
  LayerRun r{out.detach(), {x.grad()}};
  for (auto& t : params) r.grads.push_back(t.grad().clone());
  return r;
}

}  // namespace

TEST_CASE("lstm_layer: outputs and gradients match torch::nn::LSTM", "[lstm_cell]") {
  torch::manual_seed(7);
  const int64_t B = 5, S = 9, In = 6, H = 7;
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    torch::nn::LSTM lstm(torch::nn::LSTMOptions(In, H).batch_first(true));
    lstm->to(dtype);
    const auto x = torch::randn({B, S, In}, torch::dtype(dtype)), w = torch::randn({B, S, H}, torch::dtype(dtype));
    const auto ref = run_layer(true, lstm, x, w), got = run_layer(false, lstm, x, w);
    const double tol = dtype == torch::kDouble ? 1e-12 : 2e-5;
    CHECK(torch::allclose(got.out, ref.out, tol, tol));
    const char* names[] = {"x", "w_ih", "w_hh", "b_ih", "b_hh"};
    for (size_t k = 0; k < ref.grads.size(); ++k) {
      INFO(names[k] << (dtype == torch::kDouble ? " double" : " float"));
      CHECK(torch::allclose(got.grads[k], ref.grads[k], tol, tol));
    }
  }
}

TEST_CASE("lstm_layer under bf16 autocast stays close to the fp32 layer", "[lstm_cell]") {
  torch::manual_seed(8);
  const int64_t B = 6, S = 11, In = 32, H = 16;
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(In, H).batch_first(true));
  const auto x = torch::randn({B, S, In}), w = torch::randn({B, S, H});
  const auto ref = run_layer(false, lstm, x, w);
  attnmt::CpuBf16Autocast autocast;
  const auto got = run_layer(false, lstm, x, w);
  autocast.end();
  CHECK(got.out.scalar_type() == torch::kFloat);
  auto rel = [](const torch::Tensor& a, const torch::Tensor& b) { return ((a - b).norm() / b.norm()).item<double>(); };
  CHECK(rel(got.out, ref.out) < 2e-2);
  for (size_t k = 0; k < ref.grads.size(); ++k) {
    INFO("gradient " << k);
    CHECK(got.grads[k].scalar_type() == torch::kFloat);
    CHECK(rel(got.grads[k], ref.grads[k]) < 3e-2);
  }
}
