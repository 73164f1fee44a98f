// Streaming (simultaneous) decoding: the source arrives a token at a time and target tokens are
// written as soon as the model's monotonic head allows -- the Neural Transducer's promise (Jaitly
// et al., 2016) in the form of MoChA (Chiu & Raffel, 2018) and hard monotonic attention (Raffel
// et al., 2017), whose head never reads right of where it stops.
//
// The policy, greedy: with g source tokens read, the model decodes the next target token from the
// prefix x_1..x_g (encoded as a complete input; no end of sentence until the stream ends). It
// WRITES the token when the head stopped at a position j <= g - 1 - lookahead (0-based) and the
// token is not the end of sentence; otherwise it READS one more source token and decodes the same
// step again. Once the whole source is read (end of sentence appended), it writes whatever the model
// gives. A bidirectional encoder's states of x_1..x_g change as tokens arrive, so after each READ
// the prefix is encoded again and the target tokens written so far are replayed (teacher-forced);
// the written tokens never change. A model that streams its source (StepModel::streams_source: a
// unidirectional encoder) instead advances its encoder one step per READ and its attention memory
// one row; its decoder is kept across READs where the model says that is exact
// (keeps_decoder_across_reads: this hard policy, a decoder that does not start from the source),
// and otherwise restarted and the written tokens replayed as above. Both give the same output. With lookahead >= the source length the policy reads
// everything first: the output is then greedy search's on the whole sentence.
// wait-k (Ma et al., 2019, STACL, 3.2, at test time), for any model: read k source tokens, then
// write one and read one in turn; target token t is decided from the prefix x_1..x_{min(k+t-1,|x|)}
// (the written tokens replayed after each read, as above), so the step that writes
// it never sees a token right of k + t - 1.
// An end of sentence before the whole source is read reads one more token instead; with k >= |x|
// the output is greedy search's on the whole sentence.
// wait-k's policy (WaitKPolicy::prefix) on a model that reads its source a token at a time: STACL's
// prefix-to-prefix decoding in its recurrent form. The decoder starts once k tokens are read and is
// kept across reads: step t attends to the x_1..x_{g(t)} read by then (the memory grows a row per
// read), and no earlier step is decoded again. Token t then follows from the steps before it as
// they were taken, not from x_1..x_{g(t)} replayed (WaitKPolicy::replay), so the two write other
// tokens; prefix costs one decoder step per written token, as greedy search does.
// Latency: average lagging (Ma et al., 2019, STACL, eq. 4) over the source subwords read when each
// target subword is written; SimulEval's metrics in eval/latency.h.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "decoding/search_types.h"
#include "decoding/step_model.h"

namespace attnmt {

struct StreamingOptions {
  SearchOptions search;  // max_length_ratio, max_length bound the output (as greedy search's)
  int lookahead = 0;     // source tokens read past the head's stop before a token is written
  int wait_k = 0;        // > 0: the wait-k policy with this k (any attention); 0: the hard head's policy
  WaitKPolicy wait_k_policy = WaitKPolicy::replay;  // (automatic is the caller's to resolve; here it is replay)
  int workers = 0;       // sentences decoded at once, a thread each (0 = one per thread on CPU)
  // stream_lines: sentences streamed together in one batch where the policy and model allow it
  // (stream_batch); a worker then takes a batch at a time.
  int batch_size = 64;
  int max_source_tokens = 1024;  // longer inputs are truncated (as translate_lines)
  // A model that reads its source a token at a time (StepModel::streams_source: unidirectional)
  // does so; false: every prefix is encoded again, as for a bidirectional model (the reference the
  // tests compare the incremental path with).
  bool incremental = true;
};

struct StreamedSentence {
  std::vector<int64_t> tokens;  // written target tokens (no eos)
  std::vector<int64_t> delays;  // source tokens read when each was written (1..source length)
  int64_t source_tokens = 0;    // |x|, without eos
  bool finished = true;         // false when cut at the maximum length
  bool capped = false;          // cut at decode.max_length (not at the source's length bound)
};

// One sentence's stream as its source arrives: push() what has arrived, end_source() once it is
// all there, and run() takes the policy as far as the arrived tokens allow (it returns where it
// would READ a token that has not arrived, or once the output is done). Each token is decided from
// the same source prefix as when the whole source is given at once (stream_sentence is this with
// one push), so the output and delays do not depend on how the source was cut into pushes, given
// that the end is told with the last tokens (told later, with nothing more, the end of sentence is
// read as one more READ). Until the source has ended, a WRITE that would reach the maximum length
// of what has arrived waits (the whole source's bound can only be larger).
class SentenceStream {
 public:
  SentenceStream(StepModel& model, const StreamingOptions& options);
  ~SentenceStream();
  SentenceStream(const SentenceStream&) = delete;
  SentenceStream& operator=(const SentenceStream&) = delete;
  void push(const std::vector<int64_t>& tokens);  // InputError once the source has ended
  void end_source();
  void run();
  bool done() const;                                      // the output is complete (end of sentence or cut)
  int64_t read() const;                                   // source tokens read so far
  const StreamedSentence& output() const { return out_; }  // what is written so far

