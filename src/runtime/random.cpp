#include "runtime/random.h"
#include "runtime/dropout_rows.h"

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

uint64_t draw_seed(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
}

// in * mask, the mask rebuilt from (seed, p) by runtime/dropout_rows.h; in is contiguous.
torch::Tensor apply_dropout_mask(const torch::Tensor& in, uint64_t seed, double p) {
  const auto threshold = static_cast<uint64_t>(p * 4294967296.0);
  auto out = at::empty(in.sizes(), in.options());
  const int64_t n = in.numel();
  constexpr int64_t kGrain = 1 << 15;
  if (in.scalar_type() == at::kFloat) {
    const float* x = in.data_ptr<float>();
    float* y = out.data_ptr<float>();
    const auto scale = static_cast<float>(1.0 / (1.0 - p));
    at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) { dropout_rows(x, y, b, e, seed, threshold, scale); });
  } else if (in.scalar_type() == at::kBFloat16) {
    const auto* x = reinterpret_cast<const uint16_t*>(in.data_ptr<at::BFloat16>());
    auto* y = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
    const auto scale = static_cast<float>(static_cast<at::BFloat16>(1.0 / (1.0 - p)));
    at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) { dropout_rows_bf16(x, y, b, e, seed, threshold, scale); });
  } else {
    AT_DISPATCH_FLOATING_TYPES_AND(at::kHalf, in.scalar_type(), "stream_dropout", [&] {
      const scalar_t* x = in.data_ptr<scalar_t>();
      scalar_t* y = out.data_ptr<scalar_t>();
      const auto scale = static_cast<scalar_t>(1.0 / (1.0 - p));
      const auto zero = static_cast<scalar_t>(0);
      at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = x[i] * (dropout_kept(seed, i, threshold) ? scale : zero);
      });
    });
  }
  return out;
}

// y = x * mask with nothing saved for backward but the seed and p: the gradient is
// grad * mask again, its mask rebuilt (LibTorch's x * mask kept the mask, one tensor the size of
// x for every dropout of the step).
struct StreamDropout : torch::autograd::Function<StreamDropout> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, int64_t seed, double p) {
    ctx->saved_data["seed"] = seed;
    ctx->saved_data["p"] = p;
    return apply_dropout_mask(x.contiguous(), static_cast<uint64_t>(seed), p);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    return {apply_dropout_mask(grads[0].contiguous(), seed, ctx->saved_data["p"].toDouble()), torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

torch::Tensor stream_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  if (!x.device().is_cpu() || p >= 1) {
    return torch::nn::functional::dropout(x, torch::nn::functional::DropoutFuncOptions().p(p).training(true));
  }
  // ATen's CPU bernoulli_ draws one mt19937 number per element, serially: a sizeable share of a
  // training step (docs/performance.md, "Dropout masks from SplitMix64"). One draw from the stream
  // seeds the whole mask instead, and SplitMix64 over the element index expands it
  // (runtime/dropout_rows.h).
  const uint64_t seed = draw_seed(current ? *current : at::detail::getDefaultCPUGenerator());
  return StreamDropout::apply(x, static_cast<int64_t>(seed), p);
}

torch::Tensor word_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  auto shape = x.sizes().vec();
  shape.back() = 1;
  return x * stream_dropout(torch::ones(shape, x.options().requires_grad(false)), p, /*training=*/true);
}

}  // namespace attnmt
