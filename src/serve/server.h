// `attnmt serve`: trained models behind HTTP/1.1 + JSON (cpp-httplib, nlohmann-json), decoded by
// the dynamic batcher (serve/batcher.h). Endpoints:
//   POST /translator/translate   OpenNMT-py's REST shape: [{"src": "...", "id": MODEL}] ->
//                                [[{"src", "tgt", "pred_score", "n_best"}, ...]] (id: a model's name
//                                or its index in --model order; default the first)
//   POST /v1/translate           {"model"?, "text": [...], "beam_size"?, "n_best"?, "attention"?} ->
//                                {"model", "translations": [[{"text", "score", "log_prob", "tokens",
//                                "attention"?: {"src", "tgt", "weights", "src_words", "tgt_words",
//                                "links"}}, ...n_best], ...]}
//   POST /v1/stream, /v1/score   streaming decoding, BLEU / chrF (serve/page_api.h)
//   GET  /                       the translation page (serve/page.h)
//   GET  /v1/models, /health, /metrics (Prometheus text)
// With --api-key, every endpoint but GET /health and GET / answers 401 without
// `Authorization: Bearer KEY` (serve/access.h). Errors are JSON {"error": "..."}: 400 (not UTF-8,
// bad JSON or fields, or a sentence that cannot be decoded), 401 (no or wrong key), 404 (unknown
// model or path), 413 (body over max_body_bytes, or more than max_request_sentences), 503 +
// Retry-After (queue full, or shutting down), 504 (not answered within request_timeout_s); 500
// only when the server failed (a batch that fails is decoded again sentence by sentence, so only
// the failing sentence's request gets it).
#pragma once
#include <string>
#include <vector>

#include "serve/access.h"
#include "serve/batcher.h"
#include "serve/request.h"
#include "serve/serve_options.h"

namespace attnmt {

// The limits the request parser applies (serve/request.h), from the options.
inline RequestLimits request_limits(const ServeOptions& o) {
  return {o.max_request_sentences, o.max_sentence_bytes, o.max_beam_size};
}

// Serves until SIGINT/SIGTERM (then: stops accepting, answers what is queued and in flight,
// returns). `ready` (if set) is called once the port is bound, with the port (for --port 0).
// RuntimeError when the address cannot be bound.
void serve(const std::vector<ServedModel>& models, const ServeOptions& options,
           const std::function<void(int)>& ready = {});

}  // namespace attnmt
