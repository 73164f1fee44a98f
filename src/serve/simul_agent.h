// SimulEval's remote protocol (facebookresearch/SimulEval, simuleval/evaluator/remote.py and
// simuleval/agents/service.py), so that `simuleval --remote-eval --remote-port PORT` drives an
// attnmt model as it drives any agent:
//   POST /reset    a new sentence (the evaluator sends it before each instance)
//   PUT  /input    the next source segment: a word, or an empty segment; "finished" on the last
//   GET  /output   the agent's decision: the target words written since the last call (a text
//                  segment), or an empty segment (it READs: send more source); "finished" once the
//                  translation is complete
// The evaluator sends one source word, asks for the output, and so on; after the last word it
// sends empty finished segments until the output is finished. It counts a target word's delay as
// the source words it had sent when the word came back.
//
// The agent is translate --streaming's policy (decoding/streaming.h, SentenceStream) on the
// served model: the hard-attention head, or wait-k (decode.wait_k, or the model's train.wait_k).
// A word's subwords are read one by one, each READ and WRITE decided as when the whole sentence is
// read from a file, so the translation equals translate --streaming's. A target word is sent once
// it is complete: when the next word has begun, or the translation has ended (a subword split
// across steps never shows half, and SimulEval splits what it receives at spaces). Its delay is
// therefore the source words sent when the word after it began, where translate --streaming's
// --simuleval-dir counts those read when its own last subword was written: the same or more
// (docs/attention.md).
//
// One sentence at a time, as SimulEval's own agent service: the protocol names no session, and a
// second evaluator's /reset starts its sentence over the first's. Calls out of order (input before
// a reset, input after the last word) are 409s naming what to send instead.
#pragma once
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/request.h"

namespace attnmt {

struct ServedModel;
class SentenceStream;

class SimulAgent {
 public:
  // `model` must outlive the agent. Why it cannot stream is said by the first call (400).
  explicit SimulAgent(const ServedModel& model);
  ~SimulAgent();
  SimulAgent(const SimulAgent&) = delete;
  SimulAgent& operator=(const SimulAgent&) = delete;

  void reset();
  void input(const SimulSegment& segment);  // HttpError 409 / 413 on a call out of order or too long
  nlohmann::json output();                  // simul_output_segment's
  // The policy, for the log: "wait-3 (prefix)", "the hard head, lookahead 0", or why none.
  const std::string& policy() const { return policy_; }

 private:
  const ServedModel& model_;
  std::string refusal_;  // why this model cannot stream ("" = it can)
  std::string policy_;
  std::mutex mutex_;
  std::unique_ptr<SentenceStream> stream_;  // null before the first reset
  std::string source_;                      // the words received, one space between them
  size_t pushed_ = 0;                       // source subwords given to the stream
  bool source_ended_ = false;
  size_t words_sent_ = 0;
  bool finished_sent_ = false;
};

}  // namespace attnmt
