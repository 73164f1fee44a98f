#include "serve/metrics.h"

#include <cstdio>

namespace attnmt {
namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

std::string Histogram::text(const std::string& name) const {
  std::string out;
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum " + number(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
  return out;
}

ServerMetrics::ServerMetrics()
    : batch_sizes_({1, 2, 4, 8, 16, 32, 64, 128, 256}),
      latency_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}) {}

void ServerMetrics::accepted() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++accepted_;
}

void ServerMetrics::abandoned() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++abandoned_;
}

void ServerMetrics::dropped(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  dropped_ += n;
}

void ServerMetrics::request(const std::string& endpoint, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++answered_;
  ++requests_[{endpoint, status}];
  latency_.observe(seconds);
}

void ServerMetrics::batch(size_t sentences) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++batches_;
  batch_sizes_.observe(static_cast<double>(sentences));
}

void ServerMetrics::step(size_t sentences) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++steps_;
  step_sentences_ += sentences;
}

void ServerMetrics::sentences(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  sentences_ += n;
}

void ServerMetrics::queue_depth(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_depth_ = n;
}

void ServerMetrics::stream_started() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++streams_started_;
}

void ServerMetrics::stream_ended(bool client_gone) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++streams_ended_;
  if (client_gone) ++streams_stopped_;
}

uint64_t ServerMetrics::accepted_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return accepted_;
}

uint64_t ServerMetrics::answered_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return answered_;
}

namespace {
// A metric of one value: its HELP and TYPE lines, then the value.
template <typename Number>
void scalar(std::string& out, const char* name, const char* type, const char* help, Number value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
         std::to_string(value) + "\n";
}
}  // namespace

std::string ServerMetrics::text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out += "# HELP attnmt_requests_total HTTP requests answered, by endpoint and status.\n";
  out += "# TYPE attnmt_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    out += "attnmt_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  }
  scalar(out, "attnmt_requests_accepted_total", "counter", "Requests that reached an endpoint.", accepted_);
  scalar(out, "attnmt_requests_answered_total", "counter", "Requests answered (any status).", answered_);
  scalar(out, "attnmt_requests_abandoned_total", "counter",
         "Requests whose client left (or that timed out) unanswered.", abandoned_);
  scalar(out, "attnmt_sentences_dropped_total", "counter",
         "Queued sentences of abandoned requests, dropped undecoded.", dropped_);
  scalar(out, "attnmt_sentences_total", "counter", "Sentences translated.", sentences_);
  scalar(out, "attnmt_batches_total", "counter", "Search batches run.", batches_);
  scalar(out, "attnmt_running_steps_total", "counter",
         "Decoder steps of running searches (continuous batching).", steps_);
  scalar(out, "attnmt_running_step_sentences_total", "counter",
         "Sentences in those steps, summed (over the steps: the mean running batch).", step_sentences_);
  scalar(out, "attnmt_queue_sentences", "gauge", "Sentences waiting for a batch.", queue_depth_);
  scalar(out, "attnmt_streams_decoding", "gauge",
         "Streamed sentences in a running search batch.", streams_started_ - streams_ended_);
  scalar(out, "attnmt_streams_stopped_total", "counter",
         "Streamed sentences whose search stopped because the client left.", streams_stopped_);
  out += "# HELP attnmt_batch_sentences Sentences per search batch.\n# TYPE attnmt_batch_sentences histogram\n";
  out += batch_sizes_.text("attnmt_batch_sentences");
  out += "# HELP attnmt_request_seconds Request latency, receipt to answer.\n";
  out += "# TYPE attnmt_request_seconds histogram\n";
  out += latency_.text("attnmt_request_seconds");
  return out;
}

}  // namespace attnmt
