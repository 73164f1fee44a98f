#include "model/decoder.h"
#include "runtime/random.h"

#include <cmath>

#include "attention/registry.h"
#include "util/decode_phases.h"

namespace attnmt {

namespace F = torch::nn::functional;

namespace {

// The attention's step, timed apart from the rest of the step (util/decode_phases.h).
AttentionOutput attend(Attention& attention, const torch::Tensor& query, const AttentionMemory& memory,
                       const AttentionState& state, int64_t t) {
  PhaseScope phase(DecodePhase::kAttention);
  return attention.forward(query, memory, state, t);
}

}  // namespace

DecoderStepState DecoderStepState::index_select(const torch::Tensor& index) const {
  DecoderStepState out;
  for (const auto& h : rnn.h) out.rnn.h.push_back(h.index_select(0, index));
  for (const auto& c : rnn.c) out.rnn.c.push_back(c.index_select(0, index));
  if (feed.defined()) out.feed = feed.index_select(0, index);
  out.attention = attention.index_select(index);
  if (past_keys.defined()) out.past_keys = past_keys.index_select(0, index);
  if (past_states.defined()) out.past_states = past_states.index_select(0, index);
  return out;
}

DecoderStepState DecoderStepState::with_rows_of(const DecoderStepState& from, const torch::Tensor& rows) const {
  TORCH_CHECK(!past_keys.defined() && !from.past_keys.defined(), "DecoderStepState::with_rows_of: not with self-attention");
  TORCH_CHECK(rnn.h.size() == from.rnn.h.size() && rnn.c.size() == from.rnn.c.size() &&
                  feed.defined() == from.feed.defined() && attention.tensors.size() == from.attention.tensors.size(),
              "DecoderStepState::with_rows_of: states of different decoders");
  auto take = [&](const torch::Tensor& mine, const torch::Tensor& theirs) {
    return mine.defined() ? mine.index_copy(0, rows, theirs.index_select(0, rows)) : mine;
  };
  DecoderStepState out;
  for (size_t i = 0; i < rnn.h.size(); ++i) out.rnn.h.push_back(take(rnn.h[i], from.rnn.h[i]));
  for (size_t i = 0; i < rnn.c.size(); ++i) out.rnn.c.push_back(take(rnn.c[i], from.rnn.c[i]));
  out.feed = take(feed, from.feed);
  for (size_t i = 0; i < attention.tensors.size(); ++i) {
    out.attention.tensors.push_back(take(attention.tensors[i], from.attention.tensors[i]));
  }
  return out;
}

DecoderStepState DecoderStepState::cat(const DecoderStepState& a, const DecoderStepState& b, AttentionState attention) {
  TORCH_CHECK(!a.past_keys.defined() && !b.past_keys.defined(), "DecoderStepState::cat: not with self-attention");
  TORCH_CHECK(a.rnn.h.size() == b.rnn.h.size() && a.rnn.c.size() == b.rnn.c.size() && a.feed.defined() == b.feed.defined(),
              "DecoderStepState::cat: states of different decoders");
  DecoderStepState out;
  for (size_t i = 0; i < a.rnn.h.size(); ++i) out.rnn.h.push_back(torch::cat({a.rnn.h[i], b.rnn.h[i]}, 0));
  for (size_t i = 0; i < a.rnn.c.size(); ++i) out.rnn.c.push_back(torch::cat({a.rnn.c[i], b.rnn.c[i]}, 0));
  if (a.feed.defined()) out.feed = torch::cat({a.feed, b.feed}, 0);
  out.attention = std::move(attention);
  return out;
}

DecoderImpl::DecoderImpl(const ModelConfig& config, int64_t memory_size)
    : config_(config),
      luong_(config.decoder.style == DecoderStyle::luong),
      conditional_(config.decoder.style == DecoderStyle::conditional) {
  const auto& dec = config.decoder;
  const int64_t H = dec.hidden_size;
  const int64_t E = config.embedding_size;
  attention_ = make_attention(config.attention, H, memory_size);
  register_module("attention", attention_);
  const int64_t ctx = attention_->context_size();
  if (conditional_) {
    rnn_ = register_module("rnn", RnnStack(dec.rnn, E, 0, H, 1, dec.dropout));
    second_ = register_module("second", RnnStack(dec.rnn, ctx, 0, H, 1, dec.dropout));
    const int64_t G = (dec.rnn == RnnType::lstm ? 4 : 3) * H;
    const double k = 1.0 / std::sqrt(static_cast<double>(H));  // PyTorch's RNN initialisation, as RnnStack's
    for (int i = 0; i < dec.transitions; ++i) {
      const auto n = std::to_string(i);
      transition_w_hh_.push_back(register_parameter("transition_w_hh_" + n, torch::empty({G, H}).uniform_(-k, k)));
      transition_b_ih_.push_back(register_parameter("transition_b_ih_" + n, torch::empty({G}).uniform_(-k, k)));
      transition_b_hh_.push_back(register_parameter("transition_b_hh_" + n, torch::empty({G}).uniform_(-k, k)));
    }
    if (dec.layers > 1) above_ = register_module("above", RnnStack(dec.rnn, H, 0, H, dec.layers - 1, dec.dropout));
  } else {
    const int64_t dynamic = luong_ ? (dec.input_feeding ? output_size() : 0) : ctx;  // input feeding: h~
    rnn_ = register_module("rnn", RnnStack(dec.rnn, E, dynamic, H, dec.layers, dec.dropout));
  }
  const int64_t final_size = config.encoder.hidden_size * (config.encoder.bidirectional ? 2 : 1);
  switch (dec.init) {
    case DecoderInit::bridge:
      bridge_h_ = register_module("bridge_h", torch::nn::Linear(final_size, dec.layers * H));
      if (rnn_->is_lstm()) {
        bridge_c_ = register_module("bridge_c", torch::nn::Linear(final_size, dec.layers * H));
      }
      break;
    case DecoderInit::tanh_bridge:
      bridge_h_ = register_module("bridge_h", torch::nn::Linear(final_size, H));
      break;
    case DecoderInit::encoder_relu_bridge: {
      // One square layer over each direction's states of all layers (OpenNMT-py's total_hidden_dim).
      const int64_t n = config.encoder.hidden_size * config.encoder.layers;
      relu_bridge_h_ = register_module("relu_bridge_h", torch::nn::Linear(n, n));
      if (rnn_->is_lstm()) relu_bridge_c_ = register_module("relu_bridge_c", torch::nn::Linear(n, n));
      break;
    }
    case DecoderInit::encoder_linear:
      // fairseq's encoder_hidden_proj / encoder_cell_proj: one Linear for every layer's final state.
      linear_bridge_h_ = register_module("linear_bridge_h", torch::nn::Linear(final_size, H));
      if (rnn_->is_lstm()) linear_bridge_c_ = register_module("linear_bridge_c", torch::nn::Linear(final_size, H));
      break;
    case DecoderInit::mean_bridge:
      mean_bridge_ = register_module("mean_bridge", torch::nn::Linear(memory_size, H));
      break;
    case DecoderInit::encoder:
    case DecoderInit::last:
    case DecoderInit::zero:
      break;  // no parameters
  }
  const int64_t intra = dec.self_attention ? H : 0;
  const int64_t combine_in = (luong_ ? ctx + H : H + ctx + E) + intra;
  combine_ = register_module(
      "combine", torch::nn::Linear(torch::nn::LinearOptions(combine_in, output_size()).bias(dec.combine_bias)));
  if (dec.self_attention) intra_ = register_module("intra", torch::nn::Linear(torch::nn::LinearOptions(H, H).bias(false)));
}

torch::Tensor DecoderImpl::intra_context(const torch::Tensor& s, DecoderStepState& state) {
  torch::Tensor context;
  if (!state.past_states.defined()) {
    context = torch::zeros_like(s);  // nothing to attend to at the first step
  } else {
    auto e = torch::bmm(state.past_keys, s.unsqueeze(2)).squeeze(2);                  // [N, t]
    context = torch::bmm(torch::softmax(e, 1).unsqueeze(1), state.past_states).squeeze(1);  // [N, H]
  }
  auto key = intra_(s).unsqueeze(1);
  state.past_keys = state.past_keys.defined() ? torch::cat({state.past_keys, key}, 1) : key;
  state.past_states = state.past_states.defined() ? torch::cat({state.past_states, s.unsqueeze(1)}, 1) : s.unsqueeze(1);
  return context;
}

std::vector<torch::Tensor> DecoderImpl::relu_bridge(torch::nn::Linear linear,
                                                    const std::vector<torch::Tensor>& x) const {
  // OpenNMT-py stacks the final states as [L*D, B, h] (layer-major, then direction) and views
  // them as rows of L*h values before its Linear + ReLU. Done here per sentence (what OpenNMT-py
  // computes with one sentence per batch; its view mixes the sentences of a larger batch).
  const int64_t L = static_cast<int64_t>(x.size());
  const int64_t D = config_.encoder.bidirectional ? 2 : 1;
  const int64_t h = config_.encoder.hidden_size;
  const int64_t B = x[0].size(0);
  auto stacked = torch::stack(x, 1).view({B, L * D, h});            // [B, L*D, h], ld = l*D + d
  auto out = torch::relu(linear(stacked.reshape({B, D, L * h})));   // [B, D, L*h]
  return out.reshape({B, L, D * h}).unbind(1);                      // L x [B, D*h]
}

DecoderStepState DecoderImpl::initial_state(const EncoderOutput& encoded, const AttentionMemory& memory) {
  const auto L = config_.decoder.layers;
  const auto H = config_.decoder.hidden_size;
  const bool lstm = rnn_->is_lstm();
  DecoderStepState state;
  auto same_for_every_layer = [&](const torch::Tensor& x) {
    state.rnn.h.assign(static_cast<size_t>(L), x);
    if (lstm) state.rnn.c.assign(static_cast<size_t>(L), x);
  };
  switch (config_.decoder.init) {
    case DecoderInit::bridge: {
      auto h0 = torch::tanh(bridge_h_(encoded.final_h)).chunk(L, 1);  // L x [B, H]
      state.rnn.h.assign(h0.begin(), h0.end());
      if (lstm) {
        // The LSTM cell starts from its own bridge of the encoder's final outputs.
        auto c0 = bridge_c_(encoded.final_h).chunk(L, 1);
        state.rnn.c.assign(c0.begin(), c0.end());
      }
      break;
    }
    case DecoderInit::encoder:
      state.rnn.h = encoded.layer_h;
      if (lstm) state.rnn.c = encoded.layer_c;
      break;
    case DecoderInit::encoder_relu_bridge:
      state.rnn.h = relu_bridge(relu_bridge_h_, encoded.layer_h);
      if (lstm) state.rnn.c = relu_bridge(relu_bridge_c_, encoded.layer_c);
      break;
    case DecoderInit::encoder_linear:
      for (const auto& h : encoded.layer_h) state.rnn.h.push_back(linear_bridge_h_(h));
      if (lstm) {
        for (const auto& c : encoded.layer_c) state.rnn.c.push_back(linear_bridge_c_(c));
      }
      break;
    case DecoderInit::tanh_bridge:
      same_for_every_layer(torch::tanh(bridge_h_(encoded.final_h)));
      break;
    case DecoderInit::last:
      same_for_every_layer(encoded.final_h.size(1) == H ? encoded.final_h : encoded.final_h.slice(1, 0, H));
      break;
    case DecoderInit::zero:
      same_for_every_layer(torch::zeros({encoded.final_h.size(0), H}, encoded.final_h.options()));
      break;
    case DecoderInit::mean_bridge: {
      // The memory's states over each sentence's real positions (one memory row per sentence here).
      const auto mask = memory.mask.unsqueeze(2).to(memory.values.scalar_type());  // [B, S, 1]
      auto mean = (memory.values * mask).sum(1) / mask.sum(1).clamp_min(1.0);      // [B, Dm]
      same_for_every_layer(torch::tanh(mean_bridge_(mean)));
      break;
    }
  }
  if (luong_ && config_.decoder.input_feeding) {
    state.feed = torch::zeros({state.rnn.h[0].size(0), output_size()}, state.rnn.h[0].options());
  }
  state.attention = attention_->initial_state(memory);
  return state;
}

DecoderProducts DecoderImpl::products(ExecutionMode mode) const {
  DecoderProducts p{rnn_->products(mode), make_product(combine_->weight, combine_bias(), mode)};
  if (second_) p.second = second_->products(mode);
  for (size_t i = 0; i < transition_w_hh_.size(); ++i) {
    p.transitions.push_back(make_product(transition_w_hh_[i], transition_b_hh_[i], mode));
  }
  if (above_) p.above = above_->products(mode);
  return p;
}

DecoderProducts DecoderImpl::training_products() const {
  DecoderProducts p{rnn_->training_products(), make_training_product(combine_->weight, combine_bias())};
  if (second_) p.second = second_->training_products();
  for (size_t i = 0; i < transition_w_hh_.size(); ++i) {
    p.transitions.push_back(make_training_product(transition_w_hh_[i], transition_b_hh_[i]));
  }
  if (above_) p.above = above_->training_products();
  return p;
}

torch::Tensor DecoderImpl::conditional_step(const torch::Tensor& gates_t, const AttentionMemory& memory,
                                            DecoderStepState& state, int64_t t, AttentionOutput& att,
                                            const DecoderProducts& products) {
  const bool lstm = rnn_->is_lstm();
  // Layer 0's state runs through RNN_1, RNN_2 and the transitions within the step.
  RnnState cell;
  cell.h.push_back(state.rnn.h[0]);
  if (lstm) cell.c.push_back(state.rnn.c[0]);
  auto query = rnn_->step(gates_t, torch::Tensor(), cell, products.rnn);  // s'_t
  att = attend(*attention_, query, memory, state.attention, t);
  state.attention = att.state;
  auto s = second_->step(second_->project_static(att.context, products.second), torch::Tensor(), cell, products.second);
  for (size_t i = 0; i < products.transitions.size(); ++i) {
    const auto input_gates = transition_b_ih_[i].unsqueeze(0).expand({s.size(0), -1}).contiguous();
    s = rnn_cell(lstm, input_gates, *products.transitions[i], cell.h[0], lstm ? &cell.c[0] : nullptr);
  }
  state.rnn.h[0] = cell.h[0];
  if (lstm) state.rnn.c[0] = cell.c[0];
  if (above_) {
    RnnState up;
    up.h.assign(state.rnn.h.begin() + 1, state.rnn.h.end());
    if (lstm) up.c.assign(state.rnn.c.begin() + 1, state.rnn.c.end());
    s = above_->step(above_->project_static(stream_dropout(s, config_.decoder.dropout, is_training()), products.above),
                     torch::Tensor(), up, products.above);
    std::copy(up.h.begin(), up.h.end(), state.rnn.h.begin() + 1);
    if (lstm) std::copy(up.c.begin(), up.c.end(), state.rnn.c.begin() + 1);
  }
  return s;
}

torch::Tensor DecoderImpl::step(const torch::Tensor& gates_t, const torch::Tensor& embedded_t,
                                const AttentionMemory& memory, DecoderStepState& state, int64_t t,
                                torch::Tensor* weights, const DecoderProducts& products) {
  const auto& combine = *products.combine;
  torch::Tensor out;
  if (luong_) {
    auto s = rnn_->step(gates_t, state.feed, state.rnn, products.rnn);  // s_t [N, H]
    auto att = attend(*attention_, s, memory, state.attention, t);
    state.attention = std::move(att.state);
    auto input = intra_ ? torch::cat({att.context, intra_context(s, state), s}, 1) : torch::cat({att.context, s}, 1);
    out = stream_dropout(combine_activation(combine(input)), config_.decoder.dropout, is_training());  // h~_t
    if (state.feed.defined()) state.feed = out;
    if (weights) *weights = att.weights;
  } else if (conditional_) {
    AttentionOutput att;
    auto s = conditional_step(gates_t, memory, state, t, att, products);
    auto input = intra_ ? torch::cat({s, att.context, intra_context(s, state), embedded_t}, 1)
                        : torch::cat({s, att.context, embedded_t}, 1);
    out = stream_dropout(combine_activation(combine(input)), config_.decoder.dropout, is_training());
    if (weights) *weights = att.weights;
  } else {
    auto att = attend(*attention_, state.rnn.h.back(), memory, state.attention, t);  // query s_{t-1}
    state.attention = std::move(att.state);
    auto s = rnn_->step(gates_t, att.context, state.rnn, products.rnn);
    auto input = intra_ ? torch::cat({s, att.context, intra_context(s, state), embedded_t}, 1)
                        : torch::cat({s, att.context, embedded_t}, 1);
    out = stream_dropout(combine_activation(combine(input)), config_.decoder.dropout, is_training());
    if (weights) *weights = att.weights;
  }
  return out;
}

}  // namespace attnmt
