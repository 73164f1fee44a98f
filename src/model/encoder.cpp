#include "model/encoder.h"
#include "model/random.h"

namespace attnmt {

namespace F = torch::nn::functional;

EncoderImpl::EncoderImpl(const EncoderConfig& config, int64_t embedding_size)
    : config_(config), output_size_(config.hidden_size * (config.bidirectional ? 2 : 1)) {
  const int64_t directions = config.bidirectional ? 2 : 1;
  for (int64_t l = 0; l < config.layers; ++l) {
    const int64_t in = l == 0 ? embedding_size : output_size_;
    for (int64_t d = 0; d < directions; ++d) {
      const auto name = std::string(d == 0 ? "fwd_" : "bwd_") + std::to_string(l);
      if (config.rnn == "lstm") {
        lstm_.push_back(register_module(
            name, torch::nn::LSTM(torch::nn::LSTMOptions(in, config.hidden_size).batch_first(true))));
      } else {
        gru_.push_back(register_module(
            name, torch::nn::GRU(torch::nn::GRUOptions(in, config.hidden_size).batch_first(true))));
      }
    }
  }
}

torch::Tensor EncoderImpl::run(size_t index, const torch::Tensor& input) {
  if (!lstm_.empty()) return std::get<0>(lstm_[index]->forward(input));
  return std::get<0>(gru_[index]->forward(input));
}

EncoderOutput EncoderImpl::forward(const torch::Tensor& embedded, const torch::Tensor& lengths) {
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
  for (int64_t l = 0; l < config_.layers; ++l) {
    const size_t base = static_cast<size_t>(l) * (bi ? 2 : 1);
    auto fwd = run(base, x);                                              // [B, S, H]
    final_fwd = fwd.gather(1, last.expand({B, 1, fwd.size(2)})).squeeze(1);
    if (bi) {
      auto bwd_reversed = run(base + 1, flip(x));                         // [B, S, H]
      final_bwd = bwd_reversed.gather(1, last.expand({B, 1, fwd.size(2)})).squeeze(1);
      x = torch::cat({fwd, flip(bwd_reversed)}, 2);                       // [B, S, 2H]
    } else {
      x = fwd;
    }
    x = stream_dropout(x, config_.dropout, is_training());  // between layers and on the output
  }
  out.states = x;
  out.final_h = bi ? torch::cat({final_fwd, final_bwd}, 1) : final_fwd;
  return out;
}

}  // namespace attnmt
