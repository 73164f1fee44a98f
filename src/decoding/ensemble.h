// An ensemble decoded as one model: at each step the members' log-probabilities are combined by
// their weighted mean, sum_m w_m log p_m(y | ...) with the weights summing to 1 (as Marian and
// OpenNMT-py combine them), and search takes that as the step's log-probabilities, without
// renormalising it. Members may differ in architecture and attention; they share the target
// vocabulary (the caller checks it). A member with a shortlist scores only its shortlist's
// tokens: the others get -inf from it, so the ensemble's candidates are the tokens every
// member's shortlist has. The attention the ensemble reports (and the coverage penalty uses) is
// the first member's.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "decoding/step_model.h"

namespace attnmt {

class EnsembleStepModel : public StepModel {
 public:
  // members: not owned, alive while this is; weights: one per member, > 0 (normalised here);
  // target_vocab_size: V of every member's full vocabulary.
  EnsembleStepModel(std::vector<StepModel*> members, std::vector<double> weights, int64_t target_vocab_size);
  std::unique_ptr<SearchState> start(const torch::Tensor& src, const torch::Tensor& lengths) override;
  StepResult step(const torch::Tensor& prev_tokens, SearchState& state, bool want_attention) override;
  int64_t bos_id() const override { return members_.front()->bos_id(); }
  int64_t eos_id() const override { return members_.front()->eos_id(); }
  int64_t pad_id() const override { return members_.front()->pad_id(); }
  int64_t unk_id() const override { return members_.front()->unk_id(); }
  torch::Device device() const override { return members_.front()->device(); }
  bool merges_states() const override;  // every member's
  void merge(SearchState& into, SearchState& from) override;

 private:
  std::vector<StepModel*> members_;
  std::vector<double> weights_;
  int64_t vocab_size_;
};

}  // namespace attnmt
