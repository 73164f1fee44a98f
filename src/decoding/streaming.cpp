#include "decoding/streaming.h"

#include <algorithm>
#include <atomic>

#include "decoding/translator.h"
#include "eval/simuleval_log.h"
#include "runtime/workers.h"
#include "util/error.h"

namespace attnmt {

namespace {

// The source as read so far: x_1..x_read, and the end of sentence once the stream is over.
std::unique_ptr<SearchState> start_prefix(StepModel& model, const std::vector<int64_t>& source, int64_t read) {
  std::vector<int64_t> ids(source.begin(), source.begin() + read);
  if (read == static_cast<int64_t>(source.size())) ids.push_back(model.eos_id());
  const auto n = static_cast<int64_t>(ids.size());
  auto src = torch::tensor(ids, torch::kLong).view({1, n}).to(model.device());
  auto lengths = torch::full({1}, n, torch::dtype(torch::kLong).device(model.device()));
  return model.start(src, lengths);
}

// One sentence's source as it is read, and the decoder state that decodes the next target token.
// A model that streams its source (StepModel::streams_source) reads a token at a time into one
// state; otherwise every prefix is encoded again. The decoder is kept across reads where the model
// says its steps stay exact (keep_decoder, the hard-attention policy only); otherwise it restarts
// and the written tokens are replayed.
class SourceStream {
 public:
  SourceStream(StepModel& model, const std::vector<int64_t>& source, bool incremental, bool keep_decoder)
      : model_(model), source_(source), incremental_(incremental && model.streams_source()),
        keep_decoder_(incremental_ && keep_decoder) {}
  int64_t read() const { return read_; }
  bool complete() const { return read_ == static_cast<int64_t>(source_.size()); }
  // Reads on to `count` source tokens (the end of sentence after the last); the state then decodes
  // the token after `written`. A kept decoder decodes again the step it last took (`again`: its
  // token was not written), or goes on from it (it was).
  void read_to(int64_t count, const std::vector<int64_t>& written, bool again = true) {
    const bool had_state = state_ != nullptr;
    if (!incremental_) {
      read_ = count;
      state_ = start_prefix(model_, source_, read_);
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
  const std::vector<int64_t>& source_;
  const bool incremental_, keep_decoder_;
  int64_t read_ = 0;
  bool eos_read_ = false;
  std::unique_ptr<SearchState> state_, before_;
};

// The step's greedy choice.
int64_t best_token(const StepResult& r) {
  const int64_t column = r.logits.reshape({-1}).argmax().item<int64_t>();
  return r.vocabulary.defined() ? r.vocabulary[column].item<int64_t>() : column;
}

// WRITE: `token` goes out, delayed by the source tokens read; false once the output reaches its
// maximum length (the sentence is then cut: not finished).
bool write(StreamedSentence& out, int64_t token, int64_t read, int64_t max_length) {
  out.tokens.push_back(token);
  out.delays.push_back(read);
  if (static_cast<int64_t>(out.tokens.size()) < max_length) return true;
  out.finished = false;
  return false;
}

// The last position the step attended to (its hard stop), or -1 when it attended nowhere.
int64_t stop_position(const torch::Tensor& attention) {
  auto row = attention.reshape({-1}).to(torch::kCPU, torch::kFloat).contiguous();
  const float* w = row.data_ptr<float>();
  for (int64_t i = row.numel() - 1; i >= 0; --i) {
    if (w[i] > 0) return i;
  }
  return -1;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// The stream in words: how many source words each source prefix touches and how many words each
// target prefix detokenizes to, both from the tokenizers' own decoding (any tokenizer type).
void add_word_delays(const Tokenizers& tokenizers, const std::string& line, const std::vector<int>& source,
                     const std::vector<int64_t>& tokens, bool truncated, StreamedLine& out) {
  out.words = split_words(out.text);
  const auto total = static_cast<int64_t>(
      split_words(truncated ? tokenizers.src->decode(source) : line).size());
  out.source_words = total;
  std::vector<int64_t> read_words(source.size() + 1, 0);
  for (size_t g = 1; g <= source.size(); ++g) {
    const std::vector<int> prefix(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(g));
    read_words[g] = g == source.size() ? total
                                       : std::min(total, static_cast<int64_t>(split_words(tokenizers.src->decode(prefix)).size()));
  }
  std::vector<int64_t> words_after;
  std::vector<int> prefix;
  for (size_t t = 0; t < out.delays.size(); ++t) {
    prefix.push_back(static_cast<int>(tokens[t]));
    words_after.push_back(static_cast<int64_t>(split_words(tokenizers.tgt->decode(prefix)).size()));
  }
  out.word_delays = word_delays(out.delays, read_words, words_after, out.words.size());
}

// wait-k: write after every read once k are read; an early end of sentence reads instead.
StreamedSentence stream_wait_k(StepModel& model, const std::vector<int64_t>& source, const StreamingOptions& options) {
  torch::InferenceMode inference;
  StreamedSentence out;
  const auto n = static_cast<int64_t>(source.size());
  out.source_tokens = n;
  const int64_t max_length = max_target_length(n + 1, options.search);
  // replay: a soft step reads every row of the memory, so the decoder restarts after each read.
  // prefix: it is kept, and a read only lengthens the memory the next step attends to.
  const bool prefix = options.wait_k_policy == WaitKPolicy::prefix;
  if (prefix && !(options.incremental && model.streams_source())) {
    throw InputError("decode.wait_k_policy prefix: needs a model that reads its source a token at a time "
                     "(model.encoder.bidirectional: false, model.source_eos: true, no shortlist), and not --reencode");
  }
  SourceStream stream(model, source, options.incremental, /*keep_decoder=*/prefix);
  stream.read_to(std::min<int64_t>(n, options.wait_k), out.tokens);
  while (true) {
    const int64_t token = best_token(stream.step(out.tokens, /*want_attention=*/false));
    if (token == model.eos_id()) {
      if (stream.complete()) break;  // WRITE the end: done
      stream.read_to(stream.read() + 1, out.tokens, /*again=*/true);
      continue;
    }
    if (!write(out, token, stream.read(), max_length)) break;
    if (!stream.complete()) stream.read_to(stream.read() + 1, out.tokens, /*again=*/false);
  }
  return out;
}

}  // namespace

StreamedSentence stream_sentence(StepModel& model, const std::vector<int64_t>& source, const StreamingOptions& options) {
  if (options.wait_k > 0) return stream_wait_k(model, source, options);
  torch::InferenceMode inference;
  StreamedSentence out;
  const auto n = static_cast<int64_t>(source.size());
  out.source_tokens = n;
  // The bound greedy search sets for the whole sentence (eos counted in its length).
  const int64_t max_length = max_target_length(n + 1, options.search);
  SourceStream stream(model, source, options.incremental, model.keeps_decoder_across_reads());
  stream.read_to(std::min<int64_t>(n, 1), out.tokens);
  while (true) {
    const auto r = stream.step(out.tokens, /*want_attention=*/true);
    const int64_t token = best_token(r);
    const int64_t stop = stop_position(r.attention);
    if (!stream.complete() && (stop < 0 || stop > stream.read() - 1 - options.lookahead || token == model.eos_id())) {
      stream.read_to(stream.read() + 1, out.tokens);  // READ, then decode this step again
      continue;
    }
    if (token == model.eos_id()) break;  // WRITE the end: done
    if (!write(out, token, stream.read(), max_length)) break;
  }
  return out;
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
  std::atomic<size_t> next{0};
  const int workers = static_cast<int>(std::min<size_t>(resolve_workers(options.workers, model.device().is_cpu()),
                                                        std::max<size_t>(lines.size(), 1)));
  run_workers(workers, std::max(1, at::get_num_threads() / workers), [&](int) {
    try {
      for (size_t i; (i = next.fetch_add(1)) < lines.size();) {
        if (encoded[i].empty()) continue;  // blank -> blank
        const auto s = stream_sentence(model, std::vector<int64_t>(encoded[i].begin(), encoded[i].end()), options);
        auto& line = results[i];
        line.text = tokenizers.tgt->decode(std::vector<int>(s.tokens.begin(), s.tokens.end()));
        line.delays = s.delays;
        line.source_tokens = s.source_tokens;
        line.lagging = average_lagging(s.delays, s.source_tokens);
        // At the length limit the line may have been cut: its words are then those of what was streamed.
        const bool cut = static_cast<int>(encoded[i].size()) >= options.max_source_tokens;
        add_word_delays(tokenizers, lines[i], encoded[i], s.tokens, cut, line);
      }
    } catch (...) {
      next = lines.size();
      throw;
    }
  });
  return results;
}

}  // namespace attnmt
