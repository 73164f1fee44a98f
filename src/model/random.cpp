#include "model/random.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <mutex>

namespace attnmt {

namespace {
thread_local c10::optional<at::Generator> current;
}  // namespace

RandomStreamScope::RandomStreamScope(uint64_t seed) : previous_(current) {
  current = at::detail::createCPUGenerator(seed);
}

RandomStreamScope::~RandomStreamScope() { current = previous_; }

c10::optional<at::Generator> random_stream() { return current; }

namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// SplitMix64's output function (Steele, Lea & Flood, 2014): applied to a Weyl sequence
// seed + i * golden it is the SplitMix64 generator, which passes BigCrush.
inline uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t draw_seed(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
}

}  // namespace

torch::Tensor stream_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  if (!x.device().is_cpu() || p >= 1) {
    return torch::nn::functional::dropout(x, torch::nn::functional::DropoutFuncOptions().p(p).training(true));
  }
  // ATen's CPU bernoulli_ draws one mt19937 number per element, serially: 52 ns an element here,
  // ~20% of a training step. One draw from the stream seeds the whole mask instead, and element i
  // is kept when the high 32 bits of splitmix64(seed + (i + 1) * golden) reach p * 2^32.
  const uint64_t seed = draw_seed(current ? *current : at::detail::getDefaultCPUGenerator());
  const auto threshold = static_cast<uint64_t>(p * 4294967296.0);
  auto mask = at::empty(x.sizes(), x.options());
  const int64_t n = mask.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "stream_dropout", [&] {
    scalar_t* m = mask.data_ptr<scalar_t>();
    const auto scale = static_cast<scalar_t>(1.0 / (1.0 - p));
    const auto zero = static_cast<scalar_t>(0);
    at::parallel_for(0, n, 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const uint64_t u = splitmix64(seed + static_cast<uint64_t>(i + 1) * kGolden) >> 32;
        m[i] = u >= threshold ? scale : zero;
      }
    });
  });
  return x * mask;
}

}  // namespace attnmt
