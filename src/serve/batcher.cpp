#include "serve/batcher.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <unordered_set>

#include "runtime/workers.h"
#include "serve/batch_fault.h"
#include "util/error.h"
#include "util/logging.h"

namespace attnmt {

BatchFault batch_fault_for_tests = nullptr;
StreamStep stream_step_for_tests = nullptr;

bool Pending::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  return done_.wait_until(lock, deadline, [&] { return remaining_ == 0; });
}

void Pending::cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
}

bool Pending::cancelled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cancelled_;
}

Batcher::Batcher(BatcherLimits limits, ServerMetrics* metrics) : limits_(limits), metrics_(metrics) {
  limits_.max_batch_sentences = batch_sentences(limits_);
  if (batch_fault_for_tests != nullptr) spdlog::warn("[serve] a test hook may fail batches (serve/batch_fault.h)");
  if (stream_step_for_tests != nullptr) spdlog::warn("[serve] a test hook slows streamed sentences (serve/batch_fault.h)");
  // As translate does it: on a CPU, batches side by side, each on its share of the threads, beat
  // one batch spread over all of them (a decoder step is many small operations).
  const int threads = at::get_num_threads();
  worker_count_ = resolve_workers(limits_.workers, limits_.cpu);
  const int threads_each = std::max(1, threads / worker_count_);
  for (int i = 0; i < worker_count_; ++i) {
    workers_.emplace_back([this, threads_each] {
      at::set_num_threads(threads_each);
      work();
    });
  }
}

Batcher::~Batcher() { stop(); }

std::shared_ptr<Pending> Batcher::submit(const ServedModel& model, const RequestOptions& options,
                                         std::vector<std::string> sentences, Watcher watcher) {
  auto pending = std::make_shared<Pending>(sentences.size());
  pending->watcher_ = std::move(watcher);
  if (sentences.empty()) return pending;
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || queued_ + sentences.size() > limits_.max_queue_sentences) return nullptr;
  Lane* lane = nullptr;
  for (auto& l : lanes_) {
    if (l->model == &model && l->options == options) lane = l.get();
  }
  if (!lane) {
    lanes_.push_back(std::make_unique<Lane>(Lane{&model, options, {}, 0}));
    lane = lanes_.back().get();
  }
  queued_ += sentences.size();
  lane->sentences += sentences.size();
  lane->entries.push_back({pending, std::move(sentences), 0, std::chrono::steady_clock::now()});
  if (metrics_) metrics_->queue_depth(queued_);
  changed_.notify_all();
  return pending;
}

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
}

size_t Batcher::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_;
}

Batcher::Lane* Batcher::oldest_lane() {
  Lane* best = nullptr;
  for (auto& l : lanes_) {
    if (l->entries.empty()) continue;
    if (!best || l->entries.front().arrived < best->entries.front().arrived) best = l.get();
  }
  return best;
}

void Batcher::drop_cancelled(Lane& lane) {
  for (auto it = lane.entries.begin(); it != lane.entries.end();) {
    if (it->pending->cancelled()) {
      const size_t left = it->sentences.size() - it->next;
      lane.sentences -= left;
      queued_ -= left;
      if (metrics_) metrics_->dropped(left);
      it = lane.entries.erase(it);
    } else {
      ++it;
    }
  }
}

