#include "decoding/streaming.h"

#include <algorithm>
#include <atomic>
#include <cctype>

#include "align/words.h"
#include "decoding/translator.h"
#include "eval/simuleval_log.h"
#include "runtime/workers.h"
#include "util/error.h"

namespace attnmt {

namespace {

// The source as read so far: x_1..x_read, and the end of sentence once the stream is over.
std::unique_ptr<SearchState> start_prefix(StepModel& model, const std::vector<int64_t>& source, int64_t read,
                                          bool complete) {
  std::vector<int64_t> ids(source.begin(), source.begin() + read);
  if (complete) ids.push_back(model.eos_id());
  const auto n = static_cast<int64_t>(ids.size());
  auto src = torch::tensor(ids, torch::kLong).view({1, n}).to(model.device());
  auto lengths = torch::full({1}, n, torch::dtype(torch::kLong).device(model.device()));
  return model.start(src, lengths);
}

}  // namespace

// One sentence's source as it arrives and is read, and the decoder state that decodes the next
// target token. A model that streams its source (StepModel::streams_source) reads a token at a
// time into one state; otherwise every prefix is encoded again. The decoder is kept across reads
// where the model says its steps stay exact (keep_decoder); otherwise it restarts and the written
// tokens are replayed.
class SentenceStream::Source {
 public:
  Source(StepModel& model, bool incremental, bool keep_decoder)
      : model_(model), incremental_(incremental && model.streams_source()), keep_decoder_(incremental_ && keep_decoder) {}
  void arrive(const std::vector<int64_t>& tokens) { source_.insert(source_.end(), tokens.begin(), tokens.end()); }
  void end() { ended_ = true; }
  bool ended() const { return ended_; }
  int64_t arrived() const { return static_cast<int64_t>(source_.size()); }
  int64_t read() const { return read_; }
  bool complete() const { return ended_ && read_ == arrived(); }
  // Reads on to `count` arrived tokens (the end of sentence once they are all and the source has
  // ended); the state then decodes the token after `written`. A kept decoder decodes again the
  // step it last took (`again`: its token was not written), or goes on from it (it was).
  void read_to(int64_t count, const std::vector<int64_t>& written, bool again = true) {
    const bool had_state = state_ != nullptr;
    if (!incremental_) {
      read_ = count;
      eos_read_ = complete();
      state_ = start_prefix(model_, source_, read_, eos_read_);
    } else {
      if (!state_) state_ = model_.start_stream();
      if (keep_decoder_ && before_ && again) state_ = std::move(before_);
      before_.reset();
      for (; read_ < count; ++read_) model_.read(*state_, source_[static_cast<size_t>(read_)]);
      if (complete() && !eos_read_) {
        model_.read(*state_, model_.eos_id());
        eos_read_ = true;
      }
      if (keep_decoder_ && had_state) return;
      model_.restart_decoder(*state_);
    }
    int64_t prev = model_.bos_id();  // replay what was written (teacher-forced)
    for (int64_t y : written) {
      model_.advance(as_tensor(prev), *state_);
      prev = y;
    }
  }
  // The step after `written`; a kept decoder remembers the state before it.
  StepResult step(const std::vector<int64_t>& written, bool want_attention) {
    if (keep_decoder_) before_ = state_->clone();
    return model_.step(as_tensor(written.empty() ? model_.bos_id() : written.back()), *state_, want_attention);
  }

