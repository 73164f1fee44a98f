#include "serve/page_api.h"

#include <algorithm>
#include <chrono>

#include "align/words.h"
#include "attention/registry.h"
#include "decoding/streaming.h"
#include "eval/metrics.h"
#include "serve/http_error.h"
#include "serve/request.h"
#include "serve/server.h"

namespace attnmt {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxStreamSentences = 64;

// A list of strings, each at most max_bytes; 400 / 413 naming the field otherwise.
std::vector<std::string> string_list(const json& body, const char* key, size_t max_lines, size_t max_bytes) {
  if (!body.contains(key) || !body[key].is_array())
    throw HttpError{400, std::string(key) + ": expected a list of strings"};
  const auto& list = body[key];
  if (list.size() > max_lines) {
    throw HttpError{413, std::string(key) + ": " + std::to_string(list.size()) + " lines (at most " +
                             std::to_string(max_lines) + ")"};
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) throw HttpError{400, std::string(key) + "[" + std::to_string(i) + "]: expected a string"};
    out.push_back(list[i].get<std::string>());
    if (out.back().size() > max_bytes) {
      throw HttpError{413, std::string(key) + "[" + std::to_string(i) + "] has " + std::to_string(out.back().size()) +
                               " bytes (at most " + std::to_string(max_bytes) + ")"};
    }
  }
  return out;
}

void check_fields(const json& body, const std::vector<std::string>& fields) {
  if (!body.is_object()) throw HttpError{400, "expected a JSON object"};
  std::string names;
  for (const auto& f : fields) names += (names.empty() ? "" : ", ") + f;
  for (const auto& item : body.items()) {
    if (std::find(fields.begin(), fields.end(), item.key()) == fields.end()) {
      throw HttpError{400, "unknown field '" + item.key() + "' (fields: " + names + ")"};
    }
  }
}

std::vector<std::string> pieces_of(const Tokenizer& tokenizer, const std::vector<int64_t>& ids) {
  std::vector<std::string> pieces;
  for (auto id : ids) pieces.push_back(tokenizer.piece(static_cast<int>(id)));
  return pieces;
}

}  // namespace

json score_json(const json& body, size_t max_sentences, size_t max_sentence_bytes) {
  check_fields(body, {"hypotheses", "references"});
  const auto hyps = string_list(body, "hypotheses", max_sentences, max_sentence_bytes);
  const auto refs = string_list(body, "references", max_sentences, max_sentence_bytes);
  if (hyps.size() != refs.size()) {
    throw HttpError{400, "hypotheses has " + std::to_string(hyps.size()) + " lines but references " +
                             std::to_string(refs.size()) + " (one reference per hypothesis)"};
  }
  if (hyps.empty()) throw HttpError{400, "hypotheses: no line to score"};
  const auto bleu = corpus_bleu(hyps, refs);
  const auto chrf = corpus_chrf(hyps, refs);
  return {{"bleu", bleu.score},
          {"chrf", chrf.score},
          {"sentences", hyps.size()},
          {"bleu_signature", bleu.signature()},
          {"chrf_signature", chrf.signature()},
          {"bleu_detail", bleu_json(bleu)}};
}

json stream_json(const json& body, const std::vector<ServedModel>& models, const ServeOptions& limits,
                 std::timed_mutex& gate) {
  check_fields(body, {"model", "text", "lookahead"});
  // The model and the text by /v1/translate's rules (serve/request.h): the same names, limits and
  // messages.
  json fields = json::object();
  for (const char* key : {"model", "text"}) {
    if (body.contains(key)) fields[key] = body[key];
  }
  std::vector<ModelChoice> choices;
  for (const auto& m : models) choices.push_back({m.name, m.defaults.search.beam_size, m.defaults.search.n_best});
  const auto request = parse_v1_request(
      fields, choices, RequestLimits{limits.max_request_sentences, limits.max_sentence_bytes, limits.max_beam_size});
  const auto& model = models[request.model];
  if (!model.streams) {
    throw HttpError{400, "model '" + model.name +
                             "' cannot stream: streaming needs an attention that stops hard and "
                             "never looks right of its stop (" + attention_names_with(&AttentionTraits::streams) +
                             "; with hard_decode), it has '" +
                             model.attention + "'"};
  }
  // Each sentence is decoded alone and re-encoded at every READ: fewer per request than translations.
  if (request.sentences.size() > kMaxStreamSentences) {
    throw HttpError{413, "text: " + std::to_string(request.sentences.size()) + " sentences to stream (at most " +
                             std::to_string(kMaxStreamSentences) + ")"};
  }
  StreamingOptions options;
  options.search = model.defaults.search;
  options.max_source_tokens = model.defaults.max_source_tokens;
  if (body.contains("lookahead")) {
    const auto& v = body["lookahead"];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > options.max_source_tokens) {
      throw HttpError{400, "lookahead: expected an integer from 0 to " + std::to_string(options.max_source_tokens) +
                               ", got " + v.dump()};
    }
    options.lookahead = v.get<int>();
  }
  std::unique_lock<std::timed_mutex> lock(gate, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::duration<double>(limits.request_timeout_s))) {
    throw HttpError{503, "another streaming request is being decoded; retry later"};
  }
  const auto& tokenizers = *model.tokenizers;
  const auto encoded = encode_sources(*tokenizers.src, request.sentences, options.max_source_tokens);
  json streams = json::array();
  for (const auto& ids : encoded) {
    json s = {{"text", ""},     {"src", json::array()}, {"tgt", json::array()}, {"delays", json::array()},
              {"lagging", 0.0}, {"finished", true}};
    if (!ids.empty()) {  // a blank line stays blank, as in translate --streaming
      const std::vector<int64_t> source(ids.begin(), ids.end());
      const auto r = stream_sentence(*model.step, source, options);
      s["text"] = tokenizers.tgt->decode(std::vector<int>(r.tokens.begin(), r.tokens.end()));
      s["src"] = pieces_of(*tokenizers.src, source);
      s["tgt"] = pieces_of(*tokenizers.tgt, r.tokens);
      s["delays"] = r.delays;
      s["lagging"] = average_lagging(r.delays, r.source_tokens);
      s["finished"] = r.finished;
    }
    streams.push_back(s);
  }
  return {{"model", model.name}, {"lookahead", options.lookahead}, {"streams", streams}};
}

json word_alignment_json(const Translation& t) {
  const auto src = words_from_pieces(t.src_pieces);
  const auto tgt = words_from_pieces(t.tgt_pieces);
  const auto merged =
      merge_attention(t.attention, tgt.piece_to_words, src.piece_to_words, tgt.words.size(), src.words.size());
  json links = json::array();
  for (const auto& [s, w] : links_from_attention(merged)) links.push_back({s, w});
  return {{"src_words", src.words}, {"tgt_words", tgt.words}, {"links", links}};
}

}  // namespace attnmt
