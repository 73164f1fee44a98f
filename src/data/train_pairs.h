// The training pairs of every data.train corpus, read from their token caches (data/token_cache.h):
// which lines are kept (not empty, within data.max_length), their lengths, and what each epoch
// draws from each corpus when there are several. Only the lengths and line numbers of the kept
// pairs live in memory; their ids are read from the mapped caches batch by batch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/examples.h"
#include "data/token_cache.h"

namespace attnmt {

struct TrainCorpus {
  TokenCorpus ids;
  double weight = 1.0;
  std::string name;  // "'a.de' / 'a.en'", for the log
};

class TrainPairs {
 public:
  TrainPairs(std::vector<TrainCorpus> corpora, int max_length);

  size_t size() const { return line_.size(); }  // kept pairs, every corpus
  size_t corpus_count() const { return corpora_.size(); }
  const TrainCorpus& corpus(size_t c) const { return corpora_[c]; }
  size_t kept(size_t c) const { return first_[c + 1] - first_[c]; }
  size_t skipped_empty(size_t c) const { return skipped_empty_[c]; }
  size_t skipped_long(size_t c) const { return skipped_long_[c]; }
  // Pairs corpus c gives each epoch: its weight's share of size() (all its pairs with one corpus).
  size_t per_epoch(size_t c) const { return quota_[c]; }
  const std::vector<uint32_t>& src_lengths() const { return src_len_; }
  const std::vector<uint32_t>& tgt_lengths() const { return tgt_len_; }

  // The examples epoch `epoch` trains on, in base order (make_batches shuffles them). One corpus:
  // every kept pair once. Several: corpus c gives per_epoch(c) pairs, walking seeded permutations
  // of its pairs that carry on from one epoch to the next (a small corpus with a large weight is
  // repeated, a large one with a small weight is spread over epochs); a pure function of
  // (seed, epoch), as --resume needs.
  std::vector<size_t> epoch_examples(uint64_t seed, int64_t epoch) const;
  // The examples, their ids read from the caches. Thread-safe.
  std::vector<Example> gather(const std::vector<size_t>& ids) const;

 private:
  std::vector<TrainCorpus> corpora_;
  std::vector<size_t> first_;  // first kept example of each corpus, and size() at the end
  std::vector<size_t> skipped_empty_, skipped_long_, quota_;
  std::vector<uint32_t> line_;  // the corpus line of each kept example
  std::vector<uint32_t> src_len_, tgt_len_;
};

}  // namespace attnmt
