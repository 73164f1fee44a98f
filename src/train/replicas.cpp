#include "train/replicas.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "runtime/workers.h"
#include "util/seed_mix.h"

namespace attnmt {

Replicas::Replicas(Seq2Seq main, const ModelConfig& config, int count, int threads_each)
    : threads_each_(std::max(1, threads_each)) {
  models_.push_back(main);
  if (count <= 1) return;
  // Building a replica draws its (soon replaced) initial weights: keep the global stream as it was.
  auto generator = at::detail::getDefaultCPUGenerator();
  const auto state = generator.get_state();
  const auto device = main->parameters().front().device();
  for (int r = 1; r < count; ++r) {
    Seq2Seq replica(config, main->vocab());
    replica->set_wait_k(main->wait_k());
    replica->to(device);
    replica->train();
    models_.push_back(replica);
  }
  generator.set_state(state);
  prepare();
}

void Replicas::prepare() {
  torch::NoGradGuard no_grad;
  for (auto& p : models_[0]->parameters()) p.mutable_grad() = torch::Tensor();
  if (models_.size() == 1) return;
  const auto main = models_[0]->named_parameters();
  for (size_t r = 1; r < models_.size(); ++r) {
    for (auto& item : models_[r]->named_parameters()) {
      auto& p = item.value();
      const auto& source = main[item.key()];
      if (!p.is_same(source) && p.data_ptr() != source.data_ptr()) p.set_data(source);
      p.mutable_grad() = torch::Tensor();
    }
  }
}

void Replicas::parallel(const std::function<void(int)>& fn) { run_workers(count(), threads_each_, fn); }

void Replicas::reduce_gradients() {
  if (models_.size() == 1) return;
  torch::NoGradGuard no_grad;
  auto main = models_[0]->parameters();
  for (size_t r = 1; r < models_.size(); ++r) {
    auto params = models_[r]->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      auto g = params[i].grad();
      if (!g.defined()) continue;
      if (main[i].grad().defined()) {
        main[i].mutable_grad().add_(g);
      } else {
        main[i].mutable_grad() = g;
      }
      params[i].mutable_grad() = torch::Tensor();  // its memory is free for the next forward pass
    }
  }
}

uint64_t replica_stream_seed(uint64_t seed, int rank, int replica, int64_t step) {
  return mix_seeds(seed, rank, replica, step);
}

}  // namespace attnmt
