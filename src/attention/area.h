// Area attention (Li, Kaiser, Bengio & Si, 2019, "Area Attention", section 3.1, "simple" keys and values):
// the items attended to are all areas (spans) of 1..A adjacent source positions,
//   key(area) = mean of its keys,  value(area) = sum of its encoder states,
//   beta_t = masked_softmax over areas of score(q_t, key(area)),  c_t = sum_areas beta_{t,a} value(a).
// A = model.attention.max_area; score = model.attention.score. An area is real only if all its
// positions are. Choice for the reported [B, S] weights (--attention-out, coverage penalty): each
// area's weight is spread evenly over its positions, so they still sum to 1 and padding gets 0.
// The keys and values of all areas are built once per batch (stored in the memory's extra).
#pragma once
#include "attention/attention.h"
#include "attention/score.h"
#include "config/config.h"

namespace attnmt {

class AreaAttention : public ScoredAttention {
 public:
  // Not in a running batch: its memory is one entry per area (Attention::joins_running_batches).
  bool joins_running_batches() const override { return false; }
  AreaAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask) override;
  // Every area (the static context) spans positions: prepared again over the longer memory.
  AttentionMemory extend(const AttentionMemory& memory, const torch::Tensor& row) override;
  AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                          const AttentionState& state, int64_t step) override;

 private:
  int64_t max_area_;
};

}  // namespace attnmt
