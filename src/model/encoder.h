// The source encoder: embeddings -> (bi)directional, stacked LSTM/GRU -> encoder states h_1..h_S.
// Padding never reaches a real position: the forward direction runs left to right (padding comes
// after every real token), and the backward direction runs over each sentence reversed within its
// own length. This avoids packed sequences, whose CPU backward costs a full-size copy per time step.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "config/config.h"

namespace attnmt {

struct EncoderOutput {
  torch::Tensor states;  // [B, S, D*H] (D = 2 if bidirectional)
  torch::Tensor mask;    // [B, S] bool, true = real token
  torch::Tensor final_h; // [B, D*H] top layer's output at each sentence's last real token
                         // (forward) and first token (backward), directions concatenated
};

class EncoderImpl : public torch::nn::Module {
 public:
  EncoderImpl(const EncoderConfig& config, int64_t embedding_size);
  // embedded [B, S, E] (already embedded, dropout applied), lengths [B] int64
  EncoderOutput forward(const torch::Tensor& embedded, const torch::Tensor& lengths);
  int64_t output_size() const { return output_size_; }

 private:
  torch::Tensor run(size_t index, const torch::Tensor& input);  // one layer, one direction
  EncoderConfig config_;
  int64_t output_size_;
  std::vector<torch::nn::LSTM> lstm_;  // [layer * directions + direction]
  std::vector<torch::nn::GRU> gru_;
};
TORCH_MODULE(Encoder);

}  // namespace attnmt
