#include "data/corpus.h"

#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {

namespace {

[[noreturn]] void throw_unequal(const std::string& what, const CorpusConfig& corpus, size_t src_lines,
                                size_t tgt_lines) {
  throw InputError(what + ": '" + corpus.src + "' has " + std::to_string(src_lines) + " lines but '" + corpus.tgt +
                   "' has " + std::to_string(tgt_lines));
}

// Lines left in a reader (for the "has N lines but" message).
size_t count_rest(LineReader& reader) {
  std::string line;
  size_t n = 0;
  while (reader.next(line)) ++n;
  return n;
}

}  // namespace

std::string training_corpus_name(size_t index, size_t count) {
  return count == 1 ? "train" : "train corpus " + std::to_string(index + 1);
}

ParallelText read_parallel(const CorpusConfig& corpus, const std::string& what) {
  ParallelText t;
  t.src = read_lines(corpus.src);
  t.tgt = read_lines(corpus.tgt);
  if (t.src.empty()) throw InputError(what + ": '" + corpus.src + "' is empty");
  if (t.src.size() != t.tgt.size()) throw_unequal(what, corpus, t.src.size(), t.tgt.size());
  return t;
}

PairReader::PairReader(const CorpusConfig& corpus, std::string what)
    : corpus_(corpus), what_(std::move(what)), src_(corpus.src), tgt_(corpus.tgt) {}

bool PairReader::next(std::string& src, std::string& tgt) {
  const bool has_src = src_.next(src), has_tgt = tgt_.next(tgt);
  if (has_src != has_tgt) {
    const size_t src_lines = src_.line_number() + (has_src ? count_rest(src_) : 0);
    const size_t tgt_lines = tgt_.line_number() + (has_tgt ? count_rest(tgt_) : 0);
    throw_unequal(what_, corpus_, src_lines, tgt_lines);
  }
  return has_src;
}

}  // namespace attnmt
