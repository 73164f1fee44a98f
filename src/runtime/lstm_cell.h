// The LSTM cell's element-wise part, fused: from the gate pre-activations to the new states.
//   i = sigmoid(a_i)  f = sigmoid(a_f)  g = tanh(a_g)  o = sigmoid(a_o)
//   c = f * c_prev + i * g            h = o * tanh(c)
// gates [N, 4H] = (a_i, a_f, a_g, a_o) as in torch::nn::LSTM, c_prev [N, H].
//
// Why: written with ATen operators, one decoder step of one layer is ~10 operators forward and
// ~15 backward, each an autograd node with its own [N, H] temporaries, on blocks as small as
// 32 x 256 (a replica's slice of a batch): the bookkeeping costs more than the arithmetic. Here it
// is one autograd node whose forward and backward are each one pass over the rows, with the
// derivative written out (d c / d c_prev = f, d h / d c = o (1 - tanh(c)^2), ...).
//
// CPU tensors take the fused path: fp64 in double, fp32 and bf16 (gates from products under bf16
// autocast) in fp32, so the states h and c come out fp32. float: exp through a vectorisable
// polynomial (relative error < 2e-7), compiled for AVX-512, AVX2 and the baseline and chosen at
// run time. Other tensors (CUDA) take the same formulas as ATen operators.
#pragma once
#include <torch/torch.h>

#include <utility>

namespace attnmt {

// Returns (h, c), both [N, H]. Differentiable with respect to gates and c_prev.
std::pair<torch::Tensor, torch::Tensor> lstm_cell(const torch::Tensor& gates, const torch::Tensor& c_prev);

// One LSTM layer over a whole batch of sequences, as torch::nn::LSTM's (one layer, batch_first,
// zero initial states, its weight layout), for training on the CPU: x [B, S, In] -> h [B, S, H].
// One autograd node for the layer. Forward: every step's input gates in one product, then per
// step the recurrent product and the fused cell. Backward (back-propagation through time by
// hand): per step the cell's derivative and d h_{t-1} = dgates_t W_hh; then the weights' gradients
// and the input's, each one product over all S x B rows. Under bf16 autocast the products run in
// bfloat16 (oneDNN, fp32 results; the states stay fp32). Why: at::lstm makes ~10 autograd
// operators per step forward and ~15 backward, and a weight-gradient product per step (bf16 is
// faster this way, fp32 the same; docs/performance.md).
torch::Tensor lstm_layer(const torch::Tensor& x, const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                         const torch::Tensor& b_ih, const torch::Tensor& b_hh);

// The same with ATen operators (the fallback, and the reference the tests compare with).
std::pair<torch::Tensor, torch::Tensor> lstm_cell_unfused(const torch::Tensor& gates, const torch::Tensor& c_prev);

}  // namespace attnmt
