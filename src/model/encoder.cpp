#include "model/encoder.h"
#include "runtime/lstm_cell.h"
#include "runtime/random.h"

#include <cmath>
#include <limits>
#include <tuple>

namespace attnmt {

namespace F = torch::nn::functional;

EncoderImpl::EncoderImpl(const EncoderConfig& config, int64_t embedding_size, bool layer_states)
    : config_(config), output_size_(config.hidden_size * (config.bidirectional ? 2 : 1)), layer_states_(layer_states) {
  const int64_t directions = config.bidirectional ? 2 : 1;
  const bool apart = config.bidirectional && config.separate_directions;
  for (int64_t l = 0; l < config.layers; ++l) {
    const int64_t in = l == 0 ? embedding_size : (apart ? config.hidden_size : output_size_);
    for (int64_t d = 0; d < directions; ++d) {
      const auto name = std::string(d == 0 ? "fwd_" : "bwd_") + std::to_string(l);
      if (config.rnn == RnnType::lstm) {
        lstm_.push_back(register_module(
            name, torch::nn::LSTM(torch::nn::LSTMOptions(in, config.hidden_size).batch_first(true))));
      } else {
        gru_.push_back(register_module(
            name, torch::nn::GRU(torch::nn::GRUOptions(in, config.hidden_size).batch_first(true))));
      }
    }
  }
  // Registered after the RNN, and only when there are blocks: a model without them has the
  // parameters (and draws the random numbers) it always had.
  for (int64_t l = 0; l < config.self_attention.layers; ++l) {
    const auto n = std::to_string(l);
    sa_qkv_.push_back(register_module("self_attn_qkv_" + n, torch::nn::Linear(output_size_, 3 * output_size_)));
    sa_out_.push_back(register_module("self_attn_out_" + n, torch::nn::Linear(output_size_, output_size_)));
    sa_norm_.push_back(register_module("self_attn_norm_" + n,
                                       torch::nn::LayerNorm(torch::nn::LayerNormOptions({output_size_}))));
  }
}

torch::Tensor EncoderImpl::self_attention(size_t l, const torch::Tensor& x, const torch::Tensor& mask) {
  // Scaled dot-product attention per head (docs/attention.md, "Encoder self-attention"): every
  // position attends to the sentence's real positions only (padding keys get exactly zero).
  const int64_t B = x.size(0), S = x.size(1), D = x.size(2), H = config_.self_attention.heads, d = D / H;
  auto qkv = sa_qkv_[l](x).view({B, S, 3, H, d}).permute({2, 0, 3, 1, 4});  // [3, B, H, S, d]
  auto scores = torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(d));  // [B, H, S, S]
  scores = scores.masked_fill(mask.logical_not().view({B, 1, 1, S}), -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  auto heads = torch::matmul(weights, qkv[2]).transpose(1, 2).reshape({B, S, D});  // [B, S, D]
  auto y = stream_dropout(sa_out_[l](heads), config_.self_attention.dropout, is_training());
  return sa_norm_[l](x + y);
}

EncoderProducts EncoderImpl::products(ExecutionMode mode) const {
  EncoderProducts p;
  if (mode.kind == ExecutionMode::kLibTorch) return p;
  for (const auto& lstm : lstm_) {  // torch::nn::LSTM's own parameters, one layer each
    const auto params = lstm->named_parameters(false);
    p.ih.push_back(make_product(params["weight_ih_l0"], params["bias_ih_l0"], mode));
    p.hh.push_back(make_product(params["weight_hh_l0"], params["bias_hh_l0"], mode));
  }
  return p;
}

torch::Tensor EncoderImpl::run(size_t index, const torch::Tensor& input, const EncoderProducts& products,
                               const torch::Tensor& last, torch::Tensor* final_c) {
  // The cell at each sentence's last real position, kept as the steps pass it.
  auto keep_final_c = [&](int64_t t, const torch::Tensor& c) {
    if (final_c) *final_c = torch::where((last == t).unsqueeze(1), c, *final_c);
  };
  if (!products.ih.empty()) {
    // torch::nn::LSTM's recurrence over the padded batch, left to right, on the given products:
    // one product for every step's input gates (time-major rows, so step t's are contiguous),
    // then per step the recurrent product and the fused cell (runtime/lstm_cell.h).
    const int64_t B = input.size(0), S = input.size(1), H = config_.hidden_size;
    const auto& ih = *products.ih[index];
    const auto& hh = *products.hh[index];
    auto input_gates = ih(input.transpose(0, 1).reshape({S * B, input.size(2)})).view({S, B, 4 * H});
    auto out = torch::empty({S, B, H}, input_gates.options());
    auto h = torch::zeros({B, H}, input_gates.options());
    auto c = torch::zeros({B, H}, input_gates.options());
    if (final_c) *final_c = c;
    for (int64_t t = 0; t < S; ++t) {
      std::tie(h, c) = lstm_cell(hh(h, input_gates[t]), c);
      out[t].copy_(h);
      keep_final_c(t, c);
    }
    return out.transpose(0, 1).contiguous();  // [B, S, H]
  }
  if (!lstm_.empty() && final_c) {
    // LibTorch's LSTM returns the cell after the last padded step only: step it here instead.
    const auto p = lstm_[index]->named_parameters(false);
    const int64_t B = input.size(0), S = input.size(1), H = config_.hidden_size;
    auto h = torch::zeros({B, H}, input.options());
    auto c = torch::zeros({B, H}, input.options());
    *final_c = c;
    std::vector<torch::Tensor> out;
    for (int64_t t = 0; t < S; ++t) {
      std::tie(h, c) = torch::lstm_cell(input.select(1, t), {h, c}, p["weight_ih_l0"], p["weight_hh_l0"],
                                        p["bias_ih_l0"], p["bias_hh_l0"]);
      out.push_back(h);
      keep_final_c(t, c);
    }
    return torch::stack(out, 1);  // [B, S, H]
  }
  if (!lstm_.empty()) {
    if (input.is_cpu() && torch::GradMode::is_enabled() && is_training()) {
      // Training: one autograd node per layer and direction (runtime/lstm_cell.h).
      const auto p = lstm_[index]->named_parameters(false);
      return lstm_layer(input, p["weight_ih_l0"], p["weight_hh_l0"], p["bias_ih_l0"], p["bias_hh_l0"]);
    }
    return std::get<0>(lstm_[index]->forward(input));
  }
  return std::get<0>(gru_[index]->forward(input));
}

EncoderOutput EncoderImpl::forward(const torch::Tensor& embedded, const torch::Tensor& lengths,
                                   const EncoderProducts& products) {
  const int64_t B = embedded.size(0), S = embedded.size(1);
  auto len = lengths.to(embedded.device(), torch::kLong).unsqueeze(1);   // [B, 1]
  auto positions = torch::arange(S, len.options()).unsqueeze(0);          // [1, S]
  EncoderOutput out;
  out.mask = positions < len;                                             // [B, S]
  // reverse[b, s] = len_b - 1 - s for real positions, s for padding: an involution.
  auto reverse = torch::where(out.mask, len - 1 - positions, positions.expand({B, S}));
  auto flip = [&](const torch::Tensor& x) {
    return x.gather(1, reverse.unsqueeze(2).expand({B, S, x.size(2)}));
  };
  auto last = (len - 1).unsqueeze(2);  // [B, 1, 1]: index of each sentence's last real token
  const bool bi = config_.bidirectional;
  auto x = embedded;
  torch::Tensor final_fwd, final_bwd;
  const bool cells = layer_states_ && !lstm_.empty();
  const auto last_position = (len - 1).squeeze(1);  // [B]
  // separate_directions: each direction's stack reads its own outputs (x_bwd: the backward
  // stack's, in source order), concatenated after the last layer.
  const bool apart = bi && config_.separate_directions;
  torch::Tensor x_bwd = embedded;
  for (int64_t l = 0; l < config_.layers; ++l) {
    const size_t base = static_cast<size_t>(l) * (bi ? 2 : 1);
    torch::Tensor c_fwd, c_bwd;
    auto fwd = run(base, x, products, last_position, cells ? &c_fwd : nullptr);  // [B, S, H]
    final_fwd = fwd.gather(1, last.expand({B, 1, fwd.size(2)})).squeeze(1);
    if (bi) {
      auto bwd_reversed = run(base + 1, flip(apart ? x_bwd : x), products, last_position, cells ? &c_bwd : nullptr);
      final_bwd = bwd_reversed.gather(1, last.expand({B, 1, fwd.size(2)})).squeeze(1);
      if (apart) {
        x = fwd;
        x_bwd = flip(bwd_reversed);
        if (l + 1 == config_.layers) x = torch::cat({x, x_bwd}, 2);  // [B, S, 2H]
      } else {
        x = torch::cat({fwd, flip(bwd_reversed)}, 2);  // [B, S, 2H]
      }
    } else {
      x = fwd;
    }
    if (layer_states_) {
      out.layer_h.push_back(bi ? torch::cat({final_fwd, final_bwd}, 1) : final_fwd);
      if (cells) out.layer_c.push_back(bi ? torch::cat({c_fwd, c_bwd}, 1) : c_fwd);
    }
    x = stream_dropout(x, config_.dropout, is_training());  // between layers and on the output
    if (apart && l + 1 < config_.layers) x_bwd = stream_dropout(x_bwd, config_.dropout, is_training());
  }
  for (size_t l = 0; l < sa_qkv_.size(); ++l) x = self_attention(l, x, out.mask);
  out.states = x;
  out.final_h = bi ? torch::cat({final_fwd, final_bwd}, 1) : final_fwd;
  return out;
}

torch::Tensor EncoderImpl::step(const torch::Tensor& embedded, EncoderStream& stream, const EncoderProducts& products) {
  TORCH_CHECK(streams(), "encoder: only a unidirectional encoder without self-attention reads a token at a time");
  const int64_t B = embedded.size(0), H = config_.hidden_size;
  const bool lstm = !lstm_.empty();
  if (stream.h.empty()) {  // before the first token: zero states, as forward()'s
    auto zeros = torch::zeros({B, H}, embedded.options());
    stream.h.assign(static_cast<size_t>(config_.layers), zeros);
    if (lstm) stream.c.assign(static_cast<size_t>(config_.layers), zeros);
  }
  auto x = embedded;  // [B, E], then [B, H]
  for (size_t l = 0; l < static_cast<size_t>(config_.layers); ++l) {
    auto& h = stream.h[l];
    if (lstm && !products.ih.empty()) {  // run()'s product path, one time step
      std::tie(h, stream.c[l]) = lstm_cell((*products.hh[l])(h, (*products.ih[l])(x)), stream.c[l]);
    } else if (lstm) {
      const auto p = lstm_[l]->named_parameters(false);
      std::tie(h, stream.c[l]) = torch::lstm_cell(x, {h, stream.c[l]}, p["weight_ih_l0"], p["weight_hh_l0"],
                                                  p["bias_ih_l0"], p["bias_hh_l0"]);
    } else {
      const auto p = gru_[l]->named_parameters(false);
      h = torch::gru_cell(x, h, p["weight_ih_l0"], p["weight_hh_l0"], p["bias_ih_l0"], p["bias_hh_l0"]);
    }
    x = h;
  }
  return x;
}

EncoderOutput EncoderImpl::stream_output(const EncoderStream& stream) const {
  EncoderOutput out;
  out.final_h = stream.h.back();
  if (layer_states_) {
    out.layer_h = stream.h;
    out.layer_c = stream.c;
  }
  return out;
}

}  // namespace attnmt
