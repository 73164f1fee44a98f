// Encoded examples and length-bucketed batches.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/corpus.h"
#include "data/tokenizer.h"

namespace attnmt {

struct Example {
  std::vector<int> src;  // subword ids, no bos/eos
  std::vector<int> tgt;  // subword ids, no bos/eos
  size_t line = 0;       // 0-based line in the original files
};

struct Dataset {
  std::vector<Example> examples;
  size_t skipped_empty = 0;  // pairs with an empty side
  size_t skipped_long = 0;   // pairs with a side longer than max_length tokens
};

// Encodes every pair; skips (and counts) empty pairs and, when max_length > 0, pairs longer
// than max_length tokens on either side. The caller logs the counts. `threads` encode slices of
// the corpus side by side (0 = one per core); the result is the same for any number.
Dataset encode_dataset(const ParallelText& text, const Tokenizers& tokenizers, int max_length, int threads = 0);

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
