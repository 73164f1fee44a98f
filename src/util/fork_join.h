// The one way attnmt runs work on several threads at once: tokenizing slices of a corpus
// (data/batcher.cpp, data/token_cache.cpp) and the workers and replicas of decoding and training
// (runtime/workers.h, which adds LibTorch's intra-op thread count per worker).
#pragma once
#include <cstddef>
#include <functional>

namespace attnmt {

// Calls fn(i) for every i in [0, count) at once: i = 0 on the calling thread, the others on
// threads of their own. Waits for all of them, then rethrows the exception of the lowest i that
// threw, if any. count <= 1: fn(0) on the calling thread.
void fork_join(size_t count, const std::function<void(size_t)>& fn);

}  // namespace attnmt
