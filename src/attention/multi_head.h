// Multi-head attention (Vaswani et al., 2017, section 3.2.2) over the encoder states, with the
// decoder state as the single query:
//   head_j: e^j_{t,i} = (W^j_q q_t)^T (W^j_k h_i) / sqrt(d_k),  alpha^j_t = masked_softmax(e^j_t),
//           c^j_t = sum_i alpha^j_{t,i} W^j_v h_i,
//   c_t = W_o [c^1_t; ...; c^H_t],   alpha_t (reported) = mean_j alpha^j_t.
// While training, model.attention.dropout drops each head's weights alpha^j_{t,i} before they
// weigh the values (inverted dropout, as the Transformer's attention dropout); the reported
// alpha_t are the weights before dropout.
// H = model.attention.heads; d_k = Dq / H and d_v = Dm / H (both must divide), W_o maps back to Dm
// so the decoder sees a context of the usual size. Projections have no bias, as in the paper.
// W_k h and W_v h are computed once per batch. With one head and identity projections this is
// exactly scaled_dot.
#pragma once
#include "attention/attention.h"
#include "config/config.h"

namespace attnmt {

class MultiHeadAttention : public Attention {
 public:
  MultiHeadAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask) override;
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;

 private:
  int64_t heads_, d_k_, d_v_;
  double dropout_;
  torch::nn::Linear w_q_{nullptr}, w_k_{nullptr}, w_v_{nullptr}, w_o_{nullptr};
};

}  // namespace attnmt
