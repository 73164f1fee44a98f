#include "data/corpus.h"

#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {

ParallelText read_parallel(const CorpusConfig& corpus, const std::string& what) {
  ParallelText t;
  t.src = read_lines(corpus.src);
  t.tgt = read_lines(corpus.tgt);
  if (t.src.empty()) throw InputError(what + ": '" + corpus.src + "' is empty");
  if (t.src.size() != t.tgt.size()) {
    throw InputError(what + ": '" + corpus.src + "' has " + std::to_string(t.src.size()) + " lines but '" +
                     corpus.tgt + "' has " + std::to_string(t.tgt.size()));
  }
  return t;
}

}  // namespace attnmt
