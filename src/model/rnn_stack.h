// A stack of LSTM or GRU cells run one step at a time (the decoder's recurrence).
// Layer 0's input is split in two parts: a "static" part known for all steps in advance (the
// target embeddings in teacher forcing) whose gate projection is computed for all steps in one
// GEMM by project_static(), and a "dynamic" part only known at step t (input feeding h~_{t-1},
// or Bahdanau's context c_t).
#pragma once
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/step_weight.h"
#include "runtime/packed_linear.h"

namespace attnmt {

// The stack's products for one sequence's steps in training, the weights' gradients deferred to
// products over many steps' rows (model/step_weight.h). Made by step() at a sequence's first step.
struct RnnStepWeights {
  StepWeight dynamic;              // layer 0's dynamic input (w_dynamic), if any
  std::vector<StepWeight> ih, hh;  // layers >= 1 (w_ih, b_ih; ih[0] unused); every layer (w_hh, b_hh)
};

struct RnnState {
  std::vector<torch::Tensor> h;  // per layer [N, H]
  std::vector<torch::Tensor> c;  // per layer [N, H] (LSTM only; empty for GRU)
  std::shared_ptr<const RnnStepWeights> weights;  // training (gradients recorded), else null
};

// The stack's products for decoding, on its weights as they are when pack() is called
// (runtime/packed_linear.h). Passed to project_static() / step(); stale once the weights change.
struct PackedRnnStack {
  PackedLinear input;                          // layer 0's static input (w_static, b)
  std::optional<PackedLinear> dynamic;         // layer 0's dynamic input (w_dynamic), if any
  std::vector<std::optional<PackedLinear>> ih;  // layers >= 1 (w_ih, b_ih); nullopt for layer 0
  std::vector<PackedLinear> hh;                 // every layer (w_hh, b_hh)
};

class RnnStackImpl : public torch::nn::Module {
 public:
  RnnStackImpl(const std::string& rnn, int64_t static_size, int64_t dynamic_size, int64_t hidden,
               int64_t layers, double dropout);

  // [..., static_size] -> [..., gates]: layer 0's input projection of the static input (+ bias).
  // packed (decoding, x_static [N, static_size]): the same product on the packed weights.
  torch::Tensor project_static(const torch::Tensor& x_static, const PackedRnnStack* packed = nullptr);
  // One step. static_gates = project_static(x_t) [N, G]; dynamic [N, dynamic_size] or undefined
  // when dynamic_size == 0. Updates state, returns the top layer's output [N, H]. With gradients
  // recorded (and no packed weights), the first step of a state puts RnnStepWeights in it.
  torch::Tensor step(const torch::Tensor& static_gates, const torch::Tensor& dynamic, RnnState& state,
                     const PackedRnnStack* packed = nullptr);
  // The current weights, packed for step() (bf16: products in bfloat16).
  PackedRnnStack pack(bool bf16) const;

  bool is_lstm() const { return lstm_; }
  int64_t hidden_size() const { return hidden_; }
  int64_t layers() const { return layers_; }

 private:
  torch::Tensor cell(int64_t layer, const torch::Tensor& input_gates, RnnState& state, const PackedRnnStack* packed);
  std::shared_ptr<const RnnStepWeights> step_weights() const;
  bool lstm_;
  int64_t hidden_, layers_, gates_;
  double dropout_;
  torch::Tensor w_static_, b_, w_dynamic_;  // layer 0: [G, static], [G], [G, dynamic]
  std::vector<torch::Tensor> w_ih_, b_ih_;  // layers >= 1: [G, H], [G]
  std::vector<torch::Tensor> w_hh_, b_hh_;  // all layers: [G, H], [G]
};
TORCH_MODULE(RnnStack);

}  // namespace attnmt
