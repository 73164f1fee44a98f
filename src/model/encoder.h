// The source encoder: embeddings -> (bi)directional, stacked LSTM/GRU -> encoder states h_1..h_S.
// Padding never reaches a real position: the forward direction runs left to right (padding comes
// after every real token), and the backward direction runs over each sentence reversed within its
// own length. This avoids packed sequences, whose CPU backward costs a full-size copy per time step.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "config/config.h"
#include "runtime/packed_linear.h"

namespace attnmt {

struct EncoderOutput {
  torch::Tensor states;  // [B, S, D*H] (D = 2 if bidirectional)
  torch::Tensor mask;    // [B, S] bool, true = real token
  torch::Tensor final_h; // [B, D*H] top layer's output at each sentence's last real token
                         // (forward) and first token (backward), directions concatenated
};

// The encoder's LSTM products for decoding, on its weights as they are when pack() is called
// (runtime/packed_linear.h): per layer and direction, the input projection of all time steps in
// one product, and the recurrent projection once per step. Stale once the weights change.
struct PackedEncoder {
  std::vector<PackedLinear> ih, hh;  // [layer * directions + direction]; empty for a GRU encoder
};

class EncoderImpl : public torch::nn::Module {
 public:
  EncoderImpl(const EncoderConfig& config, int64_t embedding_size);
  // embedded [B, S, E] (already embedded, dropout applied), lengths [B] int64.
  // packed (decoding, no gradient): an LSTM encoder runs its recurrence on pack()'s weights
  // (bf16 packs: its products in bfloat16); a GRU encoder ignores it (LibTorch's loop).
  EncoderOutput forward(const torch::Tensor& embedded, const torch::Tensor& lengths,
                        const PackedEncoder* packed = nullptr);
  // The current LSTM weights, packed for forward() (bf16: products in bfloat16).
  PackedEncoder pack(bool bf16) const;
  int64_t output_size() const { return output_size_; }

 private:
  torch::Tensor run(size_t index, const torch::Tensor& input, const PackedEncoder* packed);  // one layer, one direction
  EncoderConfig config_;
  int64_t output_size_;
  std::vector<torch::nn::LSTM> lstm_;  // [layer * directions + direction]
  std::vector<torch::nn::GRU> gru_;
};
TORCH_MODULE(Encoder);

}  // namespace attnmt
