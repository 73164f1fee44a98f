// StepWeight (runtime/step_weight.h): a recurrence's products with the weight's gradient deferred to
// one product over all steps. Its values and gradients against the same recurrence written with
// torch::addmm (double, to rounding), under bf16 autocast against fp32, and the decoder that uses it
// against central finite differences of the whole model.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "model/seq2seq.h"
#include "runtime/autocast.h"
#include "runtime/step_weight.h"

using namespace attnmt;

namespace {

struct Chain {
  torch::Tensor w, b, x0, adds, mix;
};

// y_t = x_t W^T + b + a_t, x_{t+1} = tanh(y_t) (G == In); objective sum_t <y_t, m_t>.
torch::Tensor run_chain(const Chain& c, bool step_weight, bool bias, bool add) {
  const int64_t T = c.adds.size(0);
  StepWeight sw;
  if (step_weight) sw = StepWeight(c.w, bias ? c.b : torch::Tensor());
  auto x = c.x0;
  auto total = torch::zeros({}, c.w.options());
  for (int64_t t = 0; t < T; ++t) {
    const auto a = add ? c.adds[t] : torch::Tensor();
    torch::Tensor y;
    if (step_weight) {
      y = sw(x, a);
    } else {
      y = torch::matmul(x, c.w.t());
      if (bias) y = y + c.b;
      if (add) y = y + a;
    }
    total = total + (y * c.mix[t]).sum();
    x = torch::tanh(y);
  }
  return total;
}

Chain make_chain(torch::ScalarType type, int64_t T, int64_t N, int64_t G) {
  const auto opts = torch::TensorOptions().dtype(type);
  Chain c;
  c.w = (torch::randn({G, G}, opts) * (0.8 / std::sqrt(static_cast<double>(G)))).requires_grad_();  // contracting
  c.b = torch::randn({G}, opts).requires_grad_();
  c.x0 = torch::randn({N, G}, opts).requires_grad_();
  c.adds = torch::randn({T, N, G}, opts).requires_grad_();
  c.mix = torch::randn({T, N, G}, opts);
  return c;
}

std::vector<torch::Tensor> grads_of(const Chain& c, bool step_weight, bool bias, bool add) {
  std::vector<torch::Tensor> inputs{c.w, c.x0};
  if (bias) inputs.push_back(c.b);
  if (add) inputs.push_back(c.adds);
  return torch::autograd::grad({run_chain(c, step_weight, bias, add)}, inputs);
}

}  // namespace

TEST_CASE("step weight: values and gradients equal addmm's over a recurrence (double)", "[step_weight]") {
  torch::manual_seed(3);
  // 18 rows: one product at the end; 1,200 rows: products of 512 rows as back-propagation goes, and the rest.
  for (int variant = 0; variant < 8; ++variant) {
    const bool bias = variant & 1, add = variant & 2, long_chain = variant & 4;
    const auto c = long_chain ? make_chain(torch::kDouble, 40, 30, 5) : make_chain(torch::kDouble, 6, 3, 5);
    INFO("bias " << bias << ", add " << add << ", steps " << c.adds.size(0));
    REQUIRE(run_chain(c, true, bias, add).item<double>() ==
            Approx(run_chain(c, false, bias, add).item<double>()).epsilon(1e-13));
    const auto mine = grads_of(c, true, bias, add), theirs = grads_of(c, false, bias, add);
    for (size_t i = 0; i < mine.size(); ++i) {
      INFO("gradient " << i);
      REQUIRE(torch::allclose(mine[i], theirs[i], 1e-12, 1e-12));
    }
  }
}

TEST_CASE("step weight: an input without gradient, and steps that get none", "[step_weight]") {
  torch::manual_seed(4);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  auto w = torch::randn({4, 3}, opts).requires_grad_();
  const auto x1 = torch::randn({2, 3}, opts), x2 = torch::randn({2, 3}, opts);  // no gradient
  StepWeight sw(w, torch::Tensor());
  const auto y1 = sw(x1);
  const auto y2 = sw(x2);  // used by nothing: its rows add zero
  (void)y2;
  const auto g = torch::autograd::grad({y1.sum()}, {w})[0];
  REQUIRE(torch::allclose(g, torch::ones({2, 4}, opts).t().matmul(x1), 1e-14, 1e-14));
  // Without a recorded gradient the product is not routed through StepWeight.
  torch::NoGradGuard no_grad;
  REQUIRE_FALSE(use_step_weight(w));
}

