#include "data/batcher.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "util/progress.h"

namespace attnmt {

Dataset encode_dataset(const ParallelText& text, const Tokenizers& tokenizers, int max_length) {
  Dataset d;
  d.examples.reserve(text.src.size());
  Progress progress("[data] tokenizing", "lines", static_cast<int64_t>(text.src.size()));
  for (size_t i = 0; i < text.src.size(); ++i) {
    if (i % 1024 == 0) progress.update(static_cast<int64_t>(i));
    Example ex;
    ex.src = tokenizers.src->encode(text.src[i]);
    ex.tgt = tokenizers.tgt->encode(text.tgt[i]);
    ex.line = i;
    if (ex.src.empty() || ex.tgt.empty()) {
      ++d.skipped_empty;
      continue;
    }
    if (max_length > 0 && (static_cast<int>(ex.src.size()) > max_length || static_cast<int>(ex.tgt.size()) > max_length)) {
      ++d.skipped_long;
      continue;
    }
    d.examples.push_back(std::move(ex));
  }
  return d;
}

namespace {
// Fisher-Yates with a generator whose output is fixed by the standard (mt19937_64), and our own
// index draw, so batches are the same with any standard library.
void shuffle_indices(std::vector<size_t>& v, std::mt19937_64& gen) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(gen() % i);
    std::swap(v[i - 1], v[j]);
  }
}
}  // namespace

std::vector<std::vector<size_t>> make_batches(const std::vector<Example>& examples, int batch_size, int batch_tokens,
                                              bool shuffle, uint64_t seed, int epoch) {
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 gen(seed * 1000003ULL + static_cast<uint64_t>(epoch) * 7919ULL + 17ULL);
  if (shuffle) shuffle_indices(order, gen);
  // Sort by (src length, tgt length): batches of similar lengths have little padding. Stable,
  // so equal lengths keep the shuffled (or original) order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = examples[a];
    const auto& y = examples[b];
    if (x.src.size() != y.src.size()) return x.src.size() < y.src.size();
    return x.tgt.size() < y.tgt.size();
  });
  std::vector<std::vector<size_t>> batches;
  std::vector<size_t> current;
  size_t max_tgt = 0;
  for (size_t idx : order) {
    const size_t tgt = examples[idx].tgt.size() + 1;
    if (!current.empty()) {
      const bool full = batch_tokens > 0
                            ? std::max(max_tgt, tgt) * (current.size() + 1) > static_cast<size_t>(batch_tokens)
                            : current.size() >= static_cast<size_t>(batch_size);
      if (full) {
        batches.push_back(std::move(current));
        current.clear();
        max_tgt = 0;
      }
    }
    current.push_back(idx);
    max_tgt = std::max(max_tgt, tgt);
  }
  if (!current.empty()) batches.push_back(std::move(current));
  if (shuffle) {
    std::vector<size_t> perm(batches.size());
    std::iota(perm.begin(), perm.end(), 0);
    shuffle_indices(perm, gen);
    std::vector<std::vector<size_t>> shuffled;
    shuffled.reserve(batches.size());
    for (size_t p : perm) shuffled.push_back(std::move(batches[p]));
    return shuffled;
  }
  return batches;
}

}  // namespace attnmt
