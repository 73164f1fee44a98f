// The server's counters for GET /metrics, in Prometheus' text format (version 0.0.4): requests by
// endpoint and status, requests accepted and answered (equal once the server is idle: a request
// counted in is answered, even under SIGTERM), requests whose client went away before its answer
// and the sentences dropped from the queue for them, sentences translated, streamed sentences
// being decoded and those stopped because their client left, the queue's depth, and histograms of the batch sizes
// the batcher formed and of request latency. Thread-safe; no LibTorch.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace attnmt {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending (+Inf is added)
  void observe(double value);
  // The _bucket / _sum / _count lines of metric `name`.
  std::string text(const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), the last one +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void accepted();  // a request reached its endpoint's handler
  void request(const std::string& endpoint, int status, double seconds);  // ... and was answered
  void abandoned();         // its client went away (or it timed out) before the answer
  void dropped(size_t n);   // sentences of such a request taken off the queue undecoded
  // A search batch and the sentences it decoded (continuous batching: a running search, from its
  // first sentence until none is left, and every sentence that joined it).
  void batch(size_t sentences);
  // Continuous batching: one decoder step of a running search over `sentences` sentences.
  void step(size_t sentences);
  void sentences(size_t n);
  void queue_depth(size_t n);
  // A streamed sentence (words as they are decided) entered a search batch, and left it: finished,
  // or stopped because its client went away.
  void stream_started();
  void stream_ended(bool client_gone);
  std::string text() const;  // the whole exposition
  uint64_t accepted_count() const;
  uint64_t answered_count() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t accepted_ = 0, answered_ = 0, abandoned_ = 0, dropped_ = 0;
  uint64_t sentences_ = 0;
  uint64_t batches_ = 0;
  uint64_t steps_ = 0, step_sentences_ = 0;
  size_t queue_depth_ = 0;
  uint64_t streams_started_ = 0, streams_ended_ = 0, streams_stopped_ = 0;
  Histogram batch_sizes_;
  Histogram latency_;
};

}  // namespace attnmt
