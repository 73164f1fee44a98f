// The source encoder: embeddings -> (bi)directional, stacked LSTM/GRU over packed sequences
// (padding never enters the backward direction) -> encoder states h_1..h_S.
#pragma once
#include <torch/torch.h>

#include "config/config.h"

namespace attnmt {

struct EncoderOutput {
  torch::Tensor states;  // [B, S, D*H] (D = 2 if bidirectional)
  torch::Tensor mask;    // [B, S] bool, true = real token
  torch::Tensor final_h; // [B, D*H] top layer's final hidden state(s), directions concatenated
  torch::Tensor final_c; // [B, D*H] same for the LSTM cell (undefined for GRU)
};

class EncoderImpl : public torch::nn::Module {
 public:
  EncoderImpl(const EncoderConfig& config, int64_t embedding_size);
  // embedded [B, S, E] (already embedded, dropout applied), lengths [B] int64 (CPU or device)
  EncoderOutput forward(const torch::Tensor& embedded, const torch::Tensor& lengths);
  int64_t output_size() const { return output_size_; }

 private:
  EncoderConfig config_;
  int64_t output_size_;
  torch::nn::LSTM lstm_{nullptr};
  torch::nn::GRU gru_{nullptr};
};
TORCH_MODULE(Encoder);

}  // namespace attnmt
