// Words as they are decided, for POST /v1/translate with "stream": true: the batch worker decoding
// a streamed sentence hands its decided target tokens (serve/batcher.h's SentenceWatch) to a
// WordStream, which turns the words they complete into server-sent events (text/event-stream,
// https://html.spec.whatwg.org/multipage/server-sent-events.html) for the HTTP thread to write.
//
// A word is passed on once it is complete: when the decided text holds a space after it (the next
// word has begun), so that a subword split across steps ("Hun" + "d") never shows half. Events:
//   event: word   data: {"text": "..."}   the next piece of the translation (the first word, then
//                                         " word" with its leading space)
//   event: done   data: the non-streamed answer ({"model", "translations"})
//   event: error  data: {"error": "..."}  (a failure after the first word; before it the answer is
//                                          a plain 4xx/5xx)
// The word events' texts, concatenated, are the best translation's text, byte for byte: the last
// word event (before done) carries what the decided prefix had not yet covered. No LibTorch.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnmt {

class Tokenizer;

// One server-sent event: "event: NAME\ndata: JSON\n\n" (JSON on one line).
std::string sse_event(const std::string& name, const nlohmann::json& data);

// Of `decided` (the decided target text so far), the part that holds complete words: up to its
// last space (exclusive); "" when it holds none.
std::string complete_words(const std::string& decided);

class WordStream {
 public:
  explicit WordStream(const Tokenizer& target) : target_(target) {}

  // Worker thread: the sentence's decided tokens; queues a word event for the words they complete
  // beyond what was sent. False once the client is gone (the search then stops).
  bool decided(const std::vector<int64_t>& tokens);
  // Worker thread: the request has its results (or its error); wakes the HTTP thread.
  void end();
  // HTTP thread: waits until `until` for events or the end; true if either came.
  bool wait(std::chrono::steady_clock::time_point until);
  // HTTP thread: waits until `until` for events or the end; returns what is queued ("" if nothing).
  std::string take(std::chrono::steady_clock::time_point until);
  bool ended() const;
  // The client went away: every later decided() answers false.
  void close();
  // The last events, once the search is done: a word event with the rest of `text` (the best
  // translation) beyond the words sent, then done with `answer`. If the words sent are not a
  // prefix of `text` (never, by search's guarantee), an error event instead of the rest.
  std::string finish(const std::string& text, const nlohmann::json& answer);

 private:
  const Tokenizer& target_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string sent_text_;  // the words queued so far, concatenated
  std::string queued_;     // events not yet taken
  bool closed_ = false;
  bool ended_ = false;
};

}  // namespace attnmt