 private:
  class Source;
  enum class Next { start, step, write, read, done };
  int64_t max_length() const;
  StepModel& model_;
  const StreamingOptions options_;
  std::unique_ptr<Source> source_;
  StreamedSentence out_;
  Next next_ = Next::start;
  int64_t token_ = 0;   // decided by the last step, to WRITE
  bool again_ = true;   // the pending READ decodes the same step again (its token was not written)
};

// The wait-k a stream decodes with where no flag gives one: decode.wait_k, else the k the model
// was trained prefix-to-prefix with (train.wait_k) unless a lookahead asks for the head's policy,
// else 0 (the hard head's policy).
int default_wait_k(int decode_wait_k, int train_wait_k, int lookahead);
// decode.wait_k_policy with automatic resolved: prefix for a model trained with train.wait_k whose
// encoder reads its source a token at a time (`reads_tokens`), else replay.
WaitKPolicy resolve_wait_k_policy(WaitKPolicy chosen, int train_wait_k, bool reads_tokens);

// One sentence's stream: source = its token ids without eos. Without wait_k, the model's attention
// must stop hard (StepResult::attention all zero = nothing to stop at in what was read).
StreamedSentence stream_sentence(StepModel& model, const std::vector<int64_t>& source, const StreamingOptions& options);

// Whether stream_batch can decode these options' streams on this model: wait-k's prefix policy, or
// the hard head's policy on a model that keeps its decoder across reads, incremental, on a model
// that streams_prefix_batches().
bool streams_in_batches(const StepModel& model, const StreamingOptions& options);

// Those policies over sources known whole, decoded together as greedy search decodes a batch, the
// memory read whole. wait-k: each row's steps are limited to what its stream has read, and a row
// whose end of sentence comes before its source is read is taken back to its state before that
// step and decodes it again. The head: a step depends on nothing right of its stop, so each row
// attends to its whole source and its reads follow from the stops. Each sentence's tokens, delays
// and ends are stream_sentence's (up to float reassociation in the steps, the batch's shape), in
// one decoder step per row per written token (wait-k: and per end of sentence read too early).
std::vector<StreamedSentence> stream_batch(StepModel& model, const std::vector<std::vector<int64_t>>& sources,
                                           const StreamingOptions& options);

// AL = 1/tau sum_{t=1}^{tau} (g(t) - (t - 1) |x| / |y|), tau = the first t with g(t) = |x| (or
// |y| if none); 0 for an empty output or source.
double average_lagging(const std::vector<int64_t>& delays, int64_t source_tokens);

struct StreamedLine {
  std::string text;             // detokenized ("" for a blank line)
  std::vector<int64_t> delays;  // as StreamedSentence
  int64_t source_tokens = 0;
  double lagging = 0;           // average_lagging
  // The same stream in words, as SimulEval scores text (eval/simuleval_log.h, word_delays): the
  // whitespace words of `text`, each with the source words read when its last subword was written.
  std::vector<std::string> words;
  std::vector<int64_t> word_delays;
  int64_t source_words = 0;     // whitespace words of the source line (as streamed, if truncated)
};

// stream_sentence over each line (tokenized here), sentences spread over workers; where
// stream_batch can, batches of sentences of like length spread over them.
std::vector<StreamedLine> stream_lines(StepModel& model, const Tokenizers& tokenizers,
                                       const std::vector<std::string>& lines, const StreamingOptions& options);

}  // namespace attnmt
