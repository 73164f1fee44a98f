// The update step (train/optimizer.h): the one-pass Adam against torch::optim::Adam, the gradient
// norm against a sum in double, and the fallback for other optimizers.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "config/config.h"
#include "train/optimizer.h"

namespace {

std::vector<torch::Tensor> make_parameters(uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> out;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{37}, {5, 11}, {64, 3}, {1}}) {
    out.push_back(torch::randn(shape).requires_grad_(true));
  }
  return out;
}

std::vector<torch::Tensor> copies(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

}  // namespace

TEST_CASE("one-pass Adam equals torch::optim::Adam with the gradients scaled, over several steps", "[optimizer]") {
  const double weight_decay = GENERATE(0.0, 0.01);
  const double scale = GENERATE(1.0, 0.37);
  INFO("weight_decay " << weight_decay << " scale " << scale);
  auto fused = make_parameters(7);
  auto reference = copies(fused);
  auto options = torch::optim::AdamOptions(0.01).betas({0.9, 0.98}).eps(1e-8).weight_decay(weight_decay);
  torch::optim::Adam a(fused, options), b(reference, options);
  torch::manual_seed(11);
  for (int step = 0; step < 6; ++step) {
    for (size_t i = 0; i < fused.size(); ++i) {
      const auto g = torch::randn(fused[i].sizes()) * static_cast<double>(i + 1);
      fused[i].mutable_grad() = g.clone();
      reference[i].mutable_grad() = g * scale;  // what clipping by `scale` gives
    }
    attnmt::optimizer_step(a, scale);
    b.step();
    for (size_t i = 0; i < fused.size(); ++i) {
      INFO("step " << step << " parameter " << i);
      CHECK(torch::allclose(fused[i], reference[i], 1e-5, 1e-6));
    }
  }
  // the state is torch::optim::Adam's own (so checkpoints and resume are unchanged)
  for (size_t i = 0; i < fused.size(); ++i) {
    const auto key = attnmt::optimizer_state_key(a, fused[i]);
    const auto key_ref = attnmt::optimizer_state_key(b, reference[i]);
    const auto& s = static_cast<torch::optim::AdamParamState&>(*a.state().at(key));
    const auto& r = static_cast<torch::optim::AdamParamState&>(*b.state().at(key_ref));
    CHECK(s.step() == r.step());
    CHECK(torch::allclose(s.exp_avg(), r.exp_avg(), 1e-5, 1e-7));
    CHECK(torch::allclose(s.exp_avg_sq(), r.exp_avg_sq(), 1e-5, 1e-9));
  }
}

TEST_CASE("the update skips a parameter without a gradient", "[optimizer]") {
  auto ps = make_parameters(3);
  const auto before = ps[1].detach().clone();
  torch::optim::Adam adam(ps, torch::optim::AdamOptions(0.1));
  for (size_t i = 0; i < ps.size(); ++i) {
    if (i != 1) ps[i].mutable_grad() = torch::ones_like(ps[i]);
  }
  attnmt::optimizer_step(adam, 1.0);
  CHECK(torch::equal(ps[1], before));
  CHECK(adam.state().count(attnmt::optimizer_state_key(adam, ps[1])) == 0);
  CHECK_FALSE(torch::equal(ps[0], torch::zeros_like(ps[0])));
}

TEST_CASE("gradient_norm is the L2 norm of all gradients together", "[optimizer]") {
  auto ps = make_parameters(5);
  double sum = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (i == 2) continue;  // no gradient: skipped
    ps[i].mutable_grad() = torch::randn(ps[i].sizes());
    const auto g = ps[i].grad().to(torch::kDouble);
    sum += (g * g).sum().item<double>();
  }
  CHECK(attnmt::gradient_norm(ps) == Approx(std::sqrt(sum)).epsilon(1e-6));
}

TEST_CASE("other optimizers get their gradients scaled, then their own step", "[optimizer]") {
  auto ps = make_parameters(9);
  auto expected = copies(ps);
  torch::optim::SGD sgd(ps, torch::optim::SGDOptions(0.5));
  for (size_t i = 0; i < ps.size(); ++i) {
    ps[i].mutable_grad() = torch::full(ps[i].sizes(), 2.0f);
    expected[i] = expected[i].detach() - 0.5 * 0.25 * 2.0;
  }
  attnmt::optimizer_step(sgd, 0.25);
  for (size_t i = 0; i < ps.size(); ++i) CHECK(torch::allclose(ps[i], expected[i]));
}

TEST_CASE("train.weight_decay: the one-pass Adam with decoupled decay equals torch::optim::AdamW", "[optimizer]") {
  const double scale = GENERATE(1.0, 0.37);
  auto fused = make_parameters(13);
  auto reference = copies(fused);
  const double lr = 0.01, decay = 0.1;
  torch::optim::Adam a(fused, torch::optim::AdamOptions(lr).betas({0.9, 0.98}).eps(1e-8));
  torch::optim::AdamW b(reference, torch::optim::AdamWOptions(lr).betas({0.9, 0.98}).eps(1e-8).weight_decay(decay));
  torch::manual_seed(17);
  for (int step = 0; step < 6; ++step) {
    for (size_t i = 0; i < fused.size(); ++i) {
      const auto g = torch::randn(fused[i].sizes());
      fused[i].mutable_grad() = g.clone();
      reference[i].mutable_grad() = g * scale;
    }
    attnmt::optimizer_step(a, scale, decay);
    b.step();
    for (size_t i = 0; i < fused.size(); ++i) {
      INFO("scale " << scale << " step " << step << " parameter " << i);
      CHECK(torch::allclose(fused[i], reference[i], 1e-5, 1e-6));
    }
  }
}
