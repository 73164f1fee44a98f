// Continuous batching: greedy or beam search over a batch that sentences join and leave between
// decoder steps (iteration-level scheduling, as Orca does for Transformers: Yu et al., OSDI 2022).
// A sentence that arrives while others decode has its encoder run and its state merged into the
// running batch (StepModel::merge: memories padded to the longest, rows at different steps); one
// that finishes leaves at once with its n-best list. So no sentence waits for the longest of its
// batch, and a server need not wait for a batch to end before it starts the next sentences.
//
// Each sentence is searched as greedy_search / beam_search (search.h) search it alone: the same
// candidates, the same finishing rules and the same n-best list; its steps and token rules at its
// own step. Its scores equal those of decoding it alone up to float reassociation (the batch's
// shape and the memory's padding change the order of some sums, as in any batch; a model whose
// steps are exact row by row, such as the tests' step models, gives identical numbers).
//
// Not every search can run so: toolkit search rules, sampling and constraints keep their batches
// (search()), and so do models whose rows must be at one step or share one output layer
// (StepModel::merges_states: a shortlist, decoder self-attention, an attention that reads the step).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decoding/beams.h"
#include "decoding/search_types.h"
#include "decoding/step_model.h"

namespace attnmt {

class RunningSearch {
 public:
  // "" when `model` under `options` can decode as a running batch, else why not (one line, for logs).
  static std::string refusal(const StepModel& model, const SearchOptions& options);

  // std::logic_error unless refusal(model, options) is "".
  RunningSearch(StepModel& model, const SearchOptions& options);

  // Encodes the sentences (src [B, S] int64 padded ids on the model's device, lengths [B], as
  // search() takes them) and makes them part of the batch from the next step on. guides: empty or
  // one per sentence, without constraints (std::invalid_argument). Returns a ticket per sentence,
  // in order: step() names finished sentences by it.
  std::vector<uint64_t> add(const torch::Tensor& src, const torch::Tensor& lengths, Guides guides = {});

  // A sentence whose search goes on after a history already fed to the model (interactive
  // translation: alternatives.h): `tokens` (at least one, no eos) were decided with log-probability
  // log_prob, and its state row has read every one of them but the last, its next input.
  struct Resumed {
    std::vector<int64_t> tokens;
    double log_prob = 0;
    int64_t src_len = 0;  // its source's length, eos counted
    SentenceGuide guide;  // without a prefix or constraints
  };
  // Makes them part of the batch from the next step on, searched from there as beam or greedy
  // search goes on from such a history. `state`: one row per sentence, from this model's start()
  // and steps, not expanded to beams. std::invalid_argument with return_attention or a coverage
  // penalty (the history's attention is not known), or a history at the maximum length already.
  std::vector<uint64_t> resume(std::unique_ptr<SearchState> state, std::vector<Resumed> sentences);

  struct Done {
    uint64_t ticket = 0;
    std::vector<Hypothesis> n_best;  // best first, as search() returns them
    bool stopped = false;            // its watch stopped it: no hypothesis
  };
  // One decoder step of every sentence in the batch. Returns the sentences that finished at it, and
  // those whose watch (SentenceGuide::watch) said stop; they have left the batch.
  std::vector<Done> step();

  // Sentences in the batch.
  size_t sentences() const { return running_.size(); }
  bool empty() const { return running_.empty(); }

 private:
  struct Sentence {
    uint64_t ticket = 0;
    size_t slot = 0;        // its guide in guides_ (TokenRules reads them by this index)
    int64_t src_len = 0;
    int64_t t = 0;          // target tokens decided so far: its own step
    std::vector<int64_t> prev;  // its rows' input tokens of the next step (K; greedy 1)
    Hypothesis hyp;         // greedy
    std::unique_ptr<Beams> beams;       // beam search: its K rows
    std::vector<Hypothesis> finished;   // beam search
    torch::Tensor coverage;             // [K, src_len] its rows' attention sums (coverage penalty)
  };
  struct StepScores;

  std::vector<Done> greedy_step(const StepResult& r, StepScores& scores);
  std::vector<Done> beam_step(const StepResult& r, StepScores& scores);
  void release(Sentence& s);
  // Takes `state` (B sentences' rows, expanded to beams where beam search runs) into the batch.
  void adopt(std::unique_ptr<SearchState> state);
  // A new sentence's record, its guide in a free slot.
  Sentence& enter(int64_t src_len, SentenceGuide guide);

  StepModel& model_;
  SearchOptions options_;
  bool greedy_ = false;
  int64_t K_ = 1;  // rows per sentence
  std::unique_ptr<SearchState> state_;
  std::vector<Sentence> running_;  // sentence i has rows i*K .. i*K + K-1 of state_
  Guides guides_;                  // by slot
  std::vector<size_t> free_slots_;
  uint64_t next_ticket_ = 0;
};

}  // namespace attnmt
