#include "train/optimizer.h"

#include "train/adam_rows.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace attnmt {

double gradient_norm(const std::vector<torch::Tensor>& parameters) {
  double sum = 0;
  for (const auto& p : parameters) {
    if (!p.grad().defined()) continue;
    const double n = p.grad().norm().item<double>();
    sum += n * n;
  }
  return std::sqrt(sum);
}

namespace {

bool fusable(const torch::Tensor& p, const torch::Tensor& grad) {
  return p.device().is_cpu() && p.scalar_type() == torch::kFloat && grad.scalar_type() == torch::kFloat &&
         p.is_contiguous() && grad.is_contiguous() && !grad.is_sparse();
}

// m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  p -= step_size m / (sqrt(v) / sqrt(bc2) + eps)
// with g = scale * grad (+ weight_decay * p), as torch::optim::Adam computes it (the loop: adam_rows.h).
void fused_adam(float* p, const float* grad, float* m, float* v, int64_t n, double scale, double weight_decay,
                double beta1, double beta2, double eps, double step_size, double sqrt_bc2) {
  const AdamConstants c{static_cast<float>(scale),        static_cast<float>(weight_decay),
                        static_cast<float>(beta1),        static_cast<float>(beta2),
                        static_cast<float>(1 - beta1),    static_cast<float>(1 - beta2),
                        static_cast<float>(1 / sqrt_bc2), static_cast<float>(eps),
                        static_cast<float>(step_size)};
  at::parallel_for(0, n, 16384, [&](int64_t begin, int64_t end) {
    adam_rows(p + begin, grad + begin, m + begin, v + begin, end - begin, c);
  });
}

}  // namespace

void optimizer_step(torch::optim::Optimizer& optimizer, double grad_scale, double decoupled_weight_decay) {
  auto* adam = dynamic_cast<torch::optim::Adam*>(&optimizer);
  std::vector<torch::Tensor> generic;  // parameters left to optimizer.step()
  torch::NoGradGuard no_grad;
  if (decoupled_weight_decay > 0) {
    for (auto& group : optimizer.param_groups()) {
      const double keep = 1.0 - group.options().get_lr() * decoupled_weight_decay;
      for (auto& p : group.params()) {
        if (p.grad().defined()) p.mul_(keep);
      }
    }
  }
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const auto& options = adam ? static_cast<const torch::optim::AdamOptions&>(group.options())
                                 : torch::optim::AdamOptions();
      if (!adam || options.amsgrad() || !fusable(p, p.grad())) {
        generic.push_back(p);
        continue;
      }
      const auto key = optimizer_state_key(optimizer, p);
      auto& states = optimizer.state();
      auto it = states.find(key);
      if (it == states.end()) {  // as torch::optim::Adam initialises it
        auto state = std::make_unique<torch::optim::AdamParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        it = states.emplace(key, std::move(state)).first;
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*it->second);
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
      const double bc1 = 1 - std::pow(beta1, static_cast<double>(state.step()));
      const double bc2 = 1 - std::pow(beta2, static_cast<double>(state.step()));
      fused_adam(p.data_ptr<float>(), p.grad().data_ptr<float>(), state.exp_avg().data_ptr<float>(),
                 state.exp_avg_sq().data_ptr<float>(), p.numel(), grad_scale, options.weight_decay(), beta1, beta2,
                 options.eps(), options.lr() / bc1, std::sqrt(bc2));
    }
  }
  if (generic.empty()) return;
  if (grad_scale != 1.0) {
    for (auto& p : generic) p.grad().mul_(grad_scale);
  }
  if (!adam) {
    optimizer.step();
    return;
  }
  // Adam parameters that could not be fused: hide the fused ones' gradients from step().
  std::vector<std::pair<torch::Tensor, torch::Tensor>> hidden;  // parameter, its gradient
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const bool is_generic =
          std::any_of(generic.begin(), generic.end(), [&](const torch::Tensor& q) { return q.is_same(p); });
      if (!is_generic) {
        hidden.emplace_back(p, p.grad());
        p.mutable_grad() = torch::Tensor();
      }
    }
  }
  optimizer.step();
  for (auto& [p, grad] : hidden) p.mutable_grad() = grad;
}

}  // namespace attnmt
