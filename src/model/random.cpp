#include "model/random.h"

#include <ATen/CPUGeneratorImpl.h>

namespace attnmt {

namespace {
thread_local c10::optional<at::Generator> current;
}  // namespace

RandomStreamScope::RandomStreamScope(uint64_t seed) : previous_(current) {
  current = at::detail::createCPUGenerator(seed);
}

RandomStreamScope::~RandomStreamScope() { current = previous_; }

c10::optional<at::Generator> random_stream() { return current; }

torch::Tensor stream_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  if (!current || !x.device().is_cpu()) {
    return torch::nn::functional::dropout(x, torch::nn::functional::DropoutFuncOptions().p(p).training(true));
  }
  auto mask = at::empty_like(x).bernoulli_(1 - p, current).div_(1 - p);
  return x * mask;
}

}  // namespace attnmt
