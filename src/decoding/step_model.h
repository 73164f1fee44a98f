// What search sees of a model: start from a source batch, advance one step, and select rows of
// the state (to expand sentences into beams, follow back-pointers and drop finished sentences).
// Greedy and beam search (search.h) use nothing else: no concrete decoder or attention type.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <stdexcept>
#include <vector>

namespace attnmt {

class SearchState {
 public:
  virtual ~SearchState() = default;
  // Keeps rows `index` [N'] (int64) of every batch-first tensor, in that order.
  virtual void index_select(const torch::Tensor& index) = 0;
  // The same, when every row moves only among the rows of its own source sentence (beams
  // reordered, no sentence dropped): what depends on the source alone (the encoder's memory) is
  // then already in place and may be left as it is.
  virtual void reorder_beams(const torch::Tensor& index) { index_select(index); }
  // Beam search's start: `index` [B * K] repeats each sentence's row K times (row b*K + k comes
  // from row b). A state may keep what depends on the source alone once per sentence from then on;
  // every later index_select then moves whole groups (rows a*K .. a*K + K-1 come from one
  // sentence's rows), as beam search's do.
  virtual void expand_beams(const torch::Tensor& index, int64_t beam_size) { index_select(index); }
  // A copy that later steps of either do not change (streaming keeps the state before a step, to
  // decode that step again after a READ); nullptr where a state cannot be copied.
  virtual std::unique_ptr<SearchState> clone() const { return nullptr; }
};

struct StepResult {
  torch::Tensor logits;      // [N, V], unnormalised: search takes log_softmax of them (candidates.h)
  // The logits are log-probabilities already, to be used as they are (an ensemble's weighted
  // mean of its members' log-probabilities is one, and is not renormalised).
  bool log_probs = false;
  torch::Tensor attention;   // [N, S] weights of this step (undefined if not requested)
  // A vocabulary shortlist (decode.shortlist): [V] int64 on the CPU, the token of each column of
  // logits (the softmax is then over these tokens alone). Undefined: column v is token v.
  torch::Tensor vocabulary;
};

class StepModel {
 public:
  virtual ~StepModel() = default;
  // src [B, S] int64 padded ids (eos included), lengths [B] int64.
  virtual std::unique_ptr<SearchState> start(const torch::Tensor& src, const torch::Tensor& lengths) = 0;
  // prev_tokens [N] int64: y_{t-1} (bos at t = 0). Advances the state to step t + 1.
  virtual StepResult step(const torch::Tensor& prev_tokens, SearchState& state, bool want_attention) = 0;
  virtual int64_t bos_id() const = 0;
  virtual int64_t eos_id() const = 0;
  // The padding and unknown-word tokens, which the toolkits' search rules bar (toolkit_search.h);
  // attnmt's vocabularies (converted ones too) have them at 0 and 1 (data/tokenizer.h).
  virtual int64_t pad_id() const { return 0; }
  virtual int64_t unk_id() const { return 1; }
  virtual torch::Device device() const = 0;

  // Streaming (decoding/streaming.h) on a model that reads its source a token at a time (encoder
  // states of a prefix equal the whole sentence's: a unidirectional encoder). Without it, streaming
  // encodes every prefix with start().
  virtual bool streams_source() const { return false; }
  // A one-sentence state that has read nothing: read() the source into it, then restart_decoder().
  virtual std::unique_ptr<SearchState> start_stream() { throw std::logic_error("streams_source() is false"); }
  // Reads one source token (eos last): the encoder one step on, the memory one row longer; a
  // decoder state in it is made valid for the longer memory (the new row never attended).
  virtual void read(SearchState& state, int64_t token) { throw std::logic_error("streams_source() is false"); }
  // The decoder from its initial state over the source read so far, at step 0 (what start() gives
  // for that prefix).
  virtual void restart_decoder(SearchState& state) { throw std::logic_error("streams_source() is false"); }
  // Whether the decoder's steps stay what they were when the source grows, for steps whose hard
  // attention stopped inside what was read: its initial state ignores the source and the attention
  // reads nothing right of where it stops. Then streaming keeps the decoder across reads; else it
  // restarts it and replays the written tokens.
  virtual bool keeps_decoder_across_reads() const { return false; }
  // Policies that keep the decoder across reads (wait-k's prefix; the hard head's with
  // keeps_decoder_across_reads) over sources known whole (a file, streaming.h): whether a batch of
  // streams can be decoded together, the memory read whole and each row's steps limited to what
  // its stream has read. A step then attends as after read()s of the same tokens (the memory's
  // masked positions weigh nothing), so the rows' steps equal their one-sentence streams' up to
  // float reassociation; a row that must decode a step again is taken back (take_back).
  virtual bool streams_prefix_batches() const { return false; }
  // src [B, S] padded ids (eos included), lengths [B]: every source read whole; each row's decoder
  // started from its first visible[b] tokens (restart_decoder after reading those), and its steps
  // attending to them alone until limit_source says more.
  virtual std::unique_ptr<SearchState> start_prefixes(const torch::Tensor& src, const torch::Tensor& lengths,
                                                      const std::vector<int64_t>& visible) {
    throw std::logic_error("streams_prefix_batches() is false");
  }
  // The source positions each row's next steps attend to: its first visible[n] (n: the state's rows).
  virtual void limit_source(SearchState& state, const std::vector<int64_t>& visible) {
    throw std::logic_error("streams_prefix_batches() is false");
  }
  // Rows `rows` of `state` back to what they are in `before` (its clone() before the last step);
  // the other rows, and the memory (which a step does not change), stay.
  virtual void take_back(SearchState& state, const SearchState& before, const std::vector<int64_t>& rows) {
    throw std::logic_error("streams_prefix_batches() is false");
  }
  // Continuous batching (running_search.h): whether the states of batches started apart, now at
  // different steps, can be merged into one batch whose rows each step as in their own batch
  // (their step results equal up to float reassociation: padding, the batch's shape).
  virtual bool merges_states() const { return false; }
  // Appends the rows of `from` after those of `into`, both from start() (expanded to beams alike
  // where they were); `from` is not used again.
  virtual void merge(SearchState& into, SearchState& from) { throw std::logic_error("merges_states() is false"); }
  // step() without its result (a replay of a written token): the output layer may be skipped.
  virtual void advance(const torch::Tensor& prev_tokens, SearchState& state) { step(prev_tokens, state, false); }
};

}  // namespace attnmt
