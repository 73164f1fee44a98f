#include "model/rnn_stack.h"

#include "model/lstm_cell.h"
#include "model/random.h"

#include <ATen/autocast_mode.h>

#include <cmath>

namespace attnmt {

namespace {
// Under CPU autocast (train.precision: bf16) the weight's cast copy, made once per forward pass
// (autocast's cache keeps casts of leaf weights; a transposed view would be cast at every step,
// and its gradient cast back at every step).
torch::Tensor autocast_weight(const torch::Tensor& w) {
  if (!at::autocast::is_cpu_enabled()) return w;
  return at::autocast::cached_cast(at::autocast::get_autocast_cpu_dtype(), w, c10::DeviceType::CPU);
}
}  // namespace

RnnStackImpl::RnnStackImpl(const std::string& rnn, int64_t static_size, int64_t dynamic_size,
                           int64_t hidden, int64_t layers, double dropout)
    : lstm_(rnn == "lstm"), hidden_(hidden), layers_(layers), gates_((rnn == "lstm" ? 4 : 3) * hidden),
      dropout_(dropout) {
  // PyTorch's RNN initialisation: U(-1/sqrt(H), 1/sqrt(H)) for every weight and bias.
  const double k = 1.0 / std::sqrt(static_cast<double>(hidden));
  auto init = [&](std::vector<int64_t> shape) { return torch::empty(shape).uniform_(-k, k); };
  w_static_ = register_parameter("w_static", init({gates_, static_size}));
  b_ = register_parameter("b_ih_0", init({gates_}));
  if (dynamic_size > 0) w_dynamic_ = register_parameter("w_dynamic", init({gates_, dynamic_size}));
  for (int64_t l = 0; l < layers; ++l) {
    if (l > 0) {
      w_ih_.push_back(register_parameter("w_ih_" + std::to_string(l), init({gates_, hidden})));
      b_ih_.push_back(register_parameter("b_ih_" + std::to_string(l), init({gates_})));
    } else {
      w_ih_.emplace_back();
      b_ih_.emplace_back();
    }
    w_hh_.push_back(register_parameter("w_hh_" + std::to_string(l), init({gates_, hidden})));
    b_hh_.push_back(register_parameter("b_hh_" + std::to_string(l), init({gates_})));
  }
  if (lstm_) {
    // Forget-gate bias 1 (Jozefowicz et al., 2015): helps gradients flow early in training.
    torch::NoGradGuard no_grad;
    for (int64_t l = 0; l < layers; ++l) b_hh_[l].slice(0, hidden, 2 * hidden).fill_(1.0);
  }
}

PackedRnnStack RnnStackImpl::pack(bool bf16) const {
  PackedRnnStack p{PackedLinear(w_static_, b_, bf16), std::nullopt, {}, {}};
  if (w_dynamic_.defined()) p.dynamic.emplace(w_dynamic_, torch::Tensor(), bf16);
  for (int64_t l = 0; l < layers_; ++l) {
    p.ih.emplace_back();
    if (l > 0) p.ih.back().emplace(w_ih_[l], b_ih_[l], bf16);
    p.hh.emplace_back(w_hh_[l], b_hh_[l], bf16);
  }
  return p;
}

std::shared_ptr<const RnnStepWeights> RnnStackImpl::step_weights() const {
  auto w = std::make_shared<RnnStepWeights>();
  if (w_dynamic_.defined()) w->dynamic = StepWeight(w_dynamic_, torch::Tensor());
  for (int64_t l = 0; l < layers_; ++l) {
    w->ih.push_back(l > 0 ? StepWeight(w_ih_[l], b_ih_[l]) : StepWeight());
    w->hh.emplace_back(w_hh_[l], b_hh_[l]);
  }
  return w;
}

torch::Tensor RnnStackImpl::project_static(const torch::Tensor& x_static, const PackedRnnStack* packed) {
  if (packed) return packed->input(x_static);
  return torch::nn::functional::linear(x_static, w_static_, b_);
}

torch::Tensor RnnStackImpl::cell(int64_t layer, const torch::Tensor& input_gates, RnnState& state,
                                 const PackedRnnStack* packed) {
  const auto& h = state.h[layer];
  const auto* weights = state.weights.get();
  if (lstm_) {
    auto gates = packed    ? packed->hh[layer](h).add_(input_gates)
                 : weights ? weights->hh[layer](h, input_gates)
                           : torch::addmm(input_gates + b_hh_[layer], h, autocast_weight(w_hh_[layer]).t());  // [N, 4H]
    auto [h_new, c] = lstm_cell(gates, state.c[layer]);  // model/lstm_cell.h: one fused node
    state.c[layer] = c;
    state.h[layer] = h_new;
    return h_new;
  }
  // GRU: r and z from input+hidden; n uses r * (W_hn h + b_hn).
  auto gh = packed    ? packed->hh[layer](h)
            : weights ? weights->hh[layer](h)
                      : torch::addmm(b_hh_[layer], h, autocast_weight(w_hh_[layer]).t());  // [N, 3H]
  auto gi = input_gates.chunk(3, 1);
  auto hh = gh.chunk(3, 1);
  auto r = torch::sigmoid(gi[0] + hh[0]);
  auto z = torch::sigmoid(gi[1] + hh[1]);
  auto n = torch::tanh(gi[2] + r * hh[2]);
  auto h_new = n + z * (h - n);  // (1 - z) * n + z * h
  state.h[layer] = h_new;
  return h_new;
}

torch::Tensor RnnStackImpl::step(const torch::Tensor& static_gates, const torch::Tensor& dynamic,
                                 RnnState& state, const PackedRnnStack* packed) {
  if (!packed && !state.weights && use_step_weight(w_hh_[0])) state.weights = step_weights();
  const auto* weights = state.weights.get();
  auto gates = static_gates;
  if (w_dynamic_.defined()) {
    gates = packed    ? (*packed->dynamic)(dynamic).add_(gates)
            : weights ? weights->dynamic(dynamic, gates)
                      : torch::addmm(gates, dynamic, autocast_weight(w_dynamic_).t());
  }
  auto out = cell(0, gates, state, packed);
  for (int64_t l = 1; l < layers_; ++l) {
    auto in = stream_dropout(out, dropout_, is_training());
    out = cell(l,
               packed    ? (*packed->ih[l])(in)
               : weights ? weights->ih[l](in)
                         : torch::addmm(b_ih_[l], in, autocast_weight(w_ih_[l]).t()),
               state, packed);
  }
  return out;
}

}  // namespace attnmt
