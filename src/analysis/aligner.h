// What a trained model's attention says about word alignment: teacher-forced ("force-decoded")
// attention over (source, reference) pairs, or the attention of its own translation, merged from
// subword pieces to words (align/words.h) and turned into links. Used by `attnmt align`,
// `attnmt plot` and `attnmt compare`.
#pragma once
#include <string>
#include <vector>

#include "align/links.h"
#include "decoding/translator.h"
#include "io/model_file.h"

namespace attnmt {

struct AlignOptions {
  bool detokenize = true;  // join tokenised words back into raw-looking text for the model
  double threshold = 0;    // 0: one link per target word at the argmax; > 0: every weight >= it
  int batch_size = 32;     // sentence pairs per forward pass
};

struct SentenceAttention {
  std::vector<std::string> src_words, tgt_words;
  std::vector<std::vector<float>> words;  // [tgt words][src words], rows sum to 1 (or 0)
  std::string translation;                // translate_with_attention only
};

// Teacher-forced attention of the model for each pair (Seq2Seq::forward, eval mode), merged to
// the words of the lines (whitespace tokens). Pairs with an empty side give an empty matrix.
std::vector<SentenceAttention> forced_attention(LoadedModel& model, const std::vector<std::string>& src,
                                                const std::vector<std::string>& tgt, const AlignOptions& options);

// Links per pair from forced_attention.
std::vector<Links> align(LoadedModel& model, const std::vector<std::string>& src, const std::vector<std::string>& tgt,
                         const AlignOptions& options);
Links links_of(const SentenceAttention& sentence, const AlignOptions& options);

// The model's own translation (search as in `options`) with its attention merged to words:
// source words are the line's whitespace tokens, target words those of the output.
std::vector<SentenceAttention> translate_with_attention(LoadedModel& model, const std::vector<std::string>& src,
                                                        TranslateOptions options);

}  // namespace attnmt
