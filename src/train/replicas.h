// train.replicas: data parallelism inside one process, as Marian's CPU workers do. Replica 0 is the
// trained model; the others are models of the same shape whose parameters share its storage (so
// an optimizer step reaches all of them) but keep their own gradients. Each update splits the
// batch into one slice per replica (train/distributed.h's shard_batch), every replica runs forward
// and backward on its slice in its own thread with threads / replicas intra-op threads, and the
// replicas' gradients are summed into replica 0's: the same gradient as one model on the whole
// batch. On a CPU, one replica per core beats one model over all cores: a decoder step is many
// small matrix products and element-wise ops, which do not split well across threads.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "config/config.h"
#include "model/seq2seq.h"

namespace attnmt {

class Replicas {
 public:
  // count >= 1; threads_each: intra-op threads of each replica's thread.
  Replicas(Seq2Seq main, const ModelConfig& config, int count, int threads_each);

  int count() const { return static_cast<int>(models_.size()); }
  Seq2Seq& model(int r) { return models_[static_cast<size_t>(r)]; }

  // Calls fn(r) for every replica at once, r = 0 on the calling thread, and waits for all;
  // rethrows the first exception.
  void parallel(const std::function<void(int)>& fn);
  // Before an update: point the replicas' parameters at the main model's tensors (which a loaded
  // checkpoint may have replaced) and drop every model's gradients (set to none, not zeroed, as
  // PyTorch's zero_grad(set_to_none=True)): their memory goes back to the allocator, for the
  // forward pass's activations, and backward's first contribution becomes the gradient. A
  // parameter that gets no gradient in an update is skipped by the optimizer.
  void prepare();
  // After backward: add replicas 1.. 's gradients into the main model's, and drop theirs.
  void reduce_gradients();

 private:
  std::vector<Seq2Seq> models_;
  int threads_each_;
};

// The seed of replica `replica`'s random stream (runtime/random.h) at `step` on `rank`.
uint64_t replica_stream_seed(uint64_t seed, int rank, int replica, int64_t step);

}  // namespace attnmt
