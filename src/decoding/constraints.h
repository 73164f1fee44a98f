// Lexically constrained decoding with dynamic beam allocation (Post & Vilar, 2018, "Fast Lexically
// Constrained Decoding with Dynamic Beam Allocation for Neural Machine Translation", NAACL,
// sections 3-4). Each sentence comes with phrases (token sequences) that its output must contain.
//
// A hypothesis's progress is the number of constraint tokens it has produced: the tokens of the
// phrases it completed, plus those of the phrase it is in the middle of. At each step the
// candidates are (1) the K best extensions over all rows and words, (2) each row's best next
// word, and (3) for each row the words that make progress: the next word of the phrase it is in,
// or the first word of any phrase it has not met. The K beam slots are shared among "banks", one
// per level of progress 0..C (C = the sentence's constraint tokens), K / (C + 1) each, the
// remainder to the most advanced banks; slots a bank cannot fill go round the banks from the most
// advanced down. Within a bank, candidates rank by log-probability. So hypotheses that took a
// constraint's word (usually less likely at that moment) are not pushed out by those that did
// not, and the beam holds every level of progress at once.
//
// End of sentence is barred until every phrase is met; a sentence that reaches its maximum
// length with phrases unmet finishes with constraints_met = false (the caller says so).
// Leaving a phrase half-done undoes its progress. A phrase generated unprompted counts as met.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "decoding/search_types.h"
#include "decoding/step_model.h"

namespace attnmt {

using Phrases = std::vector<std::vector<int64_t>>;

// One hypothesis's progress through its sentence's phrases.
class ConstraintState {
 public:
  ConstraintState() = default;
  explicit ConstraintState(const Phrases& phrases);
  // The state after appending `token`.
  ConstraintState advance(const Phrases& phrases, int64_t token) const;
  // Tokens that make progress from here: the next token of the phrase in progress, else the first
  // token of every unmet phrase.
  std::vector<int64_t> progress_tokens(const Phrases& phrases) const;
  int met_tokens() const { return met_tokens_; }  // the bank: tokens of met phrases + progress
  bool all_met() const { return unmet_ == 0; }

 private:
  std::vector<char> met_;  // per phrase
  int current_ = -1;       // the phrase in progress, or -1
  int progress_ = 0;       // its tokens produced so far
  int met_tokens_ = 0;
  int unmet_ = 0;
};

// The number of slots each bank 0..banks-1 gets first: beam / banks, the remainder to the highest.
std::vector<int64_t> bank_sizes(int64_t beam, int64_t banks);

bool has_constraints(const Guides& guides);

// Beam search (options as beam_search's: length and coverage penalties, n-best, attention, the
// token rules) under each guide's constraints. Finished hypotheses rank by constraints met, then
// score. Needs the step's full vocabulary (no shortlist).
std::vector<std::vector<Hypothesis>> constrained_beam_search(StepModel& model, const torch::Tensor& src,
                                                             const torch::Tensor& lengths,
                                                             const SearchOptions& options, const Guides& guides);

}  // namespace attnmt
