// The update step: gradient norm, clipping and the optimizer, with the clipping folded into a
// one-pass Adam. LibTorch 1.13's Adam makes seven passes over every parameter (and allocates two
// temporaries per parameter) and clip_grad_norm_ one more to scale the gradients, a large part of
// a training step. The state lives in the torch::optim::Adam object (LibTorch's checkpoints and
// resume), only the arithmetic is done here.
#pragma once
#include <torch/torch.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace attnmt {

// The key under which torch::optim keeps a parameter's state: LibTorch 1.x formats the
// TensorImpl's address as a string, 2.x uses the address itself. (A template, so that only the
// branch of the LibTorch at hand is compiled.)
template <typename Optimizer>
auto optimizer_state_key(Optimizer& optimizer, const torch::Tensor& p) {
  using Key = typename std::remove_reference_t<decltype(optimizer.state())>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

// L2 norm of all gradients together (parameters without a gradient are skipped).
double gradient_norm(const std::vector<torch::Tensor>& parameters);

// One update with every gradient multiplied by grad_scale first (1 = unclipped). Adam on CPU
// float parameters: one fused pass per parameter, the same formula as torch::optim::Adam
// (bias-corrected, weight decay added to the gradient). Anything else (SGD, AMSGrad, other devices
// or dtypes): the gradients are scaled in place and optimizer.step() runs.
// decoupled_weight_decay (train.weight_decay; Loshchilov & Hutter 2019, AdamW's line 12): each
// parameter with a gradient is first multiplied by 1 - lr * decoupled_weight_decay, lr being its
// group's learning rate, so the decay does not pass through Adam's per-parameter scaling.
void optimizer_step(torch::optim::Optimizer& optimizer, double grad_scale, double decoupled_weight_decay = 0);

}  // namespace attnmt
