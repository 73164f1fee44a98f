// Alternatives to pick from, for interactive translation: after a target prefix is forced, the k
// most probable next target subwords, each with its probability and the best translation that
// goes on from it: what CTranslate2's translate_batch(target_prefix=..., return_alternatives=True)
// returns, there in its Python API only. The distribution is the model's own at that position
// (log_softmax of the step's logits after the prefix was fed, teacher-forced); each completion is
// beam search (the model's options) with the prefix and that subword forced, as `translate
// --prefix` decodes, or biased towards them (AlternativesQuery::prefix_bias_beta). `serve` answers it as POST /v1/alternatives.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "decoding/step_model.h"
#include "decoding/translation.h"
#include "decoding/translator.h"

namespace attnmt {

struct Alternative {
  int64_t token = 0;       // the next target subword (eos: the sentence ends after the prefix)
  std::string piece;       // its SentencePiece piece ("▁dog"), "</s>" for eos
  double log_prob = 0;     // log P(token | source, prefix)
  Translation completion;  // the best translation that begins with prefix + token
};

struct Alternatives {
  std::vector<int64_t> prefix;            // the prefix's target subwords, as the tokenizer cut it
  std::vector<std::string> prefix_pieces;
  std::vector<Alternative> next;          // k of them, the most probable first
};

struct AlternativesQuery {
  std::string prefix;  // target text ("" = at the start)
  int k = 5;           // how many next subwords (>= 1)
  // In [0, 1): 0 forces prefix + subword in each completion; above, the completion's search is
  // only biased towards them (SentenceGuide::prefix_bias_beta), so it may leave them. The k
  // subwords and their probabilities are the model's own after the prefix either way.
  double prefix_bias_beta = 0;
};

// The k best next subwords after the query's prefix for `source`. InputError when the source is
// blank, the prefix leaves no room in the sentence's maximum output length (decode.max_length_ratio,
// decode.max_length) for one more subword, k < 1, or the bias is outside [0, 1); options must be
// attnmt's search rules without sampling (InputError otherwise).
Alternatives next_alternatives(StepModel& model, const Tokenizers& tokenizers, const std::string& source,
                               const AlternativesQuery& query, const TranslateOptions& options);

}  // namespace attnmt
