#include "decoding/streaming.h"

#include <algorithm>
#include <atomic>

#include "decoding/translator.h"
#include "eval/simuleval_log.h"
#include "runtime/workers.h"

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
  auto as_tensor = [&](int64_t token) { return torch::full({1}, token, torch::dtype(torch::kLong).device(model.device())); };
  int64_t read = std::min<int64_t>(n, options.wait_k);
  auto state = start_prefix(model, source, read);
  int64_t prev = model.bos_id();
  // READ: the longer prefix encoded, the written tokens replayed.
  auto read_one = [&] {
    ++read;
    state = start_prefix(model, source, read);
    prev = model.bos_id();
    for (int64_t y : out.tokens) {
      model.step(as_tensor(prev), *state, /*want_attention=*/false);
      prev = y;
    }
  };
  while (true) {
    const auto r = model.step(as_tensor(prev), *state, /*want_attention=*/false);
    int64_t token = r.logits.reshape({-1}).argmax().item<int64_t>();
    if (r.vocabulary.defined()) token = r.vocabulary[token].item<int64_t>();
    if (token == model.eos_id()) {
      if (read == n) break;  // WRITE the end: done
      read_one();
      continue;
    }
    out.tokens.push_back(token);  // WRITE
    out.delays.push_back(read);
    prev = token;
    if (static_cast<int64_t>(out.tokens.size()) >= max_length) {
      out.finished = false;
      break;
    }
    if (read < n) read_one();
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
  int64_t read = std::min<int64_t>(n, 1);
  auto state = start_prefix(model, source, read);
  auto as_tensor = [&](int64_t token) { return torch::full({1}, token, torch::dtype(torch::kLong).device(model.device())); };
  int64_t prev = model.bos_id();
  while (true) {
    const auto r = model.step(as_tensor(prev), *state, /*want_attention=*/true);
    int64_t token = r.logits.reshape({-1}).argmax().item<int64_t>();
    if (r.vocabulary.defined()) token = r.vocabulary[token].item<int64_t>();
    const bool complete = read == n;
    const int64_t stop = stop_position(r.attention);
    if (!complete && (stop < 0 || stop > read - 1 - options.lookahead || token == model.eos_id())) {
      ++read;  // READ, then decode this step again from the longer prefix
      state = start_prefix(model, source, read);
      prev = model.bos_id();
      for (int64_t y : out.tokens) {
        model.step(as_tensor(prev), *state, /*want_attention=*/false);
        prev = y;
      }
      continue;
    }
    if (token == model.eos_id()) break;  // WRITE the end: done
    out.tokens.push_back(token);          // WRITE
    out.delays.push_back(read);
    prev = token;
    if (static_cast<int64_t>(out.tokens.size()) >= max_length) {
      out.finished = false;
      break;
    }
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
