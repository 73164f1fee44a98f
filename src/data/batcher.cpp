#include "data/batcher.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <random>


namespace attnmt {

namespace {
// Fisher-Yates with a generator whose output is fixed by the standard (mt19937_64), and our own
// index draw, so batches are the same with any standard library.
void shuffle_indices(std::vector<size_t>& v, std::mt19937_64& gen) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(gen() % i);
    std::swap(v[i - 1], v[j]);
  }
}
// A stable sort of ids by (src length, tgt length): two stable counting-sort passes (target
// lengths, then source lengths), linear in the ids (a comparison sort of millions of ids, each
// comparison two random reads, took seconds); the order std::stable_sort gives.
void sort_by_lengths(std::vector<size_t>::iterator first, std::vector<size_t>::iterator last,
                     const std::vector<uint32_t>& src_lengths, const std::vector<uint32_t>& tgt_lengths) {
  const size_t n = static_cast<size_t>(last - first);
  if (n < 2) return;
  std::vector<size_t> buffer(n);
  auto pass = [&](const std::vector<uint32_t>& key, auto from, auto to) {
    uint32_t top = 0;
    for (auto it = from; it != from + static_cast<std::ptrdiff_t>(n); ++it) top = std::max(top, key[*it]);
    std::vector<size_t> start(static_cast<size_t>(top) + 2, 0);
    for (auto it = from; it != from + static_cast<std::ptrdiff_t>(n); ++it) ++start[key[*it] + 1];
    for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
    for (auto it = from; it != from + static_cast<std::ptrdiff_t>(n); ++it) to[static_cast<std::ptrdiff_t>(start[key[*it]]++)] = *it;
  };
  pass(tgt_lengths, first, buffer.begin());
  pass(src_lengths, buffer.begin(), first);
}

}  // namespace

std::vector<std::vector<size_t>> make_batches(const std::vector<Example>& examples, int batch_size, int batch_tokens,
                                              bool shuffle, uint64_t seed, int epoch) {
  std::vector<uint32_t> src(examples.size()), tgt(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    src[i] = static_cast<uint32_t>(examples[i].src.size());
    tgt[i] = static_cast<uint32_t>(examples[i].tgt.size());
  }
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  return make_batches(std::move(order), src, tgt, batch_size, batch_tokens, shuffle, seed, epoch);
}

std::vector<std::vector<size_t>> make_batches(std::vector<size_t> order, const std::vector<uint32_t>& src_lengths,
                                              const std::vector<uint32_t>& tgt_lengths, int batch_size,
                                              int batch_tokens, bool shuffle, uint64_t seed, int epoch,
                                              size_t window) {
  std::mt19937_64 gen(seed * 1000003ULL + static_cast<uint64_t>(epoch) * 7919ULL + 17ULL);
  if (shuffle) shuffle_indices(order, gen);
  std::vector<std::vector<size_t>> batches;
  const size_t span = window > 0 ? window : std::max<size_t>(order.size(), 1);
  for (size_t from = 0; from < order.size(); from += span) {
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(from);
    const auto last = order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), from + span));
    // Sort by (src length, tgt length): batches of similar lengths have little padding. Stable,
    // so equal lengths keep the shuffled (or original) order.
    sort_by_lengths(first, last, src_lengths, tgt_lengths);
    std::vector<size_t> current;
    size_t max_tgt = 0;
    for (auto it = first; it != last; ++it) {
      const size_t idx = *it;
      const size_t tgt = tgt_lengths[idx] + 1;
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
  }
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
