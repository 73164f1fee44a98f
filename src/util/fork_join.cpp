#include "util/fork_join.h"

#include <exception>
#include <thread>
#include <vector>

namespace attnmt {

void fork_join(size_t count, const std::function<void(size_t)>& fn) {
  if (count <= 1) {
    fn(0);
    return;
  }
  std::vector<std::exception_ptr> errors(count);
  auto run = [&](size_t i) {
    try {
      fn(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(count - 1);
  for (size_t i = 1; i < count; ++i) threads.emplace_back(run, i);
  run(0);
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace attnmt
