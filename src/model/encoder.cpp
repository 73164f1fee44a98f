#include "model/encoder.h"

namespace attnmt {

namespace rnn_utils = torch::nn::utils::rnn;

EncoderImpl::EncoderImpl(const EncoderConfig& config, int64_t embedding_size)
    : config_(config),
      output_size_(config.hidden_size * (config.bidirectional ? 2 : 1)) {
  if (config.rnn == "lstm") {
    lstm_ = register_module(
        "lstm", torch::nn::LSTM(torch::nn::LSTMOptions(embedding_size, config.hidden_size)
                                    .num_layers(config.layers)
                                    .bidirectional(config.bidirectional)
                                    .dropout(config.layers > 1 ? config.dropout : 0.0)
                                    .batch_first(true)));
  } else {
    gru_ = register_module(
        "gru", torch::nn::GRU(torch::nn::GRUOptions(embedding_size, config.hidden_size)
                                  .num_layers(config.layers)
                                  .bidirectional(config.bidirectional)
                                  .dropout(config.layers > 1 ? config.dropout : 0.0)
                                  .batch_first(true)));
  }
}

namespace {
// h_n [L*D, B, H] -> top layer [B, D*H]
torch::Tensor top_layer(const torch::Tensor& h_n, bool bidirectional) {
  if (!bidirectional) return h_n[-1];
  return torch::cat({h_n[-2], h_n[-1]}, 1);
}
}  // namespace

EncoderOutput EncoderImpl::forward(const torch::Tensor& embedded, const torch::Tensor& lengths) {
  const auto S = embedded.size(1);
  auto cpu_lengths = lengths.to(torch::kCPU, torch::kLong);
  auto packed = rnn_utils::pack_padded_sequence(embedded, cpu_lengths, /*batch_first=*/true,
                                                /*enforce_sorted=*/false);
  EncoderOutput out;
  torch::Tensor packed_data;  // the PackedSequence's data; batch sizes/indices are packed's own
  if (lstm_) {
    auto [seq, hc] = lstm_->forward_with_packed_input(packed);
    packed_data = seq.data();
    out.final_h = top_layer(std::get<0>(hc), config_.bidirectional);
    out.final_c = top_layer(std::get<1>(hc), config_.bidirectional);
  } else {
    auto [seq, h] = gru_->forward_with_packed_input(packed);
    packed_data = seq.data();
    out.final_h = top_layer(h, config_.bidirectional);
  }
  rnn_utils::PackedSequence packed_out(packed_data, packed.batch_sizes(), packed.sorted_indices(),
                                       packed.unsorted_indices());
  out.states = std::get<0>(rnn_utils::pad_packed_sequence(packed_out, /*batch_first=*/true,
                                                          /*padding_value=*/0.0, /*total_length=*/S));
  out.states = torch::nn::functional::dropout(
      out.states, torch::nn::functional::DropoutFuncOptions().p(config_.dropout).training(is_training()));
  auto positions = torch::arange(S, lengths.options().dtype(torch::kLong)).unsqueeze(0);
  out.mask = positions < lengths.to(torch::kLong).unsqueeze(1);
  return out;
}

}  // namespace attnmt
