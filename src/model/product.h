// How a model instance runs its matrix products. The model's math (encoder, decoder, output layer)
// is written once against `Product`: y = x W^T + b (+ add). Which implementation runs it is chosen
// once, when the products are made:
//   ExecutionMode::libtorch  LibTorch's products on the module's weights (training without
//                            gradients, validation, decoding without packed weights); with bf16,
//                            from a bfloat16 copy of the weight (fp32 result);
//   ExecutionMode::packed    weights packed once (runtime/packed_linear.h): for oneDNN in fp32
//                            or bf16, or quantised for the int8 kernel (decoding);
//   training with gradients  StepWeight (runtime/step_weight.h): the weight's gradient deferred to
//                            products over many steps' rows, made afresh for each forward pass.
#pragma once
#include <torch/torch.h>

#include <memory>

#include "runtime/packed_linear.h"

namespace attnmt {

class Product {
 public:
  virtual ~Product() = default;
  // x [N, In] -> x W^T + b + add [N, Out]; add [N, Out] or undefined.
  virtual torch::Tensor operator()(const torch::Tensor& x, const torch::Tensor& add = {}) const = 0;
};

struct ExecutionMode {
  enum Kind { kLibTorch, kPacked } kind = kLibTorch;
  // bf16: products in bfloat16 (fp32 accumulation and result); int8: packed only.
  ProductPrecision precision = ProductPrecision::kFp32;

  bool bf16() const { return precision == ProductPrecision::kBf16; }
  static ExecutionMode libtorch() { return {}; }
  static ExecutionMode packed(ProductPrecision precision) { return {kPacked, precision}; }
};

// weight [Out, In], bias [Out] or undefined. kPacked falls back to LibTorch's product where oneDNN
// has no kernel (see PackedLinear).
std::unique_ptr<Product> make_product(const torch::Tensor& weight, const torch::Tensor& bias, ExecutionMode mode);

// The training product of a weight that takes gradients (StepWeight) when gradients are being
// recorded, else LibTorch's. One per forward pass.
std::unique_ptr<Product> make_training_product(const torch::Tensor& weight, const torch::Tensor& bias);

// Whether the product runs on packed weights (for oneDNN, or int8).
bool is_packed(const Product& product);

}  // namespace attnmt
