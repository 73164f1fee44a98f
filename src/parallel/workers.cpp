#include "parallel/workers.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

namespace attnmt {

void run_workers(int workers, int threads_each, const std::function<void(int)>& fn) {
  if (workers <= 1) {
    fn(0);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  auto run = [&](int w) {
    try {
      at::set_num_threads(std::max(1, threads_each));
      fn(w);
    } catch (...) {
      errors[static_cast<size_t>(w)] = std::current_exception();
    }
  };
  const int outer = at::get_num_threads();
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(run, w);
  run(0);
  for (auto& t : threads) t.join();
  at::set_num_threads(outer);
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

int resolve_workers(int requested, bool cpu) {
  if (requested > 0) return requested;
  return cpu ? at::get_num_threads() : 1;
}

}  // namespace attnmt
