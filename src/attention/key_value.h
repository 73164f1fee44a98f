// Key-value attention (Daniluk et al., 2017, "Frustratingly Short Attention Spans in Neural
// Language Modeling", section 3.2): each encoder state is split in halves h_i = [k_i; v_i]; the
// score looks at the keys only and the context is made of the values only:
//   alpha_t = masked_softmax(score(q_t, k_.)),  c_t = sum_i alpha_{t,i} v_i   (size Dm / 2).
// score = model.attention.score (the paper: concat/additive; dot needs Dq == Dm / 2). Note: with a
// bidirectional encoder, whose states are [forward; backward], the keys are the forward states and
// the values the backward ones; the encoder learns to use the halves accordingly.
#pragma once
#include "attention/attention.h"
#include "attention/score.h"
#include "config/config.h"

namespace attnmt {

class KeyValueAttention : public ScoredAttention {
 public:
  KeyValueAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask) override;
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;
  int64_t context_size() const override { return memory_size_ / 2; }

 protected:
  torch::Tensor key_source(const torch::Tensor& memory) override { return memory.narrow(2, 0, memory_size_ / 2); }
};

}  // namespace attnmt
