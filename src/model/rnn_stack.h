// A stack of LSTM or GRU cells run one step at a time (the decoder's recurrence).
// Layer 0's input is split in two parts: a "static" part known for all steps in advance (the
// target embeddings in teacher forcing) whose gate projection is computed for all steps in one
// GEMM by project_static(), and a "dynamic" part only known at step t (input feeding h~_{t-1},
// or Bahdanau's context c_t).
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "util/choices.h"
#include "model/product.h"

namespace attnmt {

struct RnnState {
  std::vector<torch::Tensor> h;  // per layer [N, H]
  std::vector<torch::Tensor> c;  // per layer [N, H] (LSTM only; empty for GRU)
};

// The stack's products in one execution mode (model/product.h).
struct RnnProducts {
  std::unique_ptr<Product> input;             // layer 0's static input (w_static, b)
  std::unique_ptr<Product> dynamic;           // layer 0's dynamic input (w_dynamic), if any
  std::vector<std::unique_ptr<Product>> ih;   // layers >= 1 (w_ih, b_ih); null for layer 0
  std::vector<std::unique_ptr<Product>> hh;   // every layer (w_hh, b_hh)
};

// One LSTM or GRU cell step from its input gates [N, G] (x W_ih^T + b_ih): the recurrent product
// hh (W_hh, b_hh) of h, the gates, and the new h (and c, for an LSTM) written back. GRU:
// h' = (1 - z) n + z h with n = tanh(gi_n + r (W_hn h + b_hn)), as PyTorch's.
torch::Tensor rnn_cell(bool lstm, const torch::Tensor& input_gates, const Product& hh, torch::Tensor& h,
                       torch::Tensor* c);

class RnnStackImpl : public torch::nn::Module {
 public:
  RnnStackImpl(RnnType rnn, int64_t static_size, int64_t dynamic_size, int64_t hidden,
               int64_t layers, double dropout);

  // [..., static_size] -> [..., gates]: layer 0's input projection of the static input (+ bias).
  torch::Tensor project_static(const torch::Tensor& x_static, const RnnProducts& products) const {
    return (*products.input)(x_static);
  }
  // One step. static_gates = project_static(x_t) [N, G]; dynamic [N, dynamic_size] or undefined
  // when dynamic_size == 0. Updates state, returns the top layer's output [N, H].
  torch::Tensor step(const torch::Tensor& static_gates, const torch::Tensor& dynamic, RnnState& state,
                     const RnnProducts& products);
  // The products in `mode` on the current weights (stale once they change).
  RnnProducts products(ExecutionMode mode) const;
  // Training's products for one forward pass: the recurrent weights through StepWeight when
  // gradients are recorded (runtime/step_weight.h).
  RnnProducts training_products() const;

  bool is_lstm() const { return lstm_; }
  int64_t hidden_size() const { return hidden_; }
  int64_t layers() const { return layers_; }

 private:
  torch::Tensor cell(int64_t layer, const torch::Tensor& input_gates, RnnState& state, const RnnProducts& products);
  template <typename Make>
  RnnProducts make_products(Make make) const;
  bool lstm_;
  int64_t hidden_, layers_, gates_;
  double dropout_;
  torch::Tensor w_static_, b_, w_dynamic_;  // layer 0: [G, static], [G], [G, dynamic]
  std::vector<torch::Tensor> w_ih_, b_ih_;  // layers >= 1: [G, H], [G]
  std::vector<torch::Tensor> w_hh_, b_hh_;  // all layers: [G, H], [G]
};
TORCH_MODULE(RnnStack);

}  // namespace attnmt
