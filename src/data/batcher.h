// Length-bucketed batches of encoded examples (data/examples.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/examples.h"

namespace attnmt {

// The batches of one epoch, as lists of indices into `examples`. Examples are sorted by length
// within buckets so padding is small; when `shuffle`, bucket contents and batch order are
// shuffled with a generator seeded from (seed, epoch), so an epoch's batches are a pure function
// of (examples, options, seed, epoch) — this is what makes --resume exact.
// batch_tokens > 0: a batch holds up to batch_tokens target tokens (padded count, at least one
// example); otherwise batch_size sentences.
std::vector<std::vector<size_t>> make_batches(const std::vector<Example>& examples, int batch_size,
                                              int batch_tokens, bool shuffle, uint64_t seed,
                                              int epoch);

// The same over `order` (the epoch's example ids, in base order; ids may repeat), with the
// lengths of every example (indexed by id) instead of the examples. window > 0 (data.batch_window):
// the shuffled order is cut into windows of that many examples, each sorted by length and cut
// into batches on its own (Marian's maxi-batches), and all the batches are then shuffled; 0 sorts
// the whole epoch at once (the function above).
std::vector<std::vector<size_t>> make_batches(std::vector<size_t> order, const std::vector<uint32_t>& src_lengths,
                                              const std::vector<uint32_t>& tgt_lengths, int batch_size,
                                              int batch_tokens, bool shuffle, uint64_t seed, int epoch,
                                              size_t window = 0);

}  // namespace attnmt
