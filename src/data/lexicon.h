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
// model's save dir as lexicon.bin.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace attnmt {

struct Lexicon {
  struct Translation {
    int target;  // target id
    float prob;  // t(target | source)
  };
  struct Row {  // one source id's translations, most probable first
    const Translation* first = nullptr;
    const Translation* last = nullptr;
    const Translation* begin() const { return first; }
    const Translation* end() const { return last; }
    size_t size() const { return static_cast<size_t>(last - first); }
    bool empty() const { return first == last; }
    const Translation& operator[](size_t k) const { return first[k]; }
  };

  int src_vocab = 0;
  int tgt_vocab = 0;
  std::vector<int> frequent;  // target ids by corpus frequency, most frequent first
  // Source id e's translations are entries[row_start[e], row_start[e + 1]) (the empty word's are
  // not kept): flat arrays, so that the file is read in a few large reads.
  std::vector<int> row_start;  // [src_vocab + 1]
  std::vector<Translation> entries;

  // Source id e's translations (empty for an id out of range).
  Row row(int e) const;
  // A lexicon from per-source-id rows (each most probable first).
  static Lexicon from_rows(int src_vocab, int tgt_vocab, std::vector<int> frequent,
                           const std::vector<std::vector<Translation>>& rows);

  // The sorted target ids a batch with these source ids may produce: frequent[0, first), the
  // `best` most probable translations of each source id, `always` (e.g. eos and unk), and then,
  // only to make the count a multiple of `round_to`, the next most frequent ids (fewer distinct
  // shapes for the output layer's kernels). Ids outside the table's range are ignored.
  std::vector<int> shortlist(const std::vector<int>& source_ids, int first, int best, const std::vector<int>& always,
                             int round_to = 1) const;
};

// What `attnmt lexicon` and training build by default: EM rounds, translations kept per source id.
constexpr int kLexiconIterations = 5;
constexpr int kLexiconKeep = 100;

// IBM Model 1 on the encoded pairs (ids in [0, src_vocab) / [0, tgt_vocab)), `iterations` EM
// rounds, keeping each source id's `keep` most probable translations.
Lexicon train_lexicon(const std::vector<std::vector<int>>& src, const std::vector<std::vector<int>>& tgt,
                      int src_vocab, int tgt_vocab, int iterations, int keep);

// The same over encoded training pairs (data/examples.h).
struct Example;
Lexicon train_lexicon(const std::vector<Example>& examples, int src_vocab, int tgt_vocab, int iterations, int keep);

// A binary file (layout in lexicon.cpp): arrays read straight into memory. InputError naming the
// file and what is wrong when it is missing, truncated or inconsistent.
void write_lexicon(const Lexicon& lexicon, const std::string& path);
Lexicon read_lexicon(const std::string& path);
// The same layout in memory (model files store it); `name` says where the bytes come from.
std::string lexicon_bytes(const Lexicon& lexicon);
Lexicon parse_lexicon(const std::string& bytes, const std::string& name);

// Where a model's lexicon lives: SAVE_DIR/lexicon.bin.
std::string lexicon_path(const std::string& save_dir);

}  // namespace attnmt
