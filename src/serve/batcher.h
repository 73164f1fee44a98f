// Dynamic batching for `attnmt serve`: the sentences of concurrent requests are gathered into one
// search batch per model and decoding options (up to max_batch_sentences, or what arrived within
// max_wait_ms of the oldest waiting sentence; no waiting while nothing suggests that more will
// come), decoded by translate_lines (which sorts them by length), and each request gets its own
// results back in its own order. Workers decode batches side by side. A batch takes one
// sentence from each waiting request in turn, so a request of 500 sentences is split and
// interleaved with the single sentences that arrive behind it instead of holding them up. The
// queue is bounded (submit refuses beyond max_queue_sentences); a request whose client gave up
// (Pending::cancel) has its sentences dropped from the queue (counted in the metrics).
// Continuous batching (BatcherLimits::continuous, --batching continuous): where the model and
// options allow (decoding/running_search.h), a worker keeps one running search per lane; between
// two decoder steps, once half its batch is free (or it is empty), it takes the lane's waiting
// sentences into it (up to max_batch_sentences running, sharing what waits with idle workers),
// and answers each sentence as soon as it finishes. It stops taking
// new ones when another lane has waited longer, and goes to that lane once its search is empty.
// A batch that fails is decoded again one sentence at a time, so that a sentence that cannot be
// decoded fails its own request only and the others of its batch are answered.
// A request may watch its sentences' output as it is decided (SentenceWatch): told at every search
// step, it may stop its sentence's search, which then leaves its batch at once (the worker is
// free sooner; metrics count it).
// The tests' engine can make a batch fail on purpose (serve/batch_fault.h); attnmt's programs cannot.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "decoding/translator.h"
#include "serve/metrics.h"
#include "serve/serve_options.h"

namespace attnmt {

// A model the server decodes with: its step model (shared by the batch workers) and defaults.
struct ServedModel {
  std::string name, path;
  StepModel* step = nullptr;
  const Tokenizers* tokenizers = nullptr;
  TranslateOptions defaults;  // the model's decode.* with the server's settings
  std::string attention;      // model.attention.type, for the page and GET /v1/models
  bool streams = false;       // its attention can decode as a stream (POST /v1/stream)
  // The policy SimulEval's protocol streams it with (serve/simul_agent.h): wait-k where > 0 (the
  // model's decode.wait_k, else its train.wait_k), else the hard head's (where `streams`).
  int wait_k = 0;
  WaitKPolicy wait_k_policy = WaitKPolicy::replay;
};

// What a request may choose per call; sentences are batched only with others of the same.
struct RequestOptions {
  int beam_size = 5;
  int n_best = 1;
  bool attention = false;
  bool operator==(const RequestOptions& o) const {
    return beam_size == o.beam_size && n_best == o.n_best && attention == o.attention;
  }
};

// Told, at each search step of the request's sentence `sentence`, the target tokens decided so
// far (search_types.h's DecidedWatch); false stops that sentence's search (its client is gone).
// Called on a batch worker's thread.
using SentenceWatch = std::function<bool(size_t sentence, const std::vector<int64_t>& decided)>;

// What a request that streams is told while its sentences decode, on a batch worker's thread.
struct Watcher {
  SentenceWatch decided;       // at each search step
  std::function<void()> done;  // once every sentence has its results (or its error)
};

// One request's sentences on their way through the queue.
class Pending {
 public:
  explicit Pending(size_t sentences) : results_(sentences), remaining_(sentences) {}
  // Waits for every sentence until `deadline`; false when it passed first.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  void cancel();  // the client is gone or timed out: drop what is still queued
  bool cancelled() const;
  const std::vector<std::vector<Translation>>& results() const { return results_; }
  const std::string& error() const { return error_; }  // non-empty if decoding failed
  bool input_error() const { return input_error_; }     // the failure was the input's (an InputError)

 private:
  friend class Batcher;
  mutable std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::vector<Translation>> results_;
  size_t remaining_;
  bool cancelled_ = false;
  std::string error_;
  bool input_error_ = false;
  Watcher watcher_;  // set once, by submit
};

class Batcher {
 public:
  Batcher(BatcherLimits limits, ServerMetrics* metrics);
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues the sentences; null when the queue has no room for them (or the batcher is stopping).
  // `watcher` (if set) is told of each sentence's output as it is decided (greedy or beam search
  // under attnmt's rules, no sampling or MBR: the caller checks the model's), and of the end.
  std::shared_ptr<Pending> submit(const ServedModel& model, const RequestOptions& options,
                                  std::vector<std::string> sentences, Watcher watcher = {});
  // Refuses new submissions, decodes everything queued, then joins the workers.
  void stop();
  size_t queued() const;
  int workers() const { return worker_count_; }

 private:
  struct Entry {  // a request's sentences not yet taken into a batch
    std::shared_ptr<Pending> pending;
    std::vector<std::string> sentences;
    size_t next = 0;
    std::chrono::steady_clock::time_point arrived;
  };
  struct Lane {  // one model and RequestOptions
    const ServedModel* model;
    RequestOptions options;
    std::deque<Entry> entries;
    size_t sentences = 0;
    bool continuous = false;  // decoded by a running search (BatcherLimits::continuous, where it can)
  };
  struct Item {
    std::shared_ptr<Pending> pending;
    size_t index;
  };

  void work();
  // Takes up to `cap` sentences from the lane, one from each waiting request in turn (mutex_ held).
  void take(Lane& lane, size_t cap, std::vector<Item>& items, std::vector<std::string>& lines);
  // How many sentences a worker takes now: at most `room`, and its share of what waits with the
  // idle workers and itself (busy: it is counted in busy_ already) (mutex_ held).
  size_t share(const Lane& lane, size_t room, bool busy) const;
  Lane* oldest_lane();  // the lane whose first entry arrived first; null if all are empty
  void drop_cancelled(Lane& lane);
  // Decodes one batch; on failure, each sentence alone. Per sentence: its n-best, or an error.
  struct Outcome {
    std::vector<Translation> n_best;
    std::string error;
    bool input_error = false;
  };
  // watches: empty, or one per line (empty functions watch nothing).
  std::vector<Outcome> decode(const ServedModel& model, const RequestOptions& options, std::vector<std::string> lines,
                              const std::vector<DecidedWatch>& watches);
  // Decodes the lane by a running search from `items` on, taking its new sentences between steps,
  // until nothing of it runs (decoding/running_search.h). Called with busy_ counted.
  void run_continuous(Lane& lane, std::vector<Item> items, std::vector<std::string> lines);
  // Hands a sentence's outcome to its request (and wakes it when it has all of them).
  void answer(const Item& item, Outcome outcome);
  // The model's options with the lane's.
  static TranslateOptions lane_options(const ServedModel& model, const RequestOptions& options);
  // Per item of a batch: its request's watch of its sentence, counted in the metrics and
  // recording in stopped[i] whether it stopped the search. Empty when no item is watched.
  std::vector<DecidedWatch> watches_of(const std::vector<Item>& items, std::vector<char>& stopped);

  BatcherLimits limits_;
  ServerMetrics* metrics_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  size_t queued_ = 0;
  int worker_count_ = 1;
  int busy_ = 0;                    // workers decoding a batch
  double requests_per_batch_ = 1;   // moving average over recent batches
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace attnmt
