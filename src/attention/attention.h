// The attention interface (see docs/attention.md for the formulas of every variant).
//
// A variant is one nn::Module subclass in its own file, created by make_attention()
// (registry.cpp). Its life cycle per batch:
//   prepare(memory, mask)   once per batch: project the encoder states into keys (never per step)
//   initial_state(memory)   the per-step recurrent state the variant needs (may be empty)
//   forward(query, ...)     once per decoder step: context vector and weights
// Everything that depends on the sentence is stored batch-first in AttentionMemory /
// AttentionState, so beam search can expand, reorder and prune it with index_select alone,
// without knowing which variant it is running.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace attnmt {

// Per-batch attention memory. Every tensor has the batch as dimension 0.
struct AttentionMemory {
  torch::Tensor values;  // [B, S, Dm] encoder states; contexts are weighted sums of these
  torch::Tensor keys;    // [B, S, Dk] keys projected once per batch (variant-specific, may alias)
  torch::Tensor mask;    // [B, S] bool, true = real source token
  torch::Tensor lengths; // [B] int64, number of real source tokens
  std::vector<torch::Tensor> extra;  // variant-specific batch-first tensors
  // Query rows per memory row. 1, except in beam search with a variant that shares the memory
  // across beams (Attention::shares_memory_across_beams): then row n of the queries reads memory
  // row n / group, the group being the beam size, and the memory is one copy per sentence.
  int64_t group = 1;

  // Keeps memory rows `index` (sentences); the group stays.
  AttentionMemory index_select(const torch::Tensor& index) const;
  // The same, moving rows down in place where they are strictly increasing (beam search dropping
  // finished sentences) and a tensor is this memory's alone (on the CPU, contiguous, its storage
  // referenced nowhere else), which allocates nothing; otherwise the rows are copied.
  void keep_rows(const std::vector<int64_t>& rows);
  // mask as one row per query row: [B * group, S].
  torch::Tensor row_mask() const;
  // Continuous batching (decoding/running_search.h): b's rows after a's, both of one group, the
  // shorter memory padded to the longer: zero states, mask false, so never attended. Every tensor
  // of dimension >= 2 whose dimension 1 is the source length is padded (per-position memories:
  // Attention::joins_running_batches).
  static AttentionMemory cat(const AttentionMemory& a, const AttentionMemory& b);
};

// Per-step recurrent state (running sums, previous alignment, coverage...), batch-first.
struct AttentionState {
  std::vector<torch::Tensor> tensors;
  AttentionState index_select(const torch::Tensor& index) const;
};

struct AttentionOutput {
  torch::Tensor context;  // [B, Dm]
  torch::Tensor weights;  // [B, S]: sums to 1 over real positions (soft), one-hot (hard)
  AttentionState state;   // the state after this step
};

class Attention : public torch::nn::Module {
 public:
  ~Attention() override = default;

  // memory [B, S, Dm] (encoder output), mask [B, S] bool.
  virtual AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask);
  virtual AttentionState initial_state(const AttentionMemory& memory) const { return {}; }
  // Streaming (decoding/streaming.h): `memory` with one more source position, row [B, Dm] (the
  // encoder's state there; every row real). By default the row alone is prepared and appended to
  // values, keys, mask and every extra tensor along dimension 1, so keys are projected once per
  // row; a variant whose memory is not per position (areas, a static context) overrides it. An
  // undefined memory (nothing read yet) gives the one-row memory.
  virtual AttentionMemory extend(const AttentionMemory& memory, const torch::Tensor& row);
  // The state of a step over `memory` made valid for a memory `rows` positions longer: the new
  // positions were never attended (zero in every [B, S, ...] tensor: previous alignment, coverage).
  virtual AttentionState grow_state(const AttentionState& state, int64_t rows) const;
  // query [B, Dq]; step = 0-based target position t.
  virtual AttentionOutput forward(const torch::Tensor& query, const AttentionMemory& memory,
                                  const AttentionState& state, int64_t step) = 0;
  // Whether forward() takes a memory with group > 1 (AttentionMemory). Beam search then keeps one
  // copy of each sentence's memory for its K beams instead of K copies.
  virtual bool shares_memory_across_beams() const { return false; }
  // Whether rows at different target steps, over memories padded to a common length
  // (AttentionMemory::cat, grow_state), can share a batch (continuous batching,
  // decoding/running_search.h): not a variant that reads the step itself, or whose memory is not
  // one entry per source position.
  virtual bool joins_running_batches() const { return true; }
  // Continuous batching: b's rows after a's, each grown (grow_state) to the longer memory.
  AttentionState cat_states(const AttentionState& a, int64_t a_length, const AttentionState& b, int64_t b_length) const;
  // Size of the context vector this variant returns.
  virtual int64_t context_size() const { return memory_size_; }
  // An extra training loss term accumulated since the last call (coverage loss, REINFORCE...);
  // undefined when the variant has none. Called once per batch by the trainer, after the forward
  // pass, with the log-likelihood of each sentence's target [B] (detached; REINFORCE's reward) and
  // the number of real target steps of each sentence [B] int64 (steps t >= length are padding).
  virtual torch::Tensor take_auxiliary_loss(const torch::Tensor& sentence_log_likelihood,
                                            const torch::Tensor& target_lengths) {
    return {};
  }

 protected:
  Attention(int64_t query_size, int64_t memory_size)
      : query_size_(query_size), memory_size_(memory_size) {}
  int64_t query_size_;
  int64_t memory_size_;
};

// softmax over the last dimension that gives exactly 0 to positions where mask is false.
// scores [B, S], mask [B, S] bool. Every row must have at least one true position.
torch::Tensor masked_softmax(const torch::Tensor& scores, const torch::Tensor& mask);

// alpha_0 [B, S] of the variants that start aligned to the first source position (monotonic,
// forward): one-hot at position 0, in the memory's dtype and device.
torch::Tensor first_position_alignment(const AttentionMemory& memory);

// context [N, Dm] = sum_i weights[n, i] * values[n / group, i, :]; weights [N, S], values
// [N / group, S, Dm]. When decoding on the CPU, a loop (inference_products.h), which with the
// memory's mask [N / group, S] skips the positions after a row's last attended one (their weights
// must be 0, as masked_softmax with that mask makes them).
torch::Tensor weighted_sum(const torch::Tensor& weights, const torch::Tensor& values, int64_t group = 1,
                           const torch::Tensor& mask = {});

}  // namespace attnmt
