#include "data/lexicon.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "data/examples.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/text_io.h"

namespace attnmt {

static_assert(sizeof(int) == 4 && sizeof(Lexicon::Translation) == 8, "the lexicon file stores int32 and float32");

Lexicon::Row Lexicon::row(int e) const {
  if (e < 0 || static_cast<size_t>(e) + 1 >= row_start.size()) return {};
  return {entries.data() + row_start[static_cast<size_t>(e)], entries.data() + row_start[static_cast<size_t>(e) + 1]};
}

Lexicon Lexicon::from_rows(int src_vocab, int tgt_vocab, std::vector<int> frequent,
                           const std::vector<std::vector<Translation>>& rows) {
  Lexicon lex;
  lex.src_vocab = src_vocab;
  lex.tgt_vocab = tgt_vocab;
  lex.frequent = std::move(frequent);
  lex.row_start.assign(static_cast<size_t>(src_vocab) + 1, 0);
  for (size_t e = 0; e < static_cast<size_t>(src_vocab); ++e) {
    if (e < rows.size()) lex.entries.insert(lex.entries.end(), rows[e].begin(), rows[e].end());
    lex.row_start[e + 1] = static_cast<int>(lex.entries.size());
  }
  return lex;
}

std::vector<int> Lexicon::shortlist(const std::vector<int>& source_ids, int first, int best,
                                    const std::vector<int>& always, int round_to) const {
  std::vector<char> keep(static_cast<size_t>(tgt_vocab), 0);
  auto mark = [&](int id) {
    if (id >= 0 && id < tgt_vocab) keep[static_cast<size_t>(id)] = 1;
  };
  const size_t n_first = std::min(frequent.size(), static_cast<size_t>(std::max(first, 0)));
  for (size_t i = 0; i < n_first; ++i) mark(frequent[i]);
  for (int s : source_ids) {
    const auto r = row(s);
    const size_t n = std::min(r.size(), static_cast<size_t>(std::max(best, 0)));
    for (size_t k = 0; k < n; ++k) mark(r[k].target);
  }
  for (int a : always) mark(a);
  int64_t count = std::count(keep.begin(), keep.end(), 1);
  if (round_to > 1) {
    int64_t missing = (round_to - count % round_to) % round_to;
    for (size_t i = n_first; i < frequent.size() && missing > 0; ++i) {
      auto& k = keep[static_cast<size_t>(frequent[i])];
      if (!k) k = 1, --missing;
    }
    for (size_t id = 0; id < keep.size() && missing > 0; ++id) {
      if (!keep[id]) keep[id] = 1, --missing;
    }
  }
  std::vector<int> out;
  for (size_t id = 0; id < keep.size(); ++id) {
    if (keep[id]) out.push_back(static_cast<int>(id));
  }
  return out;
}

Lexicon train_lexicon(const std::vector<std::vector<int>>& src, const std::vector<std::vector<int>>& tgt,
                      int src_vocab, int tgt_vocab, int iterations, int keep) {
  if (src.size() != tgt.size()) throw InputError("lexicon: the two sides have different numbers of sentences");
  auto valid_src = [&](int id) { return id >= 0 && id < src_vocab; };
  auto valid_tgt = [&](int id) { return id >= 0 && id < tgt_vocab; };
  const uint32_t empty_word = static_cast<uint32_t>(src_vocab);  // source row of the empty word
  const size_t rows = static_cast<size_t>(src_vocab) + 1;

  // The (source, target) pairs that co-occur in some sentence pair, as rows of sorted target ids.
  std::vector<uint64_t> pairs;
  for (size_t n = 0; n < src.size(); ++n) {
    for (int f : tgt[n]) {
      if (!valid_tgt(f)) continue;
      pairs.push_back((uint64_t{empty_word} << 32) | static_cast<uint32_t>(f));
      for (int e : src[n]) {
        if (valid_src(e)) pairs.push_back((uint64_t{static_cast<uint32_t>(e)} << 32) | static_cast<uint32_t>(f));
      }
    }
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<size_t> row_start(rows + 1, 0);
  std::vector<uint32_t> cols(pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) {
    ++row_start[(pairs[k] >> 32) + 1];
    cols[k] = static_cast<uint32_t>(pairs[k] & 0xffffffffu);
  }
  for (size_t r = 0; r < rows; ++r) row_start[r + 1] += row_start[r];
  std::vector<uint64_t>().swap(pairs);

  // Per sentence pair, per target position, the slots of t(f_j | e_0), t(f_j | e_1), ...
  auto slot = [&](uint32_t e, uint32_t f) {
    const auto begin = cols.begin() + static_cast<std::ptrdiff_t>(row_start[e]);
    const auto end = cols.begin() + static_cast<std::ptrdiff_t>(row_start[e + 1]);
    return static_cast<uint32_t>(std::lower_bound(begin, end, f) - cols.begin());
  };
  std::vector<uint32_t> slots;
  std::vector<uint32_t> width;  // per (pair, target position): how many slots
  for (size_t n = 0; n < src.size(); ++n) {
    for (int f : tgt[n]) {
      if (!valid_tgt(f)) continue;
      const size_t before = slots.size();
      slots.push_back(slot(empty_word, static_cast<uint32_t>(f)));
      for (int e : src[n]) {
        if (valid_src(e)) slots.push_back(slot(static_cast<uint32_t>(e), static_cast<uint32_t>(f)));
      }
      width.push_back(static_cast<uint32_t>(slots.size() - before));
    }
  }

  std::vector<float> t(cols.size(), 1.0f);  // uniform: only ratios within a position matter first
  std::vector<double> count(cols.size());
  Progress progress("[lexicon] IBM Model 1", "iterations", iterations);
  for (int it = 0; it < iterations; ++it) {
    progress.update(it);
    std::fill(count.begin(), count.end(), 0.0);
    size_t k = 0;
    for (uint32_t w : width) {
      double z = 0;
      for (uint32_t i = 0; i < w; ++i) z += t[slots[k + i]];
      if (z > 0) {
        for (uint32_t i = 0; i < w; ++i) count[slots[k + i]] += t[slots[k + i]] / z;
      }
      k += w;
    }
    for (size_t r = 0; r < rows; ++r) {
      double total = 0;
      for (size_t s = row_start[r]; s < row_start[r + 1]; ++s) total += count[s];
      for (size_t s = row_start[r]; s < row_start[r + 1]; ++s) {
        t[s] = total > 0 ? static_cast<float>(count[s] / total) : 0.0f;
      }
    }
  }

  std::vector<std::vector<Lexicon::Translation>> best_rows(static_cast<size_t>(src_vocab));
  for (size_t e = 0; e < static_cast<size_t>(src_vocab); ++e) {
    auto& row = best_rows[e];
    for (size_t s = row_start[e]; s < row_start[e + 1]; ++s) row.push_back({static_cast<int>(cols[s]), t[s]});
    std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) {
      return a.prob != b.prob ? a.prob > b.prob : a.target < b.target;
    });
    if (row.size() > static_cast<size_t>(std::max(keep, 0))) row.resize(static_cast<size_t>(std::max(keep, 0)));
  }
  std::vector<int64_t> freq(static_cast<size_t>(tgt_vocab), 0);
  for (const auto& sentence : tgt) {
    for (int f : sentence) {
      if (valid_tgt(f)) ++freq[static_cast<size_t>(f)];
    }
  }
  std::vector<int> frequent;
  for (int f = 0; f < tgt_vocab; ++f) {
    if (freq[static_cast<size_t>(f)] > 0) frequent.push_back(f);
  }
  std::stable_sort(frequent.begin(), frequent.end(),
                   [&](int a, int b) { return freq[static_cast<size_t>(a)] > freq[static_cast<size_t>(b)]; });
  return Lexicon::from_rows(src_vocab, tgt_vocab, std::move(frequent), best_rows);
}

