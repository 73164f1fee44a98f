#include "data/examples.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <thread>

#include "util/fork_join.h"
#include "util/progress.h"

namespace attnmt {

Dataset encode_dataset(const ParallelText& text, const Tokenizers& tokenizers, int max_length, int threads) {
  // Contiguous slices of the lines, one per thread, joined in order: the same dataset as one
  // thread gives.
  const size_t n = text.src.size();
  const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::max<size_t>(1, std::min({threads > 0 ? static_cast<size_t>(threads) : hardware,
                                                       hardware, n / 1024 + 1}));
  std::vector<Dataset> parts(workers);
  std::atomic<size_t> done{0};
  auto encode_slice = [&](size_t w) {
    Dataset& d = parts[w];
    const size_t begin = n * w / workers, end = n * (w + 1) / workers;
    d.examples.reserve(end - begin);
    for (size_t i = begin; i < end; ++i) {
      if ((i - begin) % 1024 == 1023) done += 1024;
      Example ex;
      ex.src = tokenizers.src->encode(text.src[i]);
      ex.tgt = tokenizers.tgt->encode(text.tgt[i]);
      ex.line = i;
      if (ex.src.empty() || ex.tgt.empty()) {
        ++d.skipped_empty;
        continue;
      }
      if (max_length > 0 && (static_cast<int>(ex.src.size()) > max_length || static_cast<int>(ex.tgt.size()) > max_length)) {
        ++d.skipped_long;
        continue;
      }
      d.examples.push_back(std::move(ex));
    }
  };
  {
    Progress progress("[data] tokenizing", "lines", static_cast<int64_t>(n));
    std::thread watcher;
    std::atomic<bool> finished{false};
    if (progress.enabled()) {
      watcher = std::thread([&] {
        while (!finished) {
          progress.update(static_cast<int64_t>(done.load()));
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      });
    }
    auto stop_watcher = [&] {
      finished = true;
      if (watcher.joinable()) watcher.join();
    };
    try {
      fork_join(workers, encode_slice);
    } catch (...) {
      stop_watcher();
      throw;
    }
    stop_watcher();
    progress.update(static_cast<int64_t>(n));
  }
  Dataset d = std::move(parts[0]);
  for (size_t w = 1; w < workers; ++w) {
    d.examples.insert(d.examples.end(), std::make_move_iterator(parts[w].examples.begin()),
                      std::make_move_iterator(parts[w].examples.end()));
    d.skipped_empty += parts[w].skipped_empty;
    d.skipped_long += parts[w].skipped_long;
  }
  return d;
}

}  // namespace attnmt
