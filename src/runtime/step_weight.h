// A weight that every step of the decoder's recurrence multiplies by, in training:
//   y_t = x_t W^T (+ b) (+ add_t)            for t = 1..T, x_t [N, In], W [G, In]
// with the weight's gradient deferred. Each step's backward computes only d x_t = d y_t W (and
// d add_t = d y_t) and keeps d y_t; whenever 512 rows are kept, dW += [d y_t; ...]^T [x_t; ...]
// (and db += their sum) runs as one product over them; one more autograd node, which every step's
// node depends on and which therefore runs after all of them, adds the rest and hands dW and db on.
//
// Why: LibTorch's addmm computes a [G, N] x [N, In] weight-gradient product at every step (N = 32
// rows for a replica's half of a 64-sentence batch: too thin for the CPU's kernels), and autograd
// then sums the T products one at a time; under bf16 autocast those products and their sums were
// bfloat16 (autocast's cached weight copy), so the sum over the steps kept about 3 significant
// digits. Here the products accumulate in fp32 (oneDNN) and write an fp32 gradient. The
// steps' autograd bookkeeping is lighter too: no per-step cast node for x_t.
//
// Under CPU bf16 autocast (train.precision: bf16) the products take bfloat16 operands (the weight
// cast once, x_t and d y_t at each step) with fp32 results; otherwise they run in the weight's
// type. Device-agnostic (runtime/matmul_bf16.h's matmul_into falls back to LibTorch's products).
// Not for double backward, nor a second backward through the same steps (retain_graph: an
// error); x_t must not be modified in place after the step (it is kept, as autograd would keep
// it, without a version check).
#pragma once
#include <torch/torch.h>

#include <memory>

namespace attnmt {

class StepWeight {
 public:
  StepWeight() = default;
  // weight [G, In] (requires grad), bias [G] or undefined. One object per forward pass.
  StepWeight(const torch::Tensor& weight, const torch::Tensor& bias);

  // x [N, In] -> x W^T + b + add [N, G] in the weight's type; add [N, G] or undefined.
  torch::Tensor operator()(const torch::Tensor& x, const torch::Tensor& add = {}) const;

  explicit operator bool() const { return record_ != nullptr; }

  struct Record;  // the weight's copy and the steps' inputs and output gradients

 private:
  std::shared_ptr<Record> record_;
  torch::Tensor bias_;   // detached
  torch::Tensor token_;  // the weight-gradient node's output: every step's node has an edge to it
};

// Whether training products of `weight` should go through StepWeight: gradients are being
// recorded and the weight takes one.
bool use_step_weight(const torch::Tensor& weight);

}  // namespace attnmt
