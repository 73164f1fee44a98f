// Parallel corpora: two line-aligned text files.
#pragma once
#include <string>
#include <vector>

#include "config/config.h"

namespace attnmt {

struct ParallelText {
  std::vector<std::string> src;
  std::vector<std::string> tgt;
};

// Reads both sides (plain or .gz). InputError if a file is missing/unreadable/invalid, or if the
// line counts differ: "train.src 'a.de' has 29000 lines but train.tgt 'a.en' has 28999".
// `what` names the corpus in messages ("train", "valid", "test").
ParallelText read_parallel(const CorpusConfig& corpus, const std::string& what);

}  // namespace attnmt