TEST_CASE("step weight: a second backward through the same steps is an error, not a crash", "[step_weight]") {
  torch::manual_seed(7);
  const auto c = make_chain(torch::kDouble, 4, 2, 3);
  const auto total = run_chain(c, true, true, true);
  torch::autograd::grad({total}, {c.w}, {}, /*retain_graph=*/true);
  REQUIRE_THROWS_WITH(torch::autograd::grad({total}, {c.w}), Catch::Contains("retain_graph"));
}

TEST_CASE("step weight under bf16 autocast stays close to fp32", "[step_weight]") {
  torch::manual_seed(5);
  const auto c = make_chain(torch::kFloat, 25, 32, 64);
  const auto reference = grads_of(c, false, true, true);
  attnmt::CpuBf16Autocast autocast;
  const auto y = StepWeight(c.w, c.b)(c.x0, c.adds[0]);
  const auto mine = grads_of(c, true, true, true);
  autocast.end();
  REQUIRE(y.scalar_type() == torch::kFloat);  // fp32 results from bfloat16 products
  for (size_t i = 0; i < mine.size(); ++i) {
    INFO("gradient " << i);
    REQUIRE(mine[i].scalar_type() == torch::kFloat);
    const double rel = (mine[i] - reference[i]).norm().item<double>() / reference[i].norm().item<double>();
    CHECK(rel < 0.03);
  }
}

TEST_CASE("decoder in training (step weights): gradients match finite differences (double)", "[step_weight][gradcheck]") {
  torch::manual_seed(6);
  ModelConfig config;
  config.embedding_size = 5;
  config.encoder.hidden_size = 4;
  config.decoder.hidden_size = 6;
  config.encoder.layers = config.decoder.layers = 2;
  config.encoder.dropout = config.decoder.dropout = 0.0;
  VocabSizes vocab;
  vocab.src = 12;
  vocab.tgt = 11;
  Seq2Seq model(config, vocab);
  model->to(torch::kDouble);
  model->train();
  const auto src = torch::randint(4, 12, {2, 4}, torch::kLong);
  const auto len = torch::tensor({4, 3}, torch::kLong);
  const auto tin = torch::randint(4, 11, {2, 3}, torch::kLong);
  const auto mix = torch::randn({2, 3, 6}, torch::kDouble);
  auto objective = [&] { return (model->hidden_states(src, len, tin) * mix).sum(); };
  const auto params = model->named_parameters();
  std::vector<std::string> names;
  for (const auto& p : params) {
    if (p.key().rfind("decoder.", 0) == 0 && p.key().find("attention") == std::string::npos) names.push_back(p.key());
  }
  REQUIRE(names.size() >= 8);  // w_static, b_ih_0, w_dynamic, w_ih_1, b_ih_1, w_hh_*, b_hh_*, bridges, combine
  std::vector<torch::Tensor> tensors;
  for (const auto& n : names) tensors.push_back(params[n]);
  const auto grads = torch::autograd::grad({objective()}, tensors);
  const double eps = 1e-6;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < names.size(); ++i) {
    INFO(names[i]);
    auto flat = tensors[i].view(-1);
    const auto g = grads[i].reshape(-1);
    for (int64_t k = 0; k < flat.numel(); k += 7) {  // a sample of each weight's elements
      const double saved = flat[k].item<double>();
      flat[k] = saved + eps;
      const double up = objective().item<double>();
      flat[k] = saved - eps;
      const double down = objective().item<double>();
      flat[k] = saved;
      REQUIRE(g[k].item<double>() == Approx((up - down) / (2 * eps)).margin(1e-7));
    }
  }
}
