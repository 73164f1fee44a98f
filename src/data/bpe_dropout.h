// BPE-dropout (Provilkov, Emelianenko & Voita, "BPE-Dropout: Simple and Effective Subword
// Regularization", ACL 2020): at training time a sentence is segmented again with each BPE merge
// skipped with probability p, so the model sees the same words cut into smaller pieces of the same
// vocabulary from one epoch to the next (data.src_bpe_dropout, data.tgt_bpe_dropout).
//
// The merges are SentencePiece's own: a BPE model's pieces, ranked by their scores, applied to the
// sentence's characters best first, ties to the leftmost pair, and (as SentencePiece's sampling
// does) a skipped merge is dropped for the rest of the sentence. With p = 0 the result is
// SentencePiece's deterministic segmentation. It starts from that segmentation's ids, not from the
// text, so the token cache serves it unchanged, and it draws from its own seeded generator, not
// SentencePiece's per-thread one: a sentence's pieces are a pure function of (seed, its ids), which
// keeps --resume exact and the result independent of threads.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/tokenizer.h"

namespace attnmt {

class BpeDropout {
 public:
  // `tokenizer`: a SentencePiece BPE model. `frozen`: its user-defined symbols
  // (tokenizer.user_defined_symbols), which SentencePiece keeps whole and so does this.
  BpeDropout(const Tokenizer& tokenizer, double p, const std::vector<std::string>& frozen);

  double probability() const { return p_; }
  // `ids` (one side of a sentence, no bos/eos) segmented again, with the draws seeded by `seed`.
  // Unknown, control and user-defined pieces, and any piece whose characters are not all in the
  // vocabulary, stay as they are.
  std::vector<int> apply(const std::vector<int>& ids, uint64_t seed) const;

 private:
  double p_;
  std::vector<std::string> piece_;           // by id
  std::vector<float> score_;                 // by id
  std::vector<std::vector<int>> chars_;      // by id: its characters' ids; empty = kept whole
  std::unordered_map<std::string, int> id_;  // merge results: the ordinary pieces
};

// tokenizer.user_defined_symbols (comma-separated) as a list.
std::vector<std::string> split_symbols(const std::string& comma_separated);

}  // namespace attnmt
