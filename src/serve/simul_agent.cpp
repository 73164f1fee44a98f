#include "serve/simul_agent.h"

#include "align/words.h"
#include "attention/registry.h"
#include "decoding/streaming.h"
#include "serve/batcher.h"
#include "util/choices.h"
#include "util/error.h"

namespace attnmt {

namespace {

StreamingOptions simul_options(const ServedModel& model) {
  StreamingOptions o;
  o.search = model.defaults.search;
  o.max_source_tokens = model.defaults.max_source_tokens;
  o.wait_k = model.wait_k;
  o.wait_k_policy = model.wait_k_policy;
  o.workers = 1;
  return o;
}

}  // namespace

SimulAgent::SimulAgent(const ServedModel& model) : model_(model) {
  if (model.wait_k == 0 && !model.streams) {
    refusal_ = "model '" + model.name + "' cannot stream: its attention ('" + model.attention +
               "') does not stop hard (" + attention_names_with(&AttentionTraits::streams) +
               "; with hard_decode), and no wait-k is set (serve --set decode.wait_k=K: the wait-k policy, any model)";
    policy_ = "none: " + refusal_;
  } else if (model.wait_k > 0) {
    policy_ = "wait-" + std::to_string(model.wait_k) + " (" + name_string(model.wait_k_policy) + ")";
  } else {
    policy_ = "the hard-attention head, lookahead 0";
  }
}

SimulAgent::~SimulAgent() = default;

void SimulAgent::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!refusal_.empty()) throw HttpError{400, refusal_};
  try {
    stream_ = std::make_unique<SentenceStream>(*model_.step, simul_options(model_));
  } catch (const InputError& e) {
    throw HttpError{400, e.what()};
  }
  source_.clear();
  pushed_ = 0;
  source_ended_ = false;
  words_sent_ = 0;
  finished_sent_ = false;
}

void SimulAgent::input(const SimulSegment& segment) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!refusal_.empty()) throw HttpError{400, refusal_};
  if (!stream_) throw HttpError{409, "no sentence: POST /reset first"};
  const bool blank = split_words(segment.text).empty();
  if (source_ended_) {
    if (!blank) {
      throw HttpError{409, "the source has ended (a segment said finished): POST /reset for the next sentence"};
    }
    return;
  }
  if (!blank) {
    // The words so far as one line, encoded as translate encodes a line: SentencePiece's pieces
    // never cross a space, so the new word's pieces are what is added at the end.
    const std::string source = source_.empty() ? segment.text : source_ + " " + segment.text;
    const auto ids = model_.tokenizers->src->encode(source);
    if (ids.size() > static_cast<size_t>(model_.defaults.max_source_tokens)) {
      throw HttpError{413, "the source is longer than " + std::to_string(model_.defaults.max_source_tokens) +
                               " subwords (decode.max_source_tokens)"};
    }
    source_ = source;
    if (ids.size() > pushed_) {
      stream_->push(std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(pushed_), ids.end()));
      pushed_ = ids.size();
    }
  }
  if (segment.finished) {
    stream_->end_source();
    source_ended_ = true;
  }
}

nlohmann::json SimulAgent::output() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!refusal_.empty()) throw HttpError{400, refusal_};
  if (!stream_) throw HttpError{409, "no sentence: POST /reset first"};
  if (finished_sent_) return simul_output_segment("", true);
  stream_->run();
  const auto& tokens = stream_->output().tokens;
  const auto words = split_words(model_.tokenizers->tgt->decode(std::vector<int>(tokens.begin(), tokens.end())));
  const bool done = stream_->done();
  // Until the translation ends, its last word may go on in the next subword.
  const size_t complete = done ? words.size() : words.empty() ? 0 : words.size() - 1;
  std::string text;
  for (; words_sent_ < complete; ++words_sent_) text += (text.empty() ? "" : " ") + words[words_sent_];
  finished_sent_ = done;
  return simul_output_segment(text, done);
}

}  // namespace attnmt
