#include "model/product.h"

#include <ATen/autocast_mode.h>

#include "runtime/autocast.h"
#include "runtime/packed_linear.h"
#include "runtime/step_weight.h"

namespace attnmt {

namespace {

// Under CPU autocast (train.precision: bf16) the weight's cast copy, made once per forward pass
// (autocast's cache keeps casts of leaf weights; a transposed view would be cast at every step,
// and its gradient cast back at every step).
torch::Tensor autocast_weight(const torch::Tensor& w) {
  if (!cpu_autocast_enabled()) return w;
  return at::autocast::cached_cast(cpu_autocast_dtype(), w, c10::DeviceType::CPU);
}

class LibTorchProduct : public Product {
 public:
  LibTorchProduct(torch::Tensor weight, torch::Tensor bias) : weight_(std::move(weight)), bias_(std::move(bias)) {}
  torch::Tensor operator()(const torch::Tensor& x, const torch::Tensor& add) const override {
    if (!add.defined()) return torch::nn::functional::linear(x, weight_, bias_);
    return torch::addmm(bias_.defined() ? add + bias_ : add, x, autocast_weight(weight_).t());
  }

 private:
  torch::Tensor weight_, bias_;
};

// Decoding without packed weights, in bfloat16: the weight converted once.
class Bf16CopyProduct : public Product {
 public:
  Bf16CopyProduct(const torch::Tensor& weight, torch::Tensor bias)
      : weight_(weight.detach().to(torch::kBFloat16).contiguous()), bias_(std::move(bias)) {}
  torch::Tensor operator()(const torch::Tensor& x, const torch::Tensor& add) const override {
    auto y = torch::mm(x.to(torch::kBFloat16), weight_.t()).to(torch::kFloat);
    if (bias_.defined()) y.add_(bias_);
    return add.defined() ? y.add_(add) : y;
  }

 private:
  torch::Tensor weight_, bias_;
};

class PackedProduct : public Product {
 public:
  PackedProduct(const torch::Tensor& weight, const torch::Tensor& bias, ProductPrecision precision)
      : linear_(weight, bias, precision) {}
  torch::Tensor operator()(const torch::Tensor& x, const torch::Tensor& add) const override {
    auto y = linear_(x);
    return add.defined() ? y.add_(add) : y;
  }
  bool packed() const { return linear_.packed(); }

 private:
  PackedLinear linear_;
};

class StepWeightProduct : public Product {
 public:
  StepWeightProduct(const torch::Tensor& weight, const torch::Tensor& bias) : weight_(weight, bias) {}
  torch::Tensor operator()(const torch::Tensor& x, const torch::Tensor& add) const override { return weight_(x, add); }

 private:
  StepWeight weight_;
};

}  // namespace

std::unique_ptr<Product> make_product(const torch::Tensor& weight, const torch::Tensor& bias, ExecutionMode mode) {
  if (mode.kind == ExecutionMode::kPacked) return std::make_unique<PackedProduct>(weight, bias, mode.precision);
  TORCH_CHECK(mode.precision != ProductPrecision::kInt8, "int8 products run on packed weights only");
  if (mode.bf16()) return std::make_unique<Bf16CopyProduct>(weight, bias);
  return std::make_unique<LibTorchProduct>(weight, bias);
}

std::unique_ptr<Product> make_training_product(const torch::Tensor& weight, const torch::Tensor& bias) {
  if (use_step_weight(weight)) return std::make_unique<StepWeightProduct>(weight, bias);
  return std::make_unique<LibTorchProduct>(weight, bias);
}

bool is_packed(const Product& product) {
  const auto* p = dynamic_cast<const PackedProduct*>(&product);
  return p && p->packed();
}

}  // namespace attnmt
