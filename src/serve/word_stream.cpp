#include "serve/word_stream.h"

#include "data/tokenizer.h"
#include "serve/request.h"

namespace attnmt {

std::string sse_event(const std::string& name, const nlohmann::json& data) {
  return "event: " + name + "\ndata: " + dump_json(data) + "\n\n";
}

std::string complete_words(const std::string& decided) {
  const auto space = decided.rfind(' ');
  return space == std::string::npos ? std::string() : decided.substr(0, space);
}

bool WordStream::decided(const std::vector<int64_t>& tokens) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return false;
  }
  // Decoded outside the lock: the HTTP thread may be taking events meanwhile.
  const std::string words = complete_words(target_.decode(std::vector<int>(tokens.begin(), tokens.end())));
  std::lock_guard<std::mutex> lock(mutex_);
  if (words.size() > sent_text_.size() && words.compare(0, sent_text_.size(), sent_text_) == 0) {
    queued_ += sse_event("word", {{"text", words.substr(sent_text_.size())}});
    sent_text_ = words;
    changed_.notify_all();
  }
  return !closed_;
}

void WordStream::end() {
  std::lock_guard<std::mutex> lock(mutex_);
  ended_ = true;
  changed_.notify_all();
}

bool WordStream::wait(std::chrono::steady_clock::time_point until) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_until(lock, until, [&] { return !queued_.empty() || ended_; });
}

std::string WordStream::take(std::chrono::steady_clock::time_point until) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, until, [&] { return !queued_.empty() || ended_; });
  std::string out;
  out.swap(queued_);
  return out;
}

bool WordStream::ended() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ended_;
}

void WordStream::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
}

std::string WordStream::finish(const std::string& text, const nlohmann::json& answer) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out.swap(queued_);
  if (text.compare(0, sent_text_.size(), sent_text_) != 0) {
    return out + sse_event("error", {{"error", "internal error: the words sent are not the translation's beginning"}});
  }
  if (text.size() > sent_text_.size()) out += sse_event("word", {{"text", text.substr(sent_text_.size())}});
  sent_text_ = text;
  return out + sse_event("done", answer);
}

}  // namespace attnmt
