#include "runtime/workers.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include "util/fork_join.h"

namespace attnmt {

void run_workers(int workers, int threads_each, const std::function<void(int)>& fn) {
  if (workers <= 1) {
    fn(0);
    return;
  }
  const int outer = at::get_num_threads();
  try {
    fork_join(static_cast<size_t>(workers), [&](size_t w) {
      at::set_num_threads(std::max(1, threads_each));
      fn(static_cast<int>(w));
    });
  } catch (...) {
    at::set_num_threads(outer);
    throw;
  }
  at::set_num_threads(outer);
}

int resolve_workers(int requested, bool cpu) {
  if (requested > 0) return requested;
  return cpu ? at::get_num_threads() : 1;
}

}  // namespace attnmt