Lexicon train_lexicon(const std::vector<Example>& examples, int src_vocab, int tgt_vocab, int iterations, int keep) {
  std::vector<std::vector<int>> src, tgt;
  src.reserve(examples.size());
  tgt.reserve(examples.size());
  for (const auto& e : examples) {
    src.push_back(e.src);
    tgt.push_back(e.tgt);
  }
  return train_lexicon(src, tgt, src_vocab, tgt_vocab, iterations, keep);
}

std::string lexicon_path(const std::string& save_dir) { return save_dir + "/lexicon.bin"; }

namespace {

// The file (little-endian, as written on this machine):
//   char[8] "ATTNMTLX", int32 version = 1, int32 src_vocab, int32 tgt_vocab, int32 frequent count F,
//   int32 frequent[F], int32 row_start[src_vocab + 1] (row_start[0] = 0, non-decreasing),
//   then row_start[src_vocab] entries of (int32 target id, float32 probability).
// Binary, copied straight into the flat arrays: a text form of the same table was slow to parse
// (a noticeable part of a greedy translation; docs/performance.md).
constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'M', 'T', 'L', 'X'};
constexpr int32_t kVersion = 1;

}  // namespace

std::string lexicon_bytes(const Lexicon& lexicon) {
  const int32_t head[4] = {kVersion, lexicon.src_vocab, lexicon.tgt_vocab, static_cast<int32_t>(lexicon.frequent.size())};
  std::string out;
  auto put = [&](const void* data, size_t bytes) { out.append(static_cast<const char*>(data), bytes); };
  put(kMagic, sizeof kMagic);
  put(head, sizeof head);
  put(lexicon.frequent.data(), lexicon.frequent.size() * sizeof(int));
  put(lexicon.row_start.data(), lexicon.row_start.size() * sizeof(int));
  put(lexicon.entries.data(), lexicon.entries.size() * sizeof(Lexicon::Translation));
  return out;
}

