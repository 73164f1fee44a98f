// `attnmt serve`'s settings and their defaults, stated once: the server and the batcher read them,
// and `attnmt serve --help` prints its defaults from a default-made ServeOptions (cli/cmd_serve.cpp).
// Plain data, no LibTorch and no HTTP library, so that the CLI can include it in any build.
#pragma once
#include <cstddef>
#include <string>

#include "serve/access.h"

namespace attnmt {

struct BatcherLimits {
  // Sentences per search batch, from all requests; 0: the device's default
  // (default_batch_sentences).
  size_t max_batch_sentences = 0;
  int max_wait_ms = 10;  // how long the oldest waiting sentence waits for others to batch with
  size_t max_queue_sentences = 2048;
  int workers = 0;  // batches decoded at once, each on threads / workers intra-op threads (0 = one per thread on a CPU)
  bool cpu = true;  // the models' device (workers 0 means one on a GPU)
  // Sentences join a running search between its decoder steps and leave it when done (continuous
  // batching, decoding/running_search.h), where the model and options allow; false: every batch
  // is decoded whole before the next starts (static batching: the default, faster on a CPU so far,
  // docs/serving.md).
  bool continuous = false;
};

// The batch size where none is given: small batches of mixed lengths decode faster on a CPU (a
// batch lasts as long as its longest sentence), large ones keep a GPU busy.
inline constexpr size_t kCpuBatchSentences = 8, kGpuBatchSentences = 64;
inline size_t default_batch_sentences(bool cpu) { return cpu ? kCpuBatchSentences : kGpuBatchSentences; }
inline size_t batch_sentences(const BatcherLimits& limits) {
  return limits.max_batch_sentences > 0 ? limits.max_batch_sentences : default_batch_sentences(limits.cpu);
}

struct ServeOptions {
  std::string host = "127.0.0.1";  // this machine only
  int port = 5000;                 // 0: any free port (printed)
  BatcherLimits batching;
  size_t max_body_bytes = 1 << 20;
  size_t max_request_sentences = 1000;
  size_t max_sentence_bytes = 4096;
  int max_beam_size = 32;
  AccessOptions access;  // API key, CORS origin
  double request_timeout_s = 60;
  int http_threads = 160;  // connections served at once (each waits for its translations)
};

}  // namespace attnmt
