// The random stream of training's stochastic parts: dropout masks, monotonic attention's noise,
// hard attention's samples. By default they draw from LibTorch's global generator.
// Inside a RandomStreamScope they draw from the scope's own generator instead: training's replica
// threads (train.replicas) each open one, seeded from (seed, rank, replica, step), so their masks
// do not depend on which thread reaches the global generator first and a run is repeatable.
#pragma once
#include <ATen/core/Generator.h>
#include <c10/util/Optional.h>
#include <torch/torch.h>

#include <cstdint>

namespace attnmt {

class RandomStreamScope {
 public:
  explicit RandomStreamScope(uint64_t seed);  // CPU generator
  ~RandomStreamScope();
  RandomStreamScope(const RandomStreamScope&) = delete;
  RandomStreamScope& operator=(const RandomStreamScope&) = delete;

 private:
  c10::optional<at::Generator> previous_;
};

// The generator of the innermost scope on this thread; nullopt (= LibTorch's default) outside.
c10::optional<at::Generator> random_stream();

// Inverted dropout, as torch::nn::functional::dropout: x * Bernoulli(1 - p) / (1 - p) in training.
// On a CPU the mask comes from one 64-bit draw of the stream expanded by SplitMix64
// (runtime/dropout_rows.h): ATen's bernoulli_ was a sizeable share of a training step
// (docs/performance.md, "Dropout masks from SplitMix64"). The mask is not stored: backward
// rebuilds it from the draw.
torch::Tensor stream_dropout(const torch::Tensor& x, double p, bool training);

// Word dropout: x [..., E] with each token's whole vector x[..., :] kept with probability 1 - p
// (scaled by 1 / (1 - p), as Marian's dropout-src/-trg) or zeroed, in training; x otherwise.
torch::Tensor word_dropout(const torch::Tensor& x, double p, bool training);

}  // namespace attnmt
