#include "model/rnn_stack.h"

#include "runtime/lstm_cell.h"
#include "runtime/random.h"

#include <cmath>

namespace attnmt {

RnnStackImpl::RnnStackImpl(RnnType rnn, int64_t static_size, int64_t dynamic_size,
                           int64_t hidden, int64_t layers, double dropout)
    : lstm_(rnn == RnnType::lstm), hidden_(hidden), layers_(layers), gates_((rnn == RnnType::lstm ? 4 : 3) * hidden),
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

template <typename Make>
RnnProducts RnnStackImpl::make_products(Make make) const {
  RnnProducts p;
  if (w_dynamic_.defined()) p.dynamic = make(w_dynamic_, torch::Tensor());
  for (int64_t l = 0; l < layers_; ++l) {
    p.ih.push_back(l > 0 ? make(w_ih_[l], b_ih_[l]) : nullptr);
    p.hh.push_back(make(w_hh_[l], b_hh_[l]));
  }
  return p;
}

RnnProducts RnnStackImpl::products(ExecutionMode mode) const {
  auto p = make_products([&](const torch::Tensor& w, const torch::Tensor& b) { return make_product(w, b, mode); });
  p.input = make_product(w_static_, b_, mode);
  return p;
}

RnnProducts RnnStackImpl::training_products() const {
  auto p = make_products(make_training_product);
  // One product over all steps' embeddings (teacher forcing): LibTorch's.
  p.input = make_product(w_static_, b_, ExecutionMode::libtorch());
  return p;
}

torch::Tensor rnn_cell(bool lstm, const torch::Tensor& input_gates, const Product& hh, torch::Tensor& h,
                       torch::Tensor* c) {
  if (lstm) {
    auto gates = hh(h, input_gates);             // [N, 4H]
    auto [h_new, c_new] = lstm_cell(gates, *c);  // runtime/lstm_cell.h: one fused node
    *c = c_new;
    h = h_new;
    return h_new;
  }
  // GRU: r and z from input+hidden; n uses r * (W_hn h + b_hn).
  auto gh = hh(h);  // [N, 3H]
  auto gi = input_gates.chunk(3, 1);
  auto hg = gh.chunk(3, 1);
  auto r = torch::sigmoid(gi[0] + hg[0]);
  auto z = torch::sigmoid(gi[1] + hg[1]);
  auto n = torch::tanh(gi[2] + r * hg[2]);
  h = n + z * (h - n);  // (1 - z) * n + z * h
  return h;
}

torch::Tensor RnnStackImpl::cell(int64_t layer, const torch::Tensor& input_gates, RnnState& state,
                                 const RnnProducts& products) {
  return rnn_cell(lstm_, input_gates, *products.hh[layer], state.h[layer], lstm_ ? &state.c[layer] : nullptr);
}

torch::Tensor RnnStackImpl::step(const torch::Tensor& static_gates, const torch::Tensor& dynamic,
                                 RnnState& state, const RnnProducts& products) {
  auto gates = w_dynamic_.defined() ? (*products.dynamic)(dynamic, static_gates) : static_gates;
  auto out = cell(0, gates, state, products);
  for (int64_t l = 1; l < layers_; ++l) {
    out = cell(l, (*products.ih[l])(stream_dropout(out, dropout_, is_training())), state, products);
  }
  return out;
}

}  // namespace attnmt
