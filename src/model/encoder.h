// The source encoder: embeddings -> (bi)directional, stacked LSTM/GRU -> encoder states h_1..h_S,
// then model.encoder.self_attention's multi-head self-attention blocks over them, when set.
// Padding never reaches a real position: the forward direction runs left to right (padding comes
// after every real token), and the backward direction runs over each sentence reversed within its
// own length. This avoids packed sequences, whose CPU backward costs a full-size copy per time step.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "config/config.h"
#include "model/product.h"

namespace attnmt {

struct EncoderOutput {
  torch::Tensor states;  // [B, S, D*H] (D = 2 if bidirectional)
  torch::Tensor mask;    // [B, S] bool, true = real token
  torch::Tensor final_h; // [B, D*H] top layer's output at each sentence's last real token
                         // (forward) and first token (backward), directions concatenated
  // With layer_states (model.decoder.init: encoder*): every layer's final h and (LSTM) c,
  // directions concatenated, [layers] x [B, D*H]; empty otherwise.
  std::vector<torch::Tensor> layer_h, layer_c;
};

// The encoder's LSTM products in a decoding execution mode (model/product.h): per layer and
// direction, the input projection of all time steps in one product, and the recurrent projection
// once per step. Empty: the encoder runs LibTorch's LSTM/GRU (and in training lstm_layer).
struct EncoderProducts {
  std::vector<std::unique_ptr<Product>> ih, hh;  // [layer * directions + direction]
};

// A unidirectional encoder read one token at a time (streaming, decoding/streaming.h): every
// layer's h and (LSTM) c after the tokens read so far, [layers] x [B, H]; empty before the first.
struct EncoderStream {
  std::vector<torch::Tensor> h, c;
};

class EncoderImpl : public torch::nn::Module {
 public:
  // layer_states: also return every layer's final states (EncoderOutput::layer_h / layer_c).
  EncoderImpl(const EncoderConfig& config, int64_t embedding_size, bool layer_states = false);
  // embedded [B, S, E] (already embedded, dropout applied), lengths [B] int64. With products
  // (decoding, no gradient), an LSTM encoder runs its recurrence on them.
  EncoderOutput forward(const torch::Tensor& embedded, const torch::Tensor& lengths,
                        const EncoderProducts& products = {});
  // The LSTM's products in `mode` on the current weights (stale once they change); empty for
  // ExecutionMode::kLibTorch and for a GRU encoder (LibTorch's own loop).
  EncoderProducts products(ExecutionMode mode) const;
  int64_t output_size() const { return output_size_; }
  // Whether step() can read a source a token at a time: a state at position i depends on x_1..x_i
  // alone (unidirectional, no self-attention blocks).
  bool streams() const { return !config_.bidirectional && sa_qkv_.empty(); }
  // Reads one more token: embedded [B, E] -> the top layer's state there [B, H], which is row i of
  // forward()'s states for the same tokens; `stream` advances. Decoding only (no dropout).
  torch::Tensor step(const torch::Tensor& embedded, EncoderStream& stream, const EncoderProducts& products = {});
  // What forward() returns as the final states (final_h, layer_h, layer_c) for the tokens read so
  // far (states and mask left undefined).
  EncoderOutput stream_output(const EncoderStream& stream) const;

 private:
  // One layer, one direction: the outputs [B, S, H]; with `last` ([B] each sentence's last real
  // position), *final_c receives the LSTM cell there.
  torch::Tensor run(size_t index, const torch::Tensor& input, const EncoderProducts& products,
                    const torch::Tensor& last = {}, torch::Tensor* final_c = nullptr);
  // model.encoder.self_attention's block `l` over states x [B, S, D], keys masked by mask [B, S].
  torch::Tensor self_attention(size_t l, const torch::Tensor& x, const torch::Tensor& mask);
  EncoderConfig config_;
  int64_t output_size_;
  bool layer_states_;
  std::vector<torch::nn::LSTM> lstm_;  // [layer * directions + direction]
  std::vector<torch::nn::GRU> gru_;
  // self-attention blocks: the q/k/v projections in one, the output projection, the layer norm
  std::vector<torch::nn::Linear> sa_qkv_, sa_out_;
  std::vector<torch::nn::LayerNorm> sa_norm_;
};
TORCH_MODULE(Encoder);

}  // namespace attnmt
