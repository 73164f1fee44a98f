#include "runtime/step_weight.h"

#include <torch/csrc/autograd/functions/utils.h>

#include <string>
#include <utility>
#include <vector>

#include "runtime/matmul_bf16.h"

namespace attnmt {

struct StepWeight::Record {
  // Rows of d y gathered before their share of the weight's gradient is computed: products of
  // this depth run near the kernels' speed, and only this many rows wait in memory (all T steps'
  // d y at once would outgrow the activations that back-propagation frees meanwhile and raised the
  // training peak RSS: docs/performance.md, "Training, 2026-11-25 (later): StepWeight").
  static constexpr int64_t kFlushRows = 512;

  torch::Tensor weight;          // [G, In] in the products' type
  torch::ScalarType type;        // the parameters' (and gradients') type
  bool bias = false;
  std::vector<torch::Tensor> x;  // per step [N_t, In] in the products' type; released once used
  std::vector<size_t> pending;   // steps whose d y waits in dy_pending (same order)
  std::vector<torch::Tensor> dy_pending;
  int64_t pending_rows = 0;
  torch::Tensor dw, db;  // the gradients so far

  void keep(size_t t, torch::Tensor dy) {
    pending.push_back(t);
    pending_rows += dy.size(0);
    dy_pending.push_back(std::move(dy));
    if (pending_rows >= kFlushRows) flush();
  }

  // dW (+)= [d y_t ...]^T [x_t ...] and db (+)= sum of the rows, over the pending steps.
  void flush() {
    if (pending.empty()) return;
    std::vector<torch::Tensor> xs;
    for (size_t t : pending) {
      TORCH_CHECK(x[t].defined(), "StepWeight: a second backward through the same steps (retain_graph) is not supported");
      xs.push_back(std::exchange(x[t], torch::Tensor()));
    }
    const auto xm = xs.size() == 1 ? xs[0] : torch::cat(xs);
    const auto dym = dy_pending.size() == 1 ? dy_pending[0] : torch::cat(dy_pending);
    const bool first = !dw.defined();
    if (first) dw = torch::empty({weight.size(0), weight.size(1)}, weight.options().dtype(type));
    matmul_into(dym.t(), xm, torch::Tensor(), dw, /*accumulate=*/!first);
    if (bias) {
      auto sum = dym.sum(0, /*keepdim=*/false, type);
      db = first ? sum : db.add_(sum);
    }
    pending.clear();
    dy_pending.clear();
    pending_rows = 0;
  }
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
    if (!dy.defined()) return out;  // nothing flowed back: the step adds nothing to the weight's gradient
    auto& r = *record_;
    auto dyg = dy.to(r.weight.scalar_type()).contiguous();
    if (should_compute_output(0)) {
      out[0] = torch::empty({dy.size(0), r.weight.size(1)}, dy.options().dtype(r.type));
      matmul_into(dyg, r.weight, torch::Tensor(), out[0], /*accumulate=*/false);
    }
    if (should_compute_output(1)) out[1] = dy;
    r.keep(step_, std::move(dyg));
    return out;
  }
  std::string name() const override { return "StepWeightBackward"; }
  void release_variables() override { record_.reset(); }

 private:
  std::shared_ptr<StepWeight::Record> record_;
  size_t step_;
};

// Runs once every step's backward has (each has an edge to this node's token): the rest of the
// weight's and the bias's gradients.
struct WeightBackward : Node {
  explicit WeightBackward(std::shared_ptr<StepWeight::Record> record) : record_(std::move(record)) {}

  variable_list apply(variable_list&& /*token's gradient: none*/) override {
    auto& r = *record_;
    r.flush();
    r.x.clear();
    variable_list out(r.bias ? 2 : 1);
    out[0] = std::move(r.dw);  // undefined if no step's backward ran
    if (r.bias) out[1] = std::move(r.db);
    return out;
  }
  std::string name() const override { return "StepWeightGradient"; }
  void release_variables() override { record_.reset(); }

 private:
  std::shared_ptr<StepWeight::Record> record_;
};

}  // namespace

bool use_step_weight(const torch::Tensor& weight) {
  return torch::GradMode::is_enabled() && weight.defined() && weight.requires_grad();
}

StepWeight::StepWeight(const torch::Tensor& weight, const torch::Tensor& bias) {
  torch::NoGradGuard no_grad;
  record_ = std::make_shared<Record>();
  record_->type = weight.scalar_type();
  record_->weight = weight.is_cpu() && cpu_autocast_bf16() ? weight.to(torch::kBFloat16) : weight.detach();
  record_->bias = bias.defined();
  auto node = std::shared_ptr<WeightBackward>(new WeightBackward(record_), torch::autograd::deleteNode);
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
  return y;
}

}  // namespace attnmt
