#include "serve/batcher.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "decoding/running_search.h"
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
    if (limits_.continuous) {
      const auto t = lane_options(model, options);
      auto why = RunningSearch::refusal(*model.step, t.search);
      if (why.empty() && t.mbr != MbrMetric::none) why = "decode.mbr: MBR reranks a whole beam's hypotheses";
      lane->continuous = why.empty();
      if (!why.empty()) {
        spdlog::info("[serve] model '{}' (beam {}, n-best {}): static batches: {}", model.name, options.beam_size,
                     options.n_best, why);
      }
    }
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
    Lane* continuous = nullptr;
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
      // client's request goes at once. Not when stopping: everything queued goes out then. Not for
      // a running search, which others join at any step.
      if (!lane->continuous && (busy_ > 0 || requests_per_batch_ >= 1.5)) {
        const auto deadline = lane->entries.front().arrived + std::chrono::milliseconds(limits_.max_wait_ms);
        changed_.wait_until(lock, deadline,
                            [&] { return stopping_ || lane->sentences >= limits_.max_batch_sentences; });
      }
      drop_cancelled(*lane);
      if (lane->entries.empty()) continue;
      take(*lane, share(*lane, limits_.max_batch_sentences, /*busy=*/false), items, lines);
      std::unordered_set<const Pending*> requests;
      for (const auto& item : items) requests.insert(item.pending.get());
      requests_per_batch_ = 0.7 * requests_per_batch_ + 0.3 * static_cast<double>(requests.size());
      ++busy_;
      if (queued_ > 0) changed_.notify_all();  // what is left is for the next idle worker
      model = lane->model;
      options = lane->options;
      if (metrics_) metrics_->queue_depth(queued_);
      continuous = lane->continuous ? lane : nullptr;
    }
    if (continuous) {
      run_continuous(*continuous, std::move(items), std::move(lines));
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
      continue;
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
    for (size_t i = 0; i < items.size(); ++i) answer(items[i], std::move(outcomes[i]));
  }
}

void Batcher::answer(const Item& item, Outcome outcome) {
  auto& p = *item.pending;
  std::lock_guard<std::mutex> lock(p.mutex_);
  if (outcome.error.empty()) {
    p.results_[item.index] = std::move(outcome.n_best);
  } else if (p.error_.empty()) {
    p.error_ = outcome.error;
    p.input_error_ = outcome.input_error;
  }
  if (--p.remaining_ == 0) {
    p.done_.notify_all();
    if (p.watcher_.done) p.watcher_.done();
  }
}

size_t Batcher::share(const Lane& lane, size_t room, bool busy) const {
  // What is queued is shared with the idle workers (this one included), so that a few clients'
  // sentences are decoded side by side rather than in one batch while a worker idles.
  const size_t takers = static_cast<size_t>(std::max(worker_count_ - busy_, 0)) + (busy ? 1 : 0);
  return std::min(room, (lane.sentences + std::max<size_t>(takers, 1) - 1) / std::max<size_t>(takers, 1));
}

void Batcher::take(Lane& lane, size_t cap, std::vector<Item>& items, std::vector<std::string>& lines) {
  const size_t before = items.size();
  cap += before;
  // One sentence from each waiting request in turn.
  while (items.size() < cap && !lane.entries.empty()) {
    for (auto it = lane.entries.begin(); it != lane.entries.end() && items.size() < cap;) {
      items.push_back({it->pending, it->next});
      lines.push_back(std::move(it->sentences[it->next]));
      ++it->next;
      if (it->next == it->sentences.size()) {
        it = lane.entries.erase(it);
      } else {
        ++it;
      }
    }
  }
  lane.sentences -= items.size() - before;
  queued_ -= items.size() - before;
}

TranslateOptions Batcher::lane_options(const ServedModel& model, const RequestOptions& options) {
  TranslateOptions t = model.defaults;
  t.search.beam_size = options.beam_size;
  t.search.n_best = options.n_best;
  t.search.return_attention = options.attention;
  t.workers = 1;
  t.progress_label.clear();
  return t;
}

