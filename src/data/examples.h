// Training and validation pairs as subword ids: what the batcher cuts into batches, the lexicon
// and the token cache read, and the teacher-forced loss runs on.
#pragma once
#include <cstddef>
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

}  // namespace attnmt
