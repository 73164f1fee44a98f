// Static attention (the seeds' "静态attention"): one alpha for the whole output sentence, computed
// once per sentence from a fixed query u instead of the decoder state:
//   u = W_u [h_{S_b}; h_1]   (the last and first encoder states: for a bidirectional encoder these
//                             hold [h^fwd_S; h^bwd_1], the seed's choice of u),
//   alpha = masked_softmax(u^T h_.),  c = sum_i alpha_i h_i,   the same at every step t.
// Choice: W_u (2 Dm -> Dm, no bias) lets the model weigh the two ends, so the same module works
// for uni- and bidirectional encoders. alpha and c live in the per-batch memory (extra).
#pragma once
#include "attention/attention.h"
#include "config/config.h"

namespace attnmt {

class StaticAttention : public Attention {
 public:
  // Not in a running batch: its memory is one context per sentence (Attention::joins_running_batches).
  bool joins_running_batches() const override { return false; }
  StaticAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask) override;
  // Every area (the static context) spans positions: prepared again over the longer memory.
  AttentionMemory extend(const AttentionMemory& memory, const torch::Tensor& row) override;
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;

 private:
  torch::nn::Linear w_u_{nullptr};
};

}  // namespace attnmt
