// Forced-forward attention: the seeds' "强制前向 attention", i.e. the intra-temporal attention of
// Paulus et al. (2017), "A Deep Reinforced Model for Abstractive Summarization", section 2.1:
//   e'_{t,i} = exp(e_{t,i})                                for the first step,
//   e'_{t,i} = exp(e_{t,i}) / sum_{j<t} exp(e_{j,i})       afterwards,
//   alpha_{t,i} = e'_{t,i} / sum_k e'_{t,k},   c_t = sum_i alpha_{t,i} h_i,
// so a source position that already drew attention is discouraged from drawing it again.
// Computed in log space: the state is L_{t-1,i} = logsumexp_{j<t} e_{j,i} [B, S] (reordered with
// the beams like any state), alpha_t = masked_softmax(e_t - L_{t-1}), L_t = logaddexp(L_{t-1}, e_t).
// The first step is recognised by the state being empty, not by t, so the module works the same
// from any starting step. score = model.attention.score (the paper: general, "bilinear").
#pragma once
#include "attention/attention.h"
#include "attention/score.h"
#include "config/config.h"

namespace attnmt {

class ForcedForwardAttention : public ScoredAttention {
 public:
  ForcedForwardAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;
  // Not in a running batch: a batch's first step is told by its state being empty, so rows that
  // have stepped and rows that have not cannot share one (Attention::joins_running_batches).
  bool joins_running_batches() const override { return false; }
};

}  // namespace attnmt
