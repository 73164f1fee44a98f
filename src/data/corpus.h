// Parallel corpora: two line-aligned text files.
#pragma once
#include <string>
#include <vector>

#include "config/config.h"
#include "util/text_io.h"

namespace attnmt {

struct ParallelText {
  std::vector<std::string> src;
  std::vector<std::string> tgt;
};

// Reads both sides (plain or .gz). InputError if a file is missing/unreadable/invalid, or if the
// line counts differ: "train.src 'a.de' has 29000 lines but train.tgt 'a.en' has 28999".
// `what` names the corpus in messages ("train", "valid", "test").
ParallelText read_parallel(const CorpusConfig& corpus, const std::string& what);

// How messages name training corpus `index` (0-based) of `count`: "train" when it is the only one,
// else "train corpus N" (1-based), as data.train's list gives them.
std::string training_corpus_name(size_t index, size_t count);

// Both sides of a corpus a pair of lines at a time, in bounded memory, checked as read_parallel
// checks them (the same messages): a side that ends before the other is an InputError naming both
// files and both line counts.
class PairReader {
 public:
  PairReader(const CorpusConfig& corpus, std::string what);
  // The next pair; false once both sides have ended together.
  bool next(std::string& src, std::string& tgt);
  size_t line_number() const { return src_.line_number(); }  // 1-based: the pair `next` returned last

 private:
  CorpusConfig corpus_;
  std::string what_;
  LineReader src_, tgt_;
};

}  // namespace attnmt
