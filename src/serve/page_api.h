// What the translation page (serve/page.h) needs besides translations, as endpoints anyone can
// call:
//   POST /v1/score   {"hypotheses": [...], "references": [...]} -> {"bleu", "chrf", "sentences",
//                    "bleu_signature", "chrf_signature", "bleu_detail": {...}}: corpus BLEU and
//                    chrF2 as sacreBLEU computes them (eval/metrics.h)
//   POST /v1/stream  {"model"?, "text": [...], "lookahead"?} -> {"model", "lookahead", "streams":
//                    [{"text", "src", "tgt", "delays", "lagging", "finished"}, ...]}: streaming
//                    decoding (decoding/streaming.h) as `translate --streaming` does it: `delays`
//                    are the source subwords read when each target subword was written, `lagging`
//                    their average lagging, as `--delays` writes them
// and the word alignment a translation's attention implies (in /v1/translate's attention).
// Errors are HttpError (serve/http_error.h).
#pragma once
#include <mutex>
#include <nlohmann/json.hpp>

#include "decoding/translator.h"
#include "serve/batcher.h"

namespace attnmt {

struct ServeOptions;

nlohmann::json score_json(const nlohmann::json& body, size_t max_sentences, size_t max_sentence_bytes);

// Streaming decodes one sentence at a time outside the batcher (its READ/WRITE policy re-encodes
// the prefix at each READ, which batches cannot share); `gate` lets one such request decode at a
// time, so streaming cannot take every core from the batch workers.
nlohmann::json stream_json(const nlohmann::json& body, const std::vector<ServedModel>& models,
                           const ServeOptions& limits, std::timed_mutex& gate);

// {"src_words", "tgt_words", "links": [[source word, target word], ...]}: the pieces joined into
// words at SentencePiece's word starts ("▁"), the attention merged to words and linked at each
// target word's argmax (align/words.h, as `attnmt align` links a translation).
nlohmann::json word_alignment_json(const Translation& translation);

}  // namespace attnmt
