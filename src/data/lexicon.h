// The lexical table behind vocabulary shortlists (decode.shortlist), as Marian's lexical
// shortlists: for every source subword the target subwords most likely to translate it, and the
// target subwords by corpus frequency. Decoding a batch then scores only the union of the most
// frequent `first` target subwords and the `best` translations of each of its source subwords,
// instead of the whole vocabulary.
//
// The translation probabilities are IBM Model 1's (Brown et al., 1993): t(f | e) over the training
// pairs' subwords, with an empty source word, estimated by EM from uniform values:
//   E: for each pair and each target f_j, c(f_j | e_i) += t(f_j | e_i) / sum_k t(f_j | e_k)
//      (e_0 = the empty word, i over the source subwords and e_0);
//   M: t(f | e) = c(f | e) / sum_f' c(f' | e).
// Torch-free. `attnmt lexicon` and training (when decode.shortlist is on) write it into the
// model's save dir as lexicon.txt.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace attnmt {

struct Lexicon {
  int src_vocab = 0;
  int tgt_vocab = 0;
  std::vector<int> frequent;  // target ids by corpus frequency, most frequent first
  // [src id] -> (target id, t(target | source)), most probable first; the empty word is not kept.
  std::vector<std::vector<std::pair<int, float>>> translations;

  // The sorted target ids a batch with these source ids may produce: frequent[0, first), the
  // `best` most probable translations of each source id, `always` (e.g. eos and unk), and then,
  // only to make the count a multiple of `round_to`, the next most frequent ids (fewer distinct
  // shapes for the output layer's kernels). Ids outside the table's range are ignored.
  std::vector<int> shortlist(const std::vector<int>& source_ids, int first, int best, const std::vector<int>& always,
                             int round_to = 1) const;
};

// IBM Model 1 on the encoded pairs (ids in [0, src_vocab) / [0, tgt_vocab)), `iterations` EM
// rounds, keeping each source id's `keep` most probable translations.
Lexicon train_lexicon(const std::vector<std::vector<int>>& src, const std::vector<std::vector<int>>& tgt,
                      int src_vocab, int tgt_vocab, int iterations, int keep);

// The same over encoded training pairs (data/batcher.h).
struct Example;
Lexicon train_lexicon(const std::vector<Example>& examples, int src_vocab, int tgt_vocab, int iterations, int keep);

// Text file: a header line "attnmt-lexicon 1 SRC_VOCAB TGT_VOCAB", a line "frequent N id...", and
// a line "SRC_ID N tgt:prob ..." per source id with translations. InputError naming the file and
// line when it is missing or malformed.
void write_lexicon(const Lexicon& lexicon, const std::string& path);
Lexicon read_lexicon(const std::string& path);

// Where a model's lexicon lives: SAVE_DIR/lexicon.txt.
std::string lexicon_path(const std::string& save_dir);

}  // namespace attnmt
