// How a model instance runs its matrix products. The model's math (encoder, decoder, output layer)
// is written once against `Product`: y = x W^T + b (+ add). Which implementation runs it is chosen
// once, when the products are made:
//   ExecutionMode::libtorch  LibTorch's products on the module's weights (training without
//                            gradients, validation, decoding without packed weights); with bf16,
//                            from a bfloat16 copy of the weight (fp32 result);
//   ExecutionMode::packed    weights packed once for oneDNN (runtime/packed_linear.h), fp32 or
//                            bf16 operands (decoding);
//   training with gradients  StepWeight (runtime/step_weight.h): the weight's gradient deferred to
//                            products over many steps' rows, made afresh for each forward pass.
#pragma once
#include <torch/torch.h>

#include <memory>

namespace attnmt {

class Product {
 public:
  virtual ~Product() = default;
  // x [N, In] -> x W^T + b + add [N, Out]; add [N, Out] or undefined.
  virtual torch::Tensor operator()(const torch::Tensor& x, const torch::Tensor& add = {}) const = 0;
};

struct ExecutionMode {
  enum Kind { kLibTorch, kPacked } kind = kLibTorch;
  bool bf16 = false;  // products in bfloat16 (fp32 accumulation and result)

  static ExecutionMode libtorch() { return {}; }
  static ExecutionMode packed(bool bf16) { return {kPacked, bf16}; }
};

// weight [Out, In], bias [Out] or undefined. kPacked falls back to LibTorch's product where oneDNN
// has no kernel (see PackedLinear).
std::unique_ptr<Product> make_product(const torch::Tensor& weight, const torch::Tensor& bias, ExecutionMode mode);

// The training product of a weight that takes gradients (StepWeight) when gradients are being
// recorded, else LibTorch's. One per forward pass.
std::unique_ptr<Product> make_training_product(const torch::Tensor& weight, const torch::Tensor& bias);

// Whether the product runs on weights packed for oneDNN.
bool is_packed(const Product& product);

}  // namespace attnmt
