// Worker threads for the CPU: on a few cores, separate batches (or slices of one) in threads of
// their own beat one computation spread over all threads, because a decoder step is many small
// operations. Training's replicas (train/replicas.h) and decoding's workers
// (decoding/translator.h) both run through run_workers().
#pragma once
#include <functional>

namespace attnmt {

// Calls fn(w) for every w in [0, workers) at once, w = 0 on the calling thread and the others on
// threads of their own, each with `threads_each` intra-op threads; waits for all, restores the
// caller's intra-op thread count and rethrows the first exception. workers <= 1: fn(0) here.
void run_workers(int workers, int threads_each, const std::function<void(int)>& fn);

// A train.replicas / decode.workers value: > 0 as it is; 0 = one per intra-op thread of the caller
// on a CPU, 1 on a GPU.
int resolve_workers(int requested, bool cpu);

}  // namespace attnmt