void Batcher::work() {
  for (;;) {
    std::vector<Item> items;
    std::vector<std::string> lines;
    const ServedModel* model = nullptr;
    RequestOptions options;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || queued_ > 0; });
      for (auto& l : lanes_) drop_cancelled(*l);
      if (metrics_) metrics_->queue_depth(queued_);
      Lane* lane = oldest_lane();
      if (!lane) {
        if (stopping_) return;
        continue;
      }
      // Wait for more sentences of this lane until the batch is full or the oldest has waited
      // max_wait_ms, but only when more are likely to come: another batch is being decoded (its
      // clients answer with new requests), or recent batches gathered several requests. A lone
      // client's request goes at once. Not when stopping: everything queued goes out then.
      if (busy_ > 0 || requests_per_batch_ >= 1.5) {
        const auto deadline = lane->entries.front().arrived + std::chrono::milliseconds(limits_.max_wait_ms);
        changed_.wait_until(lock, deadline,
                            [&] { return stopping_ || lane->sentences >= limits_.max_batch_sentences; });
      }
      drop_cancelled(*lane);
      if (lane->entries.empty()) continue;
      // What is queued is shared with the idle workers (this one included), so that a few
      // clients' sentences are decoded side by side rather than in one batch while a worker idles.
      const size_t idle = static_cast<size_t>(worker_count_ - busy_);
      const size_t cap = std::min(limits_.max_batch_sentences, (lane->sentences + idle - 1) / std::max<size_t>(idle, 1));
      // One sentence from each waiting request in turn.
      while (items.size() < cap && !lane->entries.empty()) {
        for (auto it = lane->entries.begin(); it != lane->entries.end() && items.size() < cap;) {
          items.push_back({it->pending, it->next});
          lines.push_back(std::move(it->sentences[it->next]));
          ++it->next;
          if (it->next == it->sentences.size()) {
            it = lane->entries.erase(it);
          } else {
            ++it;
          }
        }
      }
      lane->sentences -= items.size();
      queued_ -= items.size();
      std::unordered_set<const Pending*> requests;
      for (const auto& item : items) requests.insert(item.pending.get());
      requests_per_batch_ = 0.7 * requests_per_batch_ + 0.3 * static_cast<double>(requests.size());
      ++busy_;
      if (queued_ > 0) changed_.notify_all();  // what is left is for the next idle worker
      model = lane->model;
      options = lane->options;
      if (metrics_) metrics_->queue_depth(queued_);
    }
    if (metrics_) metrics_->batch(items.size());
    std::vector<char> stopped(items.size(), 0);
    const auto watches = watches_of(items, stopped);
    auto outcomes = decode(*model, options, std::move(lines), watches);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
    // Counted before the requests are answered, so that /metrics read after an answer includes it.
    size_t translated = 0;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      translated += outcomes[i].error.empty() && !stopped[i] ? 1 : 0;
      if (metrics_ && !watches.empty() && watches[i] && !stopped[i]) metrics_->stream_ended(/*client_gone=*/false);
    }
    if (metrics_) metrics_->sentences(translated);
    for (size_t i = 0; i < items.size(); ++i) {
      auto& p = *items[i].pending;
      std::lock_guard<std::mutex> lock(p.mutex_);
      if (outcomes[i].error.empty()) {
        p.results_[items[i].index] = std::move(outcomes[i].n_best);
      } else if (p.error_.empty()) {
        p.error_ = outcomes[i].error;
        p.input_error_ = outcomes[i].input_error;
      }
      if (--p.remaining_ == 0) {
        p.done_.notify_all();
        if (p.watcher_.done) p.watcher_.done();
      }
    }
  }
}

std::vector<DecidedWatch> Batcher::watches_of(const std::vector<Item>& items, std::vector<char>& stopped) {
  std::vector<DecidedWatch> watches(items.size());
  bool any = false;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& watch = items[i].pending->watcher_.decided;
    if (!watch) continue;
    any = true;
    if (metrics_) metrics_->stream_started();
    watches[i] = [this, &watch, &stopped, i, sentence = items[i].index](const std::vector<int64_t>& decided) {
      if (stopped[i]) return false;  // a batch decoded again sentence by sentence: stopped already
      if (stream_step_for_tests != nullptr) stream_step_for_tests();
      if (watch(sentence, decided)) return true;
      stopped[i] = 1;
      if (metrics_) metrics_->stream_ended(/*client_gone=*/true);  // it leaves its batch now
      return false;
    };
  }
  if (!any) watches.clear();
  return watches;
}

std::vector<Batcher::Outcome> Batcher::decode(const ServedModel& model, const RequestOptions& options,
                                              std::vector<std::string> lines,
                                              const std::vector<DecidedWatch>& watches) {
  TranslateOptions t = model.defaults;
  t.search.beam_size = options.beam_size;
  t.search.n_best = options.n_best;
  t.search.return_attention = options.attention;
  t.workers = 1;
  t.progress_label.clear();
  auto run = [&](const std::vector<std::string>& batch, LineGuides guides) {
    if (batch_fault_for_tests != nullptr) batch_fault_for_tests(batch);
    t.batch_size = static_cast<int>(batch.size());
    return translate_lines(*model.step, *model.tokenizers, batch, t, guides);
  };
  std::vector<Outcome> out(lines.size());
  try {
    LineGuides guides;
    guides.watches = watches;
    auto results = run(lines, guides);
    for (size_t i = 0; i < lines.size(); ++i) out[i].n_best = std::move(results[i]);
    return out;
  } catch (const std::exception& e) {
    if (lines.size() == 1) {
      out[0].error = e.what();
      out[0].input_error = dynamic_cast<const InputError*>(&e) != nullptr;
      spdlog::error("[serve] a sentence failed: {}", out[0].error);
      return out;
    }
    spdlog::warn("[serve] a batch of {} sentences failed ({}): decoding them one at a time", lines.size(), e.what());
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    try {
      LineGuides guides;
      if (!watches.empty()) guides.watches = {watches[i]};
      out[i].n_best = std::move(run({lines[i]}, guides)[0]);
    } catch (const std::exception& e) {
      out[i].error = e.what();
      out[i].input_error = dynamic_cast<const InputError*>(&e) != nullptr;
      spdlog::error("[serve] sentence {} of a batch of {} failed: {}", i, lines.size(), out[i].error);
    }
  }
  return out;
}

}  // namespace attnmt
