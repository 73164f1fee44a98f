// What a client sends to `attnmt serve`, read and checked before anything is queued: the JSON
// body (which must be UTF-8), the fields of POST /v1/translate and of OpenNMT-py's
// /translator/translate, and the limits on sentences and beams. Every mistake of the client is an
// HttpError with a 4xx status and one message naming the problem; a 5xx is never the client's.
// No LibTorch and no HTTP library: the fuzz target tools/fuzz/fuzz_serve_request.cpp runs it alone.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/http_error.h"

namespace attnmt {

struct RequestLimits {
  size_t max_request_sentences = 1000;
  size_t max_sentence_bytes = 4096;
  int max_beam_size = 32;
};

// What the parser needs to know of a served model: its name and its default beam and n-best.
struct ModelChoice {
  std::string name;
  int beam_size = 5;
  int n_best = 1;
  // Why its search cannot say which words are decided before the end, so that it can neither
  // stream its words nor give alternatives ("" = it can).
  std::string not_interactive;
};

// One model's share of a request: its sentences, where they go in the answer, and the options.
struct ModelRequest {
  size_t model = 0;  // index into the served models
  std::vector<std::string> sentences;
  std::vector<size_t> positions;  // of each sentence in the request
  int beam_size = 5;
  int n_best = 1;
  bool attention = false;
  bool stream = false;  // answer as server-sent events, words as they are decided (one sentence)
};

// POST /v1/alternatives: the k best next target subwords after a prefix of the translation.
struct AlternativesRequest {
  size_t model = 0;
  std::string text;    // the source sentence
  std::string prefix;  // the translation's beginning, as the user has it ("" = none)
  int k = 5;
  int beam_size = 5;   // of the completions' search
  // In [0, 1): 0 forces prefix + subword in each completion, above biases its search towards
  // them (decoding/alternatives.h).
  double prefix_bias_beta = 0;
};

// The body as JSON: 400 naming the byte where it is not UTF-8, or where it is not JSON.
nlohmann::json parse_json_body(const std::string& body);

// POST /v1/translate: {"model"?, "text": [...], "beam_size"?, "n_best"?, "attention"?, "stream"?}.
// With "stream": true, text holds one sentence, and the model must be one whose words can be
// streamed (ModelChoice::not_interactive empty).
ModelRequest parse_v1_request(const nlohmann::json& body, const std::vector<ModelChoice>& models,
                              const RequestLimits& limits);

// POST /v1/alternatives: {"model"?, "text": "...", "prefix"?: "...", "k"?: 1-max_beam_size (5),
// "beam_size"?, "prefix_bias_beta"?: [0, 1) (0)}. text and prefix at most max_sentence_bytes each (413); a model whose search
// cannot give them (ModelChoice::not_interactive): 400.
AlternativesRequest parse_alternatives_request(const nlohmann::json& body, const std::vector<ModelChoice>& models,
                                               const RequestLimits& limits);

// POST /translator/translate: [{"src": "...", "id"?: model}, ...]; one ModelRequest per model named,
// in --model order (none for an empty list), every entry's src as sent (blank ones too: the server
// answers those itself, as OpenNMT-py does). Models of different n_best in one request: 400.
std::vector<ModelRequest> parse_opennmt_request(const nlohmann::json& body, const std::vector<ModelChoice>& models,
                                                const RequestLimits& limits);

// PUT /input of SimulEval's remote protocol (simuleval/evaluator/remote.py): a segment as
// simuleval/data/segments.py writes it, {"index", "content", "finished", "is_empty", "data_type",
// "tgt_lang", "config"}. A text segment (data_type "text", content a string: the next source
// word(s)) or an empty one (is_empty true: nothing new; with finished, the source is over). Speech
// segments, a content that is not text, or over max_sentence_bytes: 4xx naming the field.
struct SimulSegment {
  std::string text;  // "" for an empty segment
  bool finished = false;
};
SimulSegment parse_simul_segment(const nlohmann::json& body, const RequestLimits& limits);

// GET /output's answer, a segment SimulEval reads back (segment_from_json_string): a text segment
// with `words` (one space between them), or an empty segment when there are none; `finished` once
// the translation is complete.
nlohmann::json simul_output_segment(const std::string& words, bool finished);

// JSON text of `value` that never throws: bytes that are not UTF-8 (a path or a decoded sentence
// can hold them) become U+FFFD.
std::string dump_json(const nlohmann::json& value);

// {"error": message}, as dump_json writes it.
std::string error_json(const std::string& message);

}  // namespace attnmt
