// The update step: gradient norm, clipping and the optimizer, with the clipping folded into a
// one-pass Adam. LibTorch 1.13's Adam makes seven passes over every parameter (and allocates two
// temporaries per parameter) and clip_grad_norm_ one more to scale the gradients, a large part of
// a training step. The state lives in the torch::optim::Adam object (LibTorch's checkpoints and
// resume), only the arithmetic is done here.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace attnmt {

// L2 norm of all gradients together (parameters without a gradient are skipped).
double gradient_norm(const std::vector<torch::Tensor>& parameters);

// One update with every gradient multiplied by grad_scale first (1 = unclipped). Adam on CPU
// float parameters: one fused pass per parameter, the same formula as torch::optim::Adam
// (bias-corrected, weight decay added to the gradient). Anything else (SGD, AMSGrad, other devices
// or dtypes): the gradients are scaled in place and optimizer.step() runs.
void optimizer_step(torch::optim::Optimizer& optimizer, double grad_scale);

}  // namespace attnmt