void Batcher::run_continuous(Lane& lane, std::vector<Item> items, std::vector<std::string> lines) {
  torch::InferenceMode inference;
  const ServedModel& model = *lane.model;
  const TranslateOptions t = lane_options(model, lane.options);
  RunningSearch search(*model.step, t.search);
  struct Running {
    Item item;
    std::string line;
    std::vector<int> source;
    std::shared_ptr<char> stopped;  // its watch stopped it (set by the watch, on this thread)
    bool watched = false;
  };
  std::unordered_map<uint64_t, Running> running;
  size_t sentences = 0;  // taken into this running search, for the batch metrics
  auto finish = [&](const Running& r, Outcome outcome) {
    const bool stopped = r.stopped && *r.stopped;
    if (metrics_) {
      metrics_->sentences(outcome.error.empty() && !stopped ? 1 : 0);
      if (r.watched && !stopped) metrics_->stream_ended(/*client_gone=*/false);
    }
    answer(r.item, std::move(outcome));
  };
  // Encodes the sentences and merges them into the running search; a blank line is answered at
  // once (as translate writes it), a group that fails to start is started again one by one so that
  // a sentence that cannot be decoded fails alone.
  auto admit = [&](std::vector<Item> new_items, std::vector<std::string> new_lines) {
    sentences += new_items.size();
    std::vector<Running> group;
    for (size_t i = 0; i < new_items.size(); ++i) {
      Running r{new_items[i], std::move(new_lines[i]), {}, nullptr, false};
      r.watched = static_cast<bool>(r.item.pending->watcher_.decided);
      group.push_back(std::move(r));
    }
    auto start = [&](std::vector<Running>& part) {
      std::vector<std::string> text;
      for (const auto& r : part) text.push_back(r.line);
      if (batch_fault_for_tests != nullptr) batch_fault_for_tests(text);
      const auto encoded = encode_sources(*model.tokenizers->src, text, t.max_source_tokens);
      std::vector<const std::vector<int>*> sources;
      Guides guides;
      std::vector<size_t> decoded;
      for (size_t i = 0; i < part.size(); ++i) {
        part[i].source = encoded[i];
        if (encoded[i].empty()) continue;
        decoded.push_back(i);
        sources.push_back(&part[i].source);
        SentenceGuide g;
        if (part[i].watched) {
          part[i].stopped = std::make_shared<char>(0);
          g.watch = [this, &watch = part[i].item.pending->watcher_.decided, stopped = part[i].stopped,
                     sentence = part[i].item.index](const std::vector<int64_t>& decided) {
            if (stream_step_for_tests != nullptr) stream_step_for_tests();
            if (watch(sentence, decided)) return true;
            *stopped = 1;
            if (metrics_) metrics_->stream_ended(/*client_gone=*/true);  // it leaves its batch now
            return false;
          };
        }
        guides.push_back(std::move(g));
      }
      std::vector<uint64_t> tickets;
      if (!sources.empty()) {
        auto [src, lengths] = source_batch(sources);
        tickets = search.add(src.to(model.step->device()), lengths.to(model.step->device()), std::move(guides));
      }
      for (size_t i = 0, k = 0; i < part.size(); ++i) {
        if (k < decoded.size() && decoded[k] == i) {
          if (metrics_ && part[i].watched) metrics_->stream_started();  // counted once it runs
          running.emplace(tickets[k++], std::move(part[i]));
        } else {
          Outcome blank;
          blank.n_best.emplace_back();
          finish(part[i], std::move(blank));
        }
      }
    };
    auto fail = [&](const Running& r, const std::exception& e) {
      Outcome failed;
      failed.error = e.what();
      failed.input_error = dynamic_cast<const InputError*>(&e) != nullptr;
      spdlog::error("[serve] a sentence failed: {}", failed.error);
      finish(r, std::move(failed));
    };
    try {
      start(group);
      return;
    } catch (const std::exception& e) {
      if (group.size() == 1) return fail(group[0], e);
      spdlog::warn("[serve] a batch of {} sentences failed to start ({}): decoding them one at a time", group.size(),
                   e.what());
    }
    for (auto& r : group) {
      std::vector<Running> one;
      one.push_back(std::move(r));
      try {
        start(one);
      } catch (const std::exception& e) {
        fail(one[0], e);
      }
    }
  };
  // The batch is counted once it has ended (nothing running, nothing joining) and before its last
  // sentences are answered, so that /metrics read after an answer includes it, as under static.
  bool counted = false;
  auto count_batch = [&] {
    if (metrics_ && !counted) metrics_->batch(sentences);
    counted = true;
  };
  admit(std::move(items), std::move(lines));
  while (!search.empty()) {
    std::vector<RunningSearch::Done> done;
    if (metrics_) metrics_->step(search.sentences());
    try {
      done = search.step();
    } catch (const std::exception& e) {
      // The running batch's state is lost: its sentences are decoded again, each alone.
      spdlog::warn("[serve] a running batch of {} sentences failed ({}): decoding them one at a time", running.size(),
                   e.what());
      count_batch();
      for (auto& [ticket, r] : running) {
        std::vector<DecidedWatch> watch;
        auto outcome = std::move(decode(model, lane.options, {r.line}, watch)[0]);
        finish(r, std::move(outcome));
      }
      break;
    }
    // Between two steps: the lane's waiting sentences join, while this lane is the one that has
    // waited longest (else the search drains and the worker goes to the older lane). They join in
    // groups: the encoder costs nearly as much for one sentence as for several (its weights are
    // read once per step whatever the batch; docs/serving.md has the figures), so they wait until
    // half the batch is free or the search has emptied.
    std::vector<Item> more;
    std::vector<std::string> more_lines;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      drop_cancelled(lane);
      const size_t room = limits_.max_batch_sentences - std::min(limits_.max_batch_sentences, search.sentences());
      const bool group = search.empty() || 2 * room >= limits_.max_batch_sentences;
      if (room > 0 && group && lane.sentences > 0 && oldest_lane() == &lane) {
        take(lane, share(lane, room, /*busy=*/true), more, more_lines);
        if (metrics_) metrics_->queue_depth(queued_);
        if (queued_ > 0) changed_.notify_all();
      }
    }
    if (search.empty() && more.empty()) count_batch();
    for (auto& d : done) {
      auto it = running.find(d.ticket);
      Outcome outcome;
      if (!d.stopped) outcome.n_best = to_translations(d.n_best, it->second.source, *model.tokenizers, t);
      if (outcome.n_best.empty()) outcome.n_best.emplace_back();
      finish(it->second, std::move(outcome));
      running.erase(it);
    }
    if (!more.empty()) admit(std::move(more), std::move(more_lines));
  }
  count_batch();
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
  TranslateOptions t = lane_options(model, options);
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
