// From subword attention to word alignments.
//
// Words are the whitespace-separated tokens of a line (as in gold alignments and fast_align's
// input). The model reads the line as text: for tokenised input ("nicht , daß") the tokens are
// first joined back the way raw text is written ("nicht, daß": detokenize() below), since
// attnmt's models see raw text in training; each token keeps its byte span in that text.
// SentencePiece's own piece offsets then say which word(s) each piece covers (map_pieces()), and
// the piece x piece attention is merged into a word x word matrix (merge_attention()):
//   - source side: a word's weight is the SUM of its pieces' weights (the probability mass the
//     decoder put on that word);
//   - target side: a word's row is the MEAN of its pieces' rows (each piece is one decoding step
//     that saw the whole source);
//   - the end-of-sentence column is dropped and each row renormalised over the real words, so a
//     row is a distribution over source words; the end-of-sentence row is dropped.
// A piece that overlaps two words (BPE can glue a comma to a word when no space is between
// them) counts for both; a piece that covers no word (a lone "▁") counts for the next word.
// Links: one per target word at the argmax of its row (ties: the first), or every cell >= a
// threshold.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "align/links.h"

namespace attnmt {

std::vector<std::string> split_words(const std::string& line);

struct TextWithWords {
  std::string text;                              // what the model reads
  std::vector<std::pair<size_t, size_t>> spans;  // per word: byte range [begin, end) in text
};

// Joins tokens with single spaces (as_is), or with the detokenizer's rules: no space before
// , . ; : ! ? ) ] } % … and clitics ('s 're 've 'll 'd 'm n't), no space after ( [ { ¿ ¡ „,
// and a standalone " or ' alternates between opening (glued to the next token) and closing
// (glued to the previous one).
TextWithWords join_words(const std::vector<std::string>& words, bool detokenize);

// For each piece (byte range [begin, end) in the same text), the words it belongs to.
std::vector<std::vector<int>> map_pieces(const std::vector<std::pair<size_t, size_t>>& pieces,
                                         const std::vector<std::pair<size_t, size_t>>& words);

// Words of a generated target from its pieces: a piece starting with "▁" starts a new word
// (the detokenized output is the pieces with "▁" read as a space). Special pieces ("</s>") map
// to no word. Returns the words and, per piece, its word (as map_pieces does).
struct PieceWords {
  std::vector<std::string> words;
  std::vector<std::vector<int>> piece_to_words;
};
PieceWords words_from_pieces(const std::vector<std::string>& pieces);

// attention [target pieces][source pieces] -> [target words][source words] as described above.
// Rows and columns of pieces that map to no word (end of sentence) are dropped. A target word
// with no piece, or whose source weight is all on words-less pieces, gets an all-zero row.
std::vector<std::vector<float>> merge_attention(const std::vector<std::vector<float>>& attention,
                                                const std::vector<std::vector<int>>& tgt_piece_words,
                                                const std::vector<std::vector<int>>& src_piece_words, size_t tgt_words,
                                                size_t src_words);

// Links {source word, target word}: argmax per target row (rows that are all zero give none),
// or every cell >= threshold (threshold > 0).
Links links_from_attention(const std::vector<std::vector<float>>& words, double threshold = 0);

}  // namespace attnmt
