#include "model/step_weight.h"

#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <string>
#include <vector>

#include "runtime/matmul_bf16.h"

namespace attnmt {

struct StepWeight::Record {
  torch::Tensor weight;              // [G, In] in the products' type
  torch::ScalarType type;            // the parameters' (and results') type
  std::vector<torch::Tensor> x, dy;  // per step, in the products' type; dy undefined until its backward
};

namespace {

using torch::autograd::Node;
using torch::autograd::variable_list;

// One step's backward: d x = d y W, d add = d y; d y is kept for the weight's gradient.
struct StepBackward : Node {
  StepBackward(std::shared_ptr<StepWeight::Record> record, size_t step) : record_(std::move(record)), step_(step) {}

  variable_list apply(variable_list&& grads) override {
    variable_list out(3);  // x, add, the token (nothing: the weight-gradient node reads the record)
    const auto& dy = grads[0];
    if (!dy.defined()) return out;  // nothing flowed back: the step's rows count as zeros
    const auto dyg = dy.to(record_->weight.scalar_type()).contiguous();
    record_->dy[step_] = dyg;
    if (should_compute_output(0)) {
      out[0] = torch::empty({dy.size(0), record_->weight.size(1)}, dy.options().dtype(record_->type));
      matmul_into(dyg, record_->weight, torch::Tensor(), out[0], /*accumulate=*/false);
    }
    if (should_compute_output(1)) out[1] = dy;
    return out;
  }
  std::string name() const override { return "StepWeightBackward"; }
  void release_variables() override { record_.reset(); }

 private:
  std::shared_ptr<StepWeight::Record> record_;
  size_t step_;
};

// Runs once every step's backward has (each has an edge to this node's token): the weight's and the
// bias's gradients as one product, and one sum, over all steps' rows.
struct WeightBackward : Node {
  WeightBackward(std::shared_ptr<StepWeight::Record> record, bool bias) : record_(std::move(record)), bias_(bias) {}

  variable_list apply(variable_list&& /*token's gradient: none*/) override {
    auto& r = *record_;
    variable_list out(bias_ ? 2 : 1);
    if (r.x.empty()) return out;
    const int64_t G = r.weight.size(0), In = r.weight.size(1);
    for (size_t t = 0; t < r.x.size(); ++t) {
      if (!r.dy[t].defined()) r.dy[t] = torch::zeros({r.x[t].size(0), G}, r.weight.options());
    }
    const auto x = torch::cat(r.x), dy = torch::cat(r.dy);  // [T N, In], [T N, G]
    r.x.clear();
    r.dy.clear();
    out[0] = torch::empty({G, In}, dy.options().dtype(r.type));
    matmul_into(dy.t(), x, torch::Tensor(), out[0], /*accumulate=*/false);
    if (bias_) out[1] = dy.sum(0, /*keepdim=*/false, r.type);
    return out;
  }
  std::string name() const override { return "StepWeightGradient"; }
  void release_variables() override { record_.reset(); }

 private:
  std::shared_ptr<StepWeight::Record> record_;
  bool bias_;
};

bool autocast_bf16(const torch::Tensor& weight) {
  return weight.is_cpu() && at::autocast::is_cpu_enabled() && at::autocast::get_autocast_cpu_dtype() == at::kBFloat16;
}

}  // namespace

bool use_step_weight(const torch::Tensor& weight) {
  return torch::GradMode::is_enabled() && weight.defined() && weight.requires_grad();
}

StepWeight::StepWeight(const torch::Tensor& weight, const torch::Tensor& bias) {
  torch::NoGradGuard no_grad;
  record_ = std::make_shared<Record>();
  record_->type = weight.scalar_type();
  record_->weight = autocast_bf16(weight) ? weight.to(torch::kBFloat16) : weight.detach();
  auto node = std::shared_ptr<WeightBackward>(new WeightBackward(record_, bias.defined()), torch::autograd::deleteNode);
  node->set_next_edges(bias.defined() ? torch::autograd::collect_next_edges(weight, bias)
                                      : torch::autograd::collect_next_edges(weight));
  token_ = torch::empty({0}, weight.options());
  torch::autograd::set_history(token_, node);
  bias_ = bias.defined() ? bias.detach() : torch::Tensor();
}

torch::Tensor StepWeight::operator()(const torch::Tensor& x, const torch::Tensor& add) const {
  auto& r = *record_;
  torch::Tensor xg, y;
  {
    torch::NoGradGuard no_grad;
    xg = x.detach().to(r.weight.scalar_type()).contiguous();
    if (add.defined()) {
      y = bias_.defined() ? torch::add(add.detach(), bias_) : add.detach().to(r.type, /*non_blocking=*/false, /*copy=*/true);
      if (y.scalar_type() != r.type) y = y.to(r.type);
      matmul_into(xg, r.weight.t(), torch::Tensor(), y, /*accumulate=*/true);
    } else {
      y = torch::empty({x.size(0), r.weight.size(0)}, x.options().dtype(r.type));
      matmul_into(xg, r.weight.t(), bias_, y, /*accumulate=*/false);
    }
  }
  auto node = std::shared_ptr<StepBackward>(new StepBackward(record_, r.x.size()), torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(x, add, token_));
  torch::autograd::set_history(y, node);
  r.x.push_back(xg);
  r.dy.emplace_back();
  return y;
}

}  // namespace attnmt
