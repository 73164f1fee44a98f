#include "data/train_pairs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "util/error.h"

namespace attnmt {

TrainPairs::TrainPairs(std::vector<TrainCorpus> corpora, int max_length) : corpora_(std::move(corpora)) {
  first_.push_back(0);
  for (const auto& c : corpora_) {
    size_t empty = 0, long_ = 0;
    for (size_t line = 0; line < c.ids.lines(); ++line) {
      if (line % (1 << 20) == 0) c.ids.release_pages();  // the index is read once: keep little of it resident
      const uint32_t s = c.ids.src_length(line), t = c.ids.tgt_length(line);
      if (s == 0 || t == 0) {
        ++empty;
        continue;
      }
      if (max_length > 0 && (s > static_cast<uint32_t>(max_length) || t > static_cast<uint32_t>(max_length))) {
        ++long_;
        continue;
      }
      if (line > UINT32_MAX) throw InputError(c.name + ": more than 4,294,967,295 lines");
      line_.push_back(static_cast<uint32_t>(line));
      src_len_.push_back(s);
      tgt_len_.push_back(t);
    }
    c.ids.release_pages();  // the index was read once; batches read it again line by line
    skipped_empty_.push_back(empty);
    skipped_long_.push_back(long_);
    first_.push_back(line_.size());
  }
  // Each corpus's share of an epoch of size() pairs, by largest remainder so they sum to size().
  const size_t total = size();
  double weights = 0;
  for (const auto& c : corpora_) weights += c.weight;
  std::vector<std::pair<double, size_t>> remainders;
  size_t given = 0;
  for (size_t c = 0; c < corpora_.size(); ++c) {
    const double exact = corpora_.size() == 1 ? static_cast<double>(total)
                                              : static_cast<double>(total) * corpora_[c].weight / weights;
    quota_.push_back(kept(c) == 0 ? 0 : static_cast<size_t>(std::floor(exact)));
    given += quota_.back();
    if (kept(c) > 0) remainders.emplace_back(exact - std::floor(exact), c);
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < total && !remainders.empty(); ++i, ++given) ++quota_[remainders[i % remainders.size()].second];
}

std::vector<size_t> TrainPairs::epoch_examples(uint64_t seed, int64_t epoch) const {
  std::vector<size_t> out;
  if (corpora_.size() == 1) {
    out.resize(size());
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  out.reserve(size());
  for (size_t c = 0; c < corpora_.size(); ++c) {
    const size_t n = kept(c);
    if (n == 0 || quota_[c] == 0) continue;
    const uint64_t begin = static_cast<uint64_t>(epoch) * quota_[c], end = begin + quota_[c];
    std::vector<size_t> perm;
    uint64_t round = UINT64_MAX;
    for (uint64_t p = begin; p < end; ++p) {
      if (p / n != round) {  // the permutation of this pass over the corpus
        round = p / n;
        perm.resize(n);
        std::iota(perm.begin(), perm.end(), first_[c]);
        std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ULL + (c + 1) * 0xBF58476D1CE4E5B9ULL + round * 0x94D049BB133111EBULL);
        for (size_t i = n; i > 1; --i) std::swap(perm[i - 1], perm[static_cast<size_t>(gen() % i)]);
      }
      out.push_back(perm[p % n]);
    }
  }
  return out;
}

std::vector<Example> TrainPairs::gather(const std::vector<size_t>& ids) const {
  std::vector<Example> out(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    const size_t i = ids[k];
    const size_t c = static_cast<size_t>(std::upper_bound(first_.begin(), first_.end(), i) - first_.begin()) - 1;
    corpora_[c].ids.fetch(line_[i], out[k]);
  }
  return out;
}

}  // namespace attnmt
