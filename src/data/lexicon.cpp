#include "data/lexicon.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "data/batcher.h"
#include "util/error.h"

namespace attnmt {

std::vector<int> Lexicon::shortlist(const std::vector<int>& source_ids, int first, int best,
                                    const std::vector<int>& always, int round_to) const {
  std::vector<char> keep(static_cast<size_t>(tgt_vocab), 0);
  auto mark = [&](int id) {
    if (id >= 0 && id < tgt_vocab) keep[static_cast<size_t>(id)] = 1;
  };
  const size_t n_first = std::min(frequent.size(), static_cast<size_t>(std::max(first, 0)));
  for (size_t i = 0; i < n_first; ++i) mark(frequent[i]);
  for (int s : source_ids) {
    if (s < 0 || static_cast<size_t>(s) >= translations.size()) continue;
    const auto& row = translations[static_cast<size_t>(s)];
    const size_t n = std::min(row.size(), static_cast<size_t>(std::max(best, 0)));
    for (size_t k = 0; k < n; ++k) mark(row[k].first);
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
  for (int it = 0; it < iterations; ++it) {
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

  Lexicon lex;
  lex.src_vocab = src_vocab;
  lex.tgt_vocab = tgt_vocab;
  lex.translations.resize(static_cast<size_t>(src_vocab));
  for (size_t e = 0; e < static_cast<size_t>(src_vocab); ++e) {
    auto& row = lex.translations[e];
    for (size_t s = row_start[e]; s < row_start[e + 1]; ++s) row.emplace_back(static_cast<int>(cols[s]), t[s]);
    std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (row.size() > static_cast<size_t>(std::max(keep, 0))) row.resize(static_cast<size_t>(std::max(keep, 0)));
  }
  std::vector<int64_t> freq(static_cast<size_t>(tgt_vocab), 0);
  for (const auto& sentence : tgt) {
    for (int f : sentence) {
      if (valid_tgt(f)) ++freq[static_cast<size_t>(f)];
    }
  }
  for (int f = 0; f < tgt_vocab; ++f) {
    if (freq[static_cast<size_t>(f)] > 0) lex.frequent.push_back(f);
  }
  std::stable_sort(lex.frequent.begin(), lex.frequent.end(),
                   [&](int a, int b) { return freq[static_cast<size_t>(a)] > freq[static_cast<size_t>(b)]; });
  return lex;
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

std::string lexicon_path(const std::string& save_dir) { return save_dir + "/lexicon.txt"; }

void write_lexicon(const Lexicon& lexicon, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw RuntimeError("lexicon: cannot write '" + tmp + "'");
    out << "attnmt-lexicon 1 " << lexicon.src_vocab << ' ' << lexicon.tgt_vocab << '\n';
    out << "frequent " << lexicon.frequent.size();
    for (int f : lexicon.frequent) out << ' ' << f;
    out << '\n';
    char buf[32];
    for (size_t e = 0; e < lexicon.translations.size(); ++e) {
      const auto& row = lexicon.translations[e];
      if (row.empty()) continue;
      out << e << ' ' << row.size();
      for (const auto& [f, p] : row) {
        std::snprintf(buf, sizeof buf, " %d:%.4g", f, static_cast<double>(p));
        out << buf;
      }
      out << '\n';
    }
    if (!out.flush()) throw RuntimeError("lexicon: cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw RuntimeError("lexicon: cannot rename '" + tmp + "' to '" + path + "'");
}

Lexicon read_lexicon(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("lexicon '" + path + "': cannot open (build it with: attnmt lexicon --model SAVE_DIR)");
  Lexicon lex;
  std::string line;
  size_t line_no = 0;
  auto fail = [&](const std::string& what) -> InputError {
    return InputError("lexicon '" + path + "' line " + std::to_string(line_no) + ": " + what);
  };
  auto next_line = [&]() -> std::istringstream {
    if (!std::getline(in, line)) {
      ++line_no;
      throw fail("unexpected end of file");
    }
    ++line_no;
    return std::istringstream(line);
  };
  {
    auto s = next_line();
    std::string magic;
    int version = 0;
    if (!(s >> magic >> version >> lex.src_vocab >> lex.tgt_vocab) || magic != "attnmt-lexicon" || version != 1 ||
        lex.src_vocab <= 0 || lex.tgt_vocab <= 0) {
      throw fail("not an attnmt lexicon (expected 'attnmt-lexicon 1 SRC_VOCAB TGT_VOCAB')");
    }
  }
  auto target = [&](long v) {
    if (v < 0 || v >= lex.tgt_vocab) throw fail("target id " + std::to_string(v) + " out of range");
    return static_cast<int>(v);
  };
  {
    auto s = next_line();
    std::string word;
    size_t n = 0;
    if (!(s >> word >> n) || word != "frequent") throw fail("expected 'frequent N id ...'");
    lex.frequent.reserve(n);
    long id = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!(s >> id)) throw fail("expected " + std::to_string(n) + " target ids");
      lex.frequent.push_back(target(id));
    }
  }
  lex.translations.resize(static_cast<size_t>(lex.src_vocab));
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const char* p = line.c_str();
    char* end = nullptr;
    const long e = std::strtol(p, &end, 10);
    if (end == p || e < 0 || e >= lex.src_vocab) throw fail("bad source id");
    p = end;
    const long n = std::strtol(p, &end, 10);
    if (end == p || n < 0) throw fail("bad translation count");
    p = end;
    auto& row = lex.translations[static_cast<size_t>(e)];
    row.reserve(static_cast<size_t>(n));
    for (long k = 0; k < n; ++k) {
      const long f = std::strtol(p, &end, 10);
      if (end == p || *end != ':') throw fail("expected TARGET:PROB");
      p = end + 1;
      const float prob = std::strtof(p, &end);
      if (end == p || !(prob >= 0.0f && prob <= 1.0f)) throw fail("bad probability");
      p = end;
      row.emplace_back(target(f), prob);
    }
  }
  return lex;
}

}  // namespace attnmt