void write_lexicon(const Lexicon& lexicon, const std::string& path) {
  try {
    write_file_atomic(path, lexicon_bytes(lexicon));
  } catch (const Error& e) {
    throw RuntimeError(std::string("lexicon: ") + e.what());
  }
}

Lexicon read_lexicon(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const Error&) {
    throw InputError("lexicon '" + path + "': cannot open (build it with: attnmt lexicon --model SAVE_DIR)");
  }
  return parse_lexicon(bytes, "'" + path + "'");
}

Lexicon parse_lexicon(const std::string& bytes, const std::string& name) {
  auto fail = [&](const std::string& what) {
    return InputError("lexicon " + name + ": " + what + " (rebuild it: attnmt lexicon --model SAVE_DIR)");
  };
  const size_t size = bytes.size();
  size_t at = 0;
  auto take = [&](void* into, size_t n, const char* what) {  // straight into the arrays
    if (size - at < n) throw fail(std::string("truncated in ") + what);
    if (n) std::memcpy(into, bytes.data() + at, n);
    at += n;
  };
  if (size < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) throw fail("not an attnmt lexicon");
  at = sizeof kMagic;
  int32_t head[4];
  take(head, sizeof head, "the header");
  if (head[0] != kVersion) throw fail("version " + std::to_string(head[0]) + ", expected " + std::to_string(kVersion));
  Lexicon lex;
  lex.src_vocab = head[1];
  lex.tgt_vocab = head[2];
  if (lex.src_vocab <= 0 || lex.tgt_vocab <= 0 || head[3] < 0 || head[3] > lex.tgt_vocab) {
    throw fail("bad sizes in the header");
  }
  lex.frequent.resize(static_cast<size_t>(head[3]));
  take(lex.frequent.data(), lex.frequent.size() * sizeof(int), "the frequent list");
  for (int f : lex.frequent) {
    if (f < 0 || f >= lex.tgt_vocab) throw fail("frequent target id " + std::to_string(f) + " out of range");
  }
  lex.row_start.resize(static_cast<size_t>(lex.src_vocab) + 1);
  take(lex.row_start.data(), lex.row_start.size() * sizeof(int), "the row index");
  if (lex.row_start[0] != 0) throw fail("bad row index");
  for (size_t e = 0; e + 1 < lex.row_start.size(); ++e) {
    if (lex.row_start[e + 1] < lex.row_start[e]) throw fail("bad row index at source id " + std::to_string(e));
  }
  const auto n = static_cast<size_t>(lex.row_start.back());
  if ((size - at) / sizeof(Lexicon::Translation) < n) throw fail("truncated in the translations");
  lex.entries.resize(n);
  take(lex.entries.data(), n * sizeof(Lexicon::Translation), "the translations");
  if (at != size) throw fail(std::to_string(size - at) + " bytes after the end");
  for (int e = 0; e < lex.src_vocab; ++e) {
    for (const auto& x : lex.row(e)) {
      if (x.target < 0 || x.target >= lex.tgt_vocab) {
        throw fail("target id " + std::to_string(x.target) + " out of range at source id " + std::to_string(e));
      }
      if (!(x.prob >= 0.0f && x.prob <= 1.0f)) throw fail("bad probability at source id " + std::to_string(e));
    }
  }
  return lex;
}

}  // namespace attnmt
