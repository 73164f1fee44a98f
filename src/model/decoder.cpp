#include "model/decoder.h"
#include "runtime/random.h"

#include "attention/registry.h"

namespace attnmt {

namespace F = torch::nn::functional;

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

DecoderImpl::DecoderImpl(const ModelConfig& config, int64_t memory_size)
    : config_(config), luong_(config.decoder.style == "luong") {
  const auto& dec = config.decoder;
  const int64_t H = dec.hidden_size;
  const int64_t E = config.embedding_size;
  attention_ = make_attention(config.attention, H, memory_size);
  register_module("attention", attention_);
  const int64_t ctx = attention_->context_size();
  const int64_t dynamic = luong_ ? (dec.input_feeding ? H : 0) : ctx;
  rnn_ = register_module("rnn", RnnStack(dec.rnn, E, dynamic, H, dec.layers, dec.dropout));
  const int64_t final_size = config.encoder.hidden_size * (config.encoder.bidirectional ? 2 : 1);
  bridge_h_ = register_module("bridge_h", torch::nn::Linear(final_size, dec.layers * H));
  if (rnn_->is_lstm()) {
    bridge_c_ = register_module("bridge_c", torch::nn::Linear(final_size, dec.layers * H));
  }
  const int64_t intra = dec.self_attention ? H : 0;
  const int64_t combine_in = (luong_ ? ctx + H : H + ctx + E) + intra;
  combine_ = register_module("combine", torch::nn::Linear(torch::nn::LinearOptions(combine_in, H).bias(false)));
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

DecoderStepState DecoderImpl::initial_state(const EncoderOutput& encoded, const AttentionMemory& memory) {
  const auto L = config_.decoder.layers;
  DecoderStepState state;
  auto h0 = torch::tanh(bridge_h_(encoded.final_h)).chunk(L, 1);  // L x [B, H]
  state.rnn.h.assign(h0.begin(), h0.end());
  if (rnn_->is_lstm()) {
    // The LSTM cell starts from its own bridge of the encoder's final outputs.
    auto c0 = bridge_c_(encoded.final_h).chunk(L, 1);
    state.rnn.c.assign(c0.begin(), c0.end());
  }
  if (luong_ && config_.decoder.input_feeding) state.feed = torch::zeros_like(state.rnn.h[0]);
  state.attention = attention_->initial_state(memory);
  return state;
}

DecoderProducts DecoderImpl::products(ExecutionMode mode) const {
  return {rnn_->products(mode), make_product(combine_->weight, torch::Tensor(), mode)};
}

DecoderProducts DecoderImpl::training_products() const {
  return {rnn_->training_products(), make_training_product(combine_->weight, torch::Tensor())};
}

torch::Tensor DecoderImpl::step(const torch::Tensor& gates_t, const torch::Tensor& embedded_t,
                                const AttentionMemory& memory, DecoderStepState& state, int64_t t,
                                torch::Tensor* weights, const DecoderProducts& products) {
  const auto& combine = *products.combine;
  torch::Tensor out;
  if (luong_) {
    auto s = rnn_->step(gates_t, state.feed, state.rnn, products.rnn);  // s_t [N, H]
    auto att = attention_->forward(s, memory, state.attention, t);
    state.attention = std::move(att.state);
    auto input = intra_ ? torch::cat({att.context, intra_context(s, state), s}, 1) : torch::cat({att.context, s}, 1);
    out = stream_dropout(torch::tanh(combine(input)), config_.decoder.dropout, is_training());  // h~_t
    if (state.feed.defined()) state.feed = out;
    if (weights) *weights = att.weights;
  } else {
    auto att = attention_->forward(state.rnn.h.back(), memory, state.attention, t);  // query s_{t-1}
    state.attention = std::move(att.state);
    auto s = rnn_->step(gates_t, att.context, state.rnn, products.rnn);
    auto input = intra_ ? torch::cat({s, att.context, intra_context(s, state), embedded_t}, 1)
                        : torch::cat({s, att.context, embedded_t}, 1);
    out = stream_dropout(torch::tanh(combine(input)), config_.decoder.dropout, is_training());
    if (weights) *weights = att.weights;
  }
  return out;
}

}  // namespace attnmt