 private:
  torch::Tensor as_tensor(int64_t token) const {
    return torch::full({1}, token, torch::dtype(torch::kLong).device(model_.device()));
  }
  StepModel& model_;
  std::vector<int64_t> source_;
  const bool incremental_, keep_decoder_;
  int64_t read_ = 0;
  bool ended_ = false, eos_read_ = false;
  std::unique_ptr<SearchState> state_, before_;
};

namespace {

// The step's greedy choice.
int64_t best_token(const StepResult& r) {
  const int64_t column = r.logits.reshape({-1}).argmax().item<int64_t>();
  return r.vocabulary.defined() ? r.vocabulary[column].item<int64_t>() : column;
}

// The stop of each row of a step's attention [N, S] (one sentence's step: N = 1): the last
// position it attended to, or -1 when it attended nowhere.
std::vector<int64_t> stop_positions(const torch::Tensor& attention, int64_t N) {
  const auto weights = attention.reshape({N, -1}).to(torch::kCPU, torch::kFloat).contiguous();
  const int64_t S = weights.size(1);
  std::vector<int64_t> stops(static_cast<size_t>(N), -1);
  for (int64_t i = 0; i < N; ++i) {
    const float* w = weights.data_ptr<float>() + i * S;
    for (int64_t j = S - 1; j >= 0; --j) {
      if (w[j] > 0) {
        stops[static_cast<size_t>(i)] = j;
        break;
      }
    }
  }
  return stops;
}

// The stream in words: how many source words each source prefix touches and how many words each
// target prefix detokenizes to, both from the tokenizers' own decoding (any tokenizer type).
// The output ends as soon as a cut at decode.max_length is written (StreamedSentence::capped); a
// cut at the length bound of the source (SentenceStream's WRITE that waits) and an end of sentence
// end it once the whole source is there.
void add_word_delays(const Tokenizers& tokenizers, const std::string& line, const std::vector<int>& source,
                     const StreamedSentence& s, bool truncated, StreamedLine& out) {
  const auto& tokens = s.tokens;
  out.words = split_words(out.text);
  const auto total = static_cast<int64_t>(
      split_words(truncated ? tokenizers.src->decode(source) : line).size());
  out.source_words = total;
  // A piece that decodes to a space alone (SentencePiece's lone "▁" before some words) begins the
  // next word: that word must have arrived for it to be read.
  std::vector<int64_t> read_words(source.size() + 1, 0);
  for (size_t g = 1; g <= source.size(); ++g) {
    const std::vector<int> prefix(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(g));
    const auto text = tokenizers.src->decode(prefix);
    const bool open = !text.empty() && std::isspace(static_cast<unsigned char>(text.back()));
    read_words[g] = g == source.size() ? total
                                       : std::min(total, static_cast<int64_t>(split_words(text).size()) + (open ? 1 : 0));
  }
  std::vector<int64_t> words_after;
  std::vector<int> prefix;
  for (size_t t = 0; t < out.delays.size(); ++t) {
    prefix.push_back(static_cast<int>(tokens[t]));
    words_after.push_back(static_cast<int64_t>(split_words(tokenizers.tgt->decode(prefix)).size()));
  }
  const auto n = static_cast<int64_t>(source.size());
  auto went_out = out.delays;
  if (!s.finished && !s.capped && !went_out.empty()) went_out.back() = n;
  const int64_t end_read = s.capped && !went_out.empty() ? went_out.back() : n;
  out.word_delays = word_delays(went_out, read_words, words_after, out.words.size(), end_read);
}

}  // namespace

SentenceStream::SentenceStream(StepModel& model, const StreamingOptions& options)
    : model_(model), options_(options) {
  const bool prefix = options.wait_k > 0 && options.wait_k_policy == WaitKPolicy::prefix;
  // replay: a soft step reads every row of the memory, so the decoder restarts after each read.
  // prefix: it is kept, and a read only lengthens the memory the next step attends to.
  if (prefix && !(options.incremental && model.streams_source())) {
    throw InputError("decode.wait_k_policy prefix: needs a model that reads its source a token at a time "
                     "(model.encoder.bidirectional: false, model.source_eos: true, no shortlist), and not --reencode");
  }
  source_ = std::make_unique<Source>(model, options.incremental,
                                     options.wait_k > 0 ? prefix : model.keeps_decoder_across_reads());
}

SentenceStream::~SentenceStream() = default;

void SentenceStream::push(const std::vector<int64_t>& tokens) {
  if (source_->ended()) throw InputError("the source has ended: nothing more can be read");
  source_->arrive(tokens);
}

void SentenceStream::end_source() { source_->end(); }

int64_t SentenceStream::max_length() const {
  // The bound greedy search sets for the whole sentence (eos counted in its length); until the
  // source has ended, the bound of what has arrived, which the whole source's can only exceed.
  return max_target_length(source_->arrived() + 1, options_.search);
}

// The policy as a loop that stops where it needs a source token that has not arrived: `next_`
// says where it goes on. Given the whole source at once it is the loop of a sentence read from a
// file, READ by READ, WRITE by WRITE.
//   hard head: decode; READ while the head stops right of what is read (less the lookahead) or
//     gives the end early, decoding the step again; else WRITE (the end of sentence: done).
//   wait-k: READ k; decode; the end of sentence before the source is read READs and decodes again;
//     any other token is WRITTEN and one more source token READ.
void SentenceStream::run() {
  torch::InferenceMode inference;
  const int64_t k = options_.wait_k;
  auto& src = *source_;
  while (next_ != Next::done) {
    switch (next_) {
      case Next::start: {
        const int64_t first = k > 0 ? k : 1;
        if (!src.ended() && src.arrived() < first) return;
        src.read_to(std::min(src.arrived(), first), out_.tokens);
        next_ = Next::step;
        break;
      }
      case Next::step: {
        const auto r = src.step(out_.tokens, /*want_attention=*/k == 0);
        token_ = best_token(r);
        if (k > 0) {
          if (token_ == model_.eos_id()) {
            next_ = src.complete() ? Next::done : Next::read;  // READ, then decode this step again
            again_ = true;
          } else {
            next_ = Next::write;
          }
        } else {
          const int64_t stop = stop_positions(r.attention, 1).front();
          if (!src.complete() && (stop < 0 || stop > src.read() - 1 - options_.lookahead || token_ == model_.eos_id())) {
            next_ = Next::read;
            again_ = true;
          } else {
            next_ = token_ == model_.eos_id() ? Next::done : Next::write;
          }
        }
        break;
      }
      case Next::write: {
        // The WRITE that reaches the maximum length cuts the sentence: while the source may still
        // grow (and the bound with it, up to decode.max_length), it waits.
        const int64_t length = static_cast<int64_t>(out_.tokens.size()) + 1;
        const bool capped = options_.search.max_length > 0 && length >= options_.search.max_length;
        if (!src.ended() && !capped && length >= max_length()) return;
        out_.tokens.push_back(token_);
        out_.delays.push_back(src.read());
        if (length >= max_length()) {
          out_.finished = false;
          out_.capped = capped;
          next_ = Next::done;
        } else if (k > 0 && !src.complete()) {
          next_ = Next::read;
          again_ = false;
        } else {
          next_ = Next::step;
        }
        break;
      }
      case Next::read:
        if (src.arrived() > src.read()) {
          src.read_to(src.read() + 1, out_.tokens, again_);
        } else if (!src.ended()) {
          return;  // nothing to read yet
        } else {
          // The source ended after this READ was decided, with nothing more: the end of sentence
          // is what is read. (A source told its end with its last tokens never comes here.)
          src.read_to(src.read(), out_.tokens, again_);
        }
        next_ = Next::step;
        break;
      case Next::done:
        break;
    }
  }
  out_.source_tokens = src.arrived();
}

bool SentenceStream::done() const { return next_ == Next::done; }

int64_t SentenceStream::read() const { return source_->read(); }

StreamedSentence stream_sentence(StepModel& model, const std::vector<int64_t>& source, const StreamingOptions& options) {
  SentenceStream stream(model, options);
  stream.push(source);
  stream.end_source();
  stream.run();
  return stream.output();
}

bool streams_in_batches(const StepModel& model, const StreamingOptions& options) {
  if (!options.incremental || !model.streams_prefix_batches()) return false;
  return options.wait_k > 0 ? options.wait_k_policy == WaitKPolicy::prefix : model.keeps_decoder_across_reads();
}

std::vector<StreamedSentence> stream_batch(StepModel& model, const std::vector<std::vector<int64_t>>& sources,
                                           const StreamingOptions& options) {
  TORCH_CHECK(streams_in_batches(model, options),
              "stream_batch: wait-k's prefix policy, or the hard head's with a decoder kept across reads, on a "
              "model that streams batches of prefixes");
  torch::InferenceMode inference;
  const size_t B = sources.size();
  std::vector<StreamedSentence> out(B);
  if (B == 0) return out;
  const int64_t k = options.wait_k, eos = model.eos_id();
  // The hard head's policy on a decoder kept across reads: a step's result depends on no source
  // position right of where its head stops (its weights there are 0, and the soft weights' exp is
  // shifted by the largest energy it can reach: reachable_exp), and its stop is the first position
  // from its previous stop with p >= 0.5, however much is read. So every row attends to its whole source,
  // one step per token, and the stream's reads follow from the stops: SentenceStream reads until
  // the stop and the lookahead are read (the whole source when it stops nowhere), and an end of
  // sentence before then only reads on and gives the end again.
  const bool head = k == 0;
  // Per sentence: its length n (without eos), the tokens read, the bound on its output.
  std::vector<int64_t> n(B), read(B), bound(B);
  int64_t longest = 0;
  for (size_t b = 0; b < B; ++b) {
    n[b] = static_cast<int64_t>(sources[b].size());
    read[b] = std::min(head ? 1 : k, n[b]);
    bound[b] = max_target_length(n[b] + 1, options.search);
    out[b].source_tokens = n[b];
    longest = std::max(longest, n[b] + 1);
  }
  // What a row attends to: the tokens read, and the end of sentence once they are all (the head:
  // the whole source).
  auto visible = [&](const std::vector<size_t>& rows) {
    std::vector<int64_t> v;
    for (size_t b : rows) v.push_back(head ? n[b] + 1 : read[b] + (read[b] == n[b] ? 1 : 0));
    return v;
  };
  std::vector<int64_t> ids(B * static_cast<size_t>(longest), model.pad_id()), lengths(B);
  for (size_t b = 0; b < B; ++b) {
    std::copy(sources[b].begin(), sources[b].end(), ids.begin() + static_cast<std::ptrdiff_t>(b) * longest);
    ids[b * static_cast<size_t>(longest) + static_cast<size_t>(n[b])] = eos;
    lengths[b] = n[b] + 1;
  }
  const auto src = torch::tensor(ids, torch::kLong).view({static_cast<int64_t>(B), longest});
  std::vector<size_t> rows(B);  // the sentence of each row of the state
  for (size_t b = 0; b < B; ++b) rows[b] = b;
  std::vector<int64_t> prev(B, model.bos_id());
  auto state = model.start_prefixes(src, torch::tensor(lengths, torch::kLong), visible(rows));
  const auto device = model.device();
  while (!rows.empty()) {
    const auto N = static_cast<int64_t>(rows.size());
    bool open = false;  // a row may decode this step again (wait-k: its end of sentence read too early)
    for (size_t b : rows) open |= !head && read[b] < n[b];
    std::unique_ptr<SearchState> before = open ? state->clone() : nullptr;
    TORCH_CHECK(!open || before, "stream_batch: the model's state cannot be copied");
    const auto r = model.step(torch::tensor(prev, torch::kLong).to(device), *state, /*want_attention=*/head);
    auto best = r.logits.argmax(1).to(torch::kCPU, torch::kLong).contiguous();
    if (r.vocabulary.defined()) best = r.vocabulary.index_select(0, best);
    const int64_t* token = best.data_ptr<int64_t>();
    const auto stop = head ? stop_positions(r.attention, N) : std::vector<int64_t>();  // the head's, per row
    std::vector<int64_t> keep, again;  // the rows that go on; those of them taken back to before the step
    std::vector<size_t> next_rows;
    std::vector<int64_t> next_prev;
    for (int64_t i = 0; i < N; ++i) {
      const size_t b = rows[static_cast<size_t>(i)];
      auto& o = out[b];
      const auto at = static_cast<size_t>(i);
      if (head && token[i] != eos) {
        read[b] = stop[at] < 0 ? n[b] : std::max(read[b], std::min(n[b], stop[at] + 1 + options.lookahead));
      }
      // wait-k: the end of sentence before the source is read READs, then this step is decoded again.
      if (!head && token[i] == eos && read[b] < n[b]) {
        ++read[b];
        keep.push_back(i);
        again.push_back(i);
        next_rows.push_back(b);
        next_prev.push_back(prev[at]);
        continue;
      }
      if (token[i] == eos) continue;  // the end: done
      const auto length = static_cast<int64_t>(o.tokens.size()) + 1;
      o.tokens.push_back(token[i]);
      o.delays.push_back(read[b]);
      if (length >= bound[b]) {
        o.finished = false;
        o.capped = options.search.max_length > 0 && length >= options.search.max_length;
        continue;
      }
      if (!head && read[b] < n[b]) ++read[b];  // wait-k: WRITE, then READ
      keep.push_back(i);
      next_rows.push_back(b);
      next_prev.push_back(token[i]);
    }
    if (next_rows.empty()) break;
    if (!again.empty()) model.take_back(*state, *before, again);
    if (static_cast<int64_t>(keep.size()) != N) state->index_select(torch::tensor(keep, torch::kLong).to(device));
    rows = std::move(next_rows);
    prev = std::move(next_prev);
    if (!head) model.limit_source(*state, visible(rows));
  }
  return out;
}

int default_wait_k(int decode_wait_k, int train_wait_k, int lookahead) {
  if (decode_wait_k != 0) return decode_wait_k;
  return lookahead == 0 ? train_wait_k : 0;
}

WaitKPolicy resolve_wait_k_policy(WaitKPolicy chosen, int train_wait_k, bool reads_tokens) {
  if (chosen != WaitKPolicy::automatic) return chosen;
  return train_wait_k > 0 && reads_tokens ? WaitKPolicy::prefix : WaitKPolicy::replay;
}

double average_lagging(const std::vector<int64_t>& delays, int64_t source_tokens) {
  if (delays.empty() || source_tokens <= 0) return 0;
  const double rate = static_cast<double>(delays.size()) / static_cast<double>(source_tokens);  // |y| / |x|
  double sum = 0;
  size_t tau = 0;
  for (size_t t = 0; t < delays.size(); ++t) {  // t = the paper's t - 1
    sum += static_cast<double>(delays[t]) - static_cast<double>(t) / rate;
    tau = t + 1;
    if (delays[t] >= source_tokens) break;
  }
  return sum / static_cast<double>(tau);
}

std::vector<StreamedLine> stream_lines(StepModel& model, const Tokenizers& tokenizers,
                                       const std::vector<std::string>& lines, const StreamingOptions& options) {
  std::vector<StreamedLine> results(lines.size());
  const auto encoded = encode_sources(*tokenizers.src, lines, options.max_source_tokens);
  auto source_of = [&](size_t i) { return std::vector<int64_t>(encoded[i].begin(), encoded[i].end()); };
  auto finish = [&](size_t i, const StreamedSentence& s) {
    auto& line = results[i];
    line.text = tokenizers.tgt->decode(std::vector<int>(s.tokens.begin(), s.tokens.end()));
    line.delays = s.delays;
    line.source_tokens = s.source_tokens;
    line.lagging = average_lagging(s.delays, s.source_tokens);
    // At the length limit the line may have been cut: its words are then those of what was streamed.
    const bool cut = static_cast<int>(encoded[i].size()) >= options.max_source_tokens;
    add_word_delays(tokenizers, lines[i], encoded[i], s, cut, line);
  };
  // The work: one sentence at a time, or batches of sentences of like length (blank lines: blank).
  std::vector<std::vector<size_t>> jobs;
  const bool batched = streams_in_batches(model, options);
  std::vector<size_t> order;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!encoded[i].empty()) order.push_back(i);
  }
  if (batched) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return encoded[a].size() < encoded[b].size(); });
    const auto size = static_cast<size_t>(std::max(1, options.batch_size));
    for (size_t at = 0; at < order.size(); at += size) {
      jobs.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(at),
                        order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), at + size)));
    }
  } else {
    for (size_t i : order) jobs.push_back({i});
  }
  std::atomic<size_t> next{0};
  const int workers = static_cast<int>(std::min<size_t>(resolve_workers(options.workers, model.device().is_cpu()),
                                                        std::max<size_t>(jobs.size(), 1)));
  run_workers(workers, std::max(1, at::get_num_threads() / workers), [&](int) {
    try {
      for (size_t j; (j = next.fetch_add(1)) < jobs.size();) {
        const auto& job = jobs[j];
        if (!batched) {
          finish(job[0], stream_sentence(model, source_of(job[0]), options));
          continue;
        }
        std::vector<std::vector<int64_t>> sources;
        for (size_t i : job) sources.push_back(source_of(i));
        const auto streamed = stream_batch(model, sources, options);
        for (size_t at = 0; at < job.size(); ++at) finish(job[at], streamed[at]);
      }
    } catch (...) {
      next = jobs.size();
      throw;
    }
  });
  return results;
}

}  // namespace attnmt
