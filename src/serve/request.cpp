#include "serve/request.h"

#include <algorithm>
#include <cstdio>

#include "util/text_io.h"

namespace attnmt {
namespace {

using json = nlohmann::json;

// A model by name (a number is a name too: `--model 100=FILE` answers OpenNMT-py clients, whose
// default model id is 100), else a number by its index in --model order; null: the first model.
size_t find_model(const std::vector<ModelChoice>& models, const json& id) {
  if (id.is_null()) return 0;
  if (!id.is_string() && !id.is_number_integer()) {
    throw HttpError{400, "model id: expected a name or an index, got " + std::string(id.type_name())};
  }
  const std::string name = id.is_string()            ? id.get<std::string>()
                           : id.is_number_unsigned() ? std::to_string(id.get<uint64_t>())
                                                     : std::to_string(id.get<int64_t>());
  for (size_t i = 0; i < models.size(); ++i) {
    if (models[i].name == name) return i;
  }
  if (id.is_number_unsigned() && id.get<uint64_t>() < models.size()) return static_cast<size_t>(id.get<uint64_t>());
  std::string names;
  for (const auto& m : models) names += (names.empty() ? "" : ", ") + m.name;
  throw HttpError{404, "unknown model " + dump_json(id) + " (models: " + names + ")"};
}

void check_sentence(const std::string& text, size_t index, const RequestLimits& limits) {
  if (text.size() > limits.max_sentence_bytes) {
    throw HttpError{413, "sentence " + std::to_string(index) + " has " + std::to_string(text.size()) +
                             " bytes (at most " + std::to_string(limits.max_sentence_bytes) + ")"};
  }
}

void check_count(size_t sentences, const char* what, const RequestLimits& limits) {
  if (sentences > limits.max_request_sentences) {
    throw HttpError{413, std::string(what) + std::to_string(sentences) + " sentences in one request (at most " +
                             std::to_string(limits.max_request_sentences) + ")"};
  }
}

int int_field(const json& body, const char* key, int fallback, int low, int high) {
  if (!body.contains(key)) return fallback;
  const auto& v = body[key];
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() >= static_cast<uint64_t>(std::max(low, 0)) &&
                                                     v.get<uint64_t>() <= static_cast<uint64_t>(std::max(high, 0))
                        : v.is_number_integer() ? v.get<int64_t>() >= low && v.get<int64_t>() <= high
                                                : false;
  if (!in_range) {
    throw HttpError{400, std::string(key) + ": expected an integer from " + std::to_string(low) + " to " +
                             std::to_string(high) + ", got " + dump_json(v)};
  }
  return static_cast<int>(v.get<int64_t>());
}

}  // namespace

json parse_json_body(const std::string& body) {
  // RFC 8259 section 8.1: JSON text is UTF-8. Checked first, so that the message names the byte
  // (the parser's own message would quote the bad bytes back, and they cannot be sent as JSON).
  const size_t bad = find_invalid_utf8(body);
  if (bad != std::string::npos) {
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(body[bad]));
    throw HttpError{400, "the body is not UTF-8: byte " + std::to_string(bad) + " (" + byte +
                             ") does not belong to a UTF-8 character"};
  }
  try {
    return json::parse(body);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw HttpError{400, std::string("invalid JSON: ") + e.what()};
  }
}

ModelRequest parse_v1_request(const json& body, const std::vector<ModelChoice>& models, const RequestLimits& limits) {
  if (!body.is_object()) throw HttpError{400, "expected an object {\"text\": [...], ...}"};
  for (const auto& [key, value] : body.items()) {
    if (key != "model" && key != "text" && key != "beam_size" && key != "n_best" && key != "attention" &&
        key != "stream") {
      throw HttpError{400, "unknown field '" + key + "' (fields: model, text, beam_size, n_best, attention, stream)"};
    }
  }
  ModelRequest request;
  request.model = find_model(models, body.contains("model") ? body["model"] : json());
  const auto& model = models[request.model];
  if (!body.contains("text") || !body["text"].is_array()) throw HttpError{400, "text: expected a list of strings"};
  const auto& text = body["text"];
  check_count(text.size(), "text: ", limits);
  for (size_t i = 0; i < text.size(); ++i) {
    if (!text[i].is_string()) throw HttpError{400, "text[" + std::to_string(i) + "]: expected a string"};
    request.sentences.push_back(text[i].get<std::string>());
    request.positions.push_back(i);
    check_sentence(request.sentences.back(), i, limits);
  }
  request.beam_size = int_field(body, "beam_size", model.beam_size, 1, limits.max_beam_size);
  request.n_best = int_field(body, "n_best", std::min(model.n_best, request.beam_size), 1, request.beam_size);
  if (body.contains("attention")) {
    if (!body["attention"].is_boolean()) throw HttpError{400, "attention: expected true or false"};
    request.attention = body["attention"].get<bool>();
  }
  if (body.contains("stream")) {
    if (!body["stream"].is_boolean()) throw HttpError{400, "stream: expected true or false"};
    request.stream = body["stream"].get<bool>();
  }
  if (request.stream && request.sentences.size() != 1) {
    // A person at a keyboard waits for one sentence; the events name no sentence.
    throw HttpError{400, "stream: text must hold exactly one sentence (it has " +
                             std::to_string(request.sentences.size()) + "); send one request per sentence"};
  }
  if (request.stream && !model.not_interactive.empty()) {
    throw HttpError{400, "stream: model '" + model.name + "' cannot stream its words: " + model.not_interactive};
  }
  return request;
}

AlternativesRequest parse_alternatives_request(const json& body, const std::vector<ModelChoice>& models,
                                               const RequestLimits& limits) {
  if (!body.is_object()) throw HttpError{400, "expected an object {\"text\": \"...\", \"prefix\": \"...\", \"k\": N}"};
  for (const auto& [key, value] : body.items()) {
    if (key != "model" && key != "text" && key != "prefix" && key != "k" && key != "beam_size" &&
        key != "prefix_bias_beta") {
      throw HttpError{400, "unknown field '" + key + "' (fields: model, text, prefix, k, beam_size, prefix_bias_beta)"};
    }
  }
  AlternativesRequest request;
  request.model = find_model(models, body.contains("model") ? body["model"] : json());
  const auto& model = models[request.model];
  for (auto [key, field] : {std::pair{"text", &request.text}, std::pair{"prefix", &request.prefix}}) {
    if (!body.contains(key)) continue;
    if (!body[key].is_string()) throw HttpError{400, std::string(key) + ": expected a string"};
    *field = body[key].get<std::string>();
    if (field->size() > limits.max_sentence_bytes) {
      throw HttpError{413, std::string(key) + " has " + std::to_string(field->size()) + " bytes (at most " +
                               std::to_string(limits.max_sentence_bytes) + ")"};
    }
  }
  if (!body.contains("text")) throw HttpError{400, "text: expected a string (the source sentence)"};
  request.k = int_field(body, "k", request.k, 1, limits.max_beam_size);
  request.beam_size = int_field(body, "beam_size", model.beam_size, 1, limits.max_beam_size);
  if (body.contains("prefix_bias_beta")) {
    const auto& v = body["prefix_bias_beta"];
    // is_number() holds for finite values only: JSON has no NaN or infinity.
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() < 1)) {
      throw HttpError{400, "prefix_bias_beta: expected a number in [0, 1) (0: the prefix is forced), got " +
                               dump_json(v)};
    }
    request.prefix_bias_beta = v.get<double>();
  }
  if (!model.not_interactive.empty()) {
    throw HttpError{400, "model '" + model.name + "' cannot give alternatives: " + model.not_interactive};
  }
  return request;
}

std::vector<ModelRequest> parse_opennmt_request(const json& body, const std::vector<ModelChoice>& models,
                                                const RequestLimits& limits) {
  if (!body.is_array()) throw HttpError{400, "expected a list of {\"src\": ..., \"id\": ...} objects"};
  check_count(body.size(), "", limits);
  std::vector<ModelRequest> requests(models.size());
  for (size_t i = 0; i < body.size(); ++i) {
    const auto& e = body[i];
    if (!e.is_object() || !e.contains("src") || !e["src"].is_string()) {
      throw HttpError{400, "entry " + std::to_string(i) + ": expected {\"src\": \"text\", \"id\": model}"};
    }
    auto& r = requests[find_model(models, e.contains("id") ? e["id"] : json())];
    r.sentences.push_back(e["src"].get<std::string>());
    r.positions.push_back(i);
    check_sentence(r.sentences.back(), i, limits);
  }
  std::vector<ModelRequest> used;
  for (size_t m = 0; m < models.size(); ++m) {
    if (requests[m].sentences.empty()) continue;
    // OpenNMT-py's answer has one n_best for the whole request (its server translates every entry
    // with the first entry's model): entries of models with other n_best cannot share it.
    if (!used.empty() && models[m].n_best != models[used[0].model].n_best) {
      throw HttpError{400, "entries " + std::to_string(used[0].positions[0]) + " and " +
                               std::to_string(requests[m].positions[0]) + " ask models of different n_best (" +
                               std::to_string(models[used[0].model].n_best) + " and " +
                               std::to_string(models[m].n_best) + "): send them in separate requests"};
    }
    requests[m].model = m;
    requests[m].beam_size = models[m].beam_size;
    requests[m].n_best = models[m].n_best;
    used.push_back(std::move(requests[m]));
  }
  return used;
}

SimulSegment parse_simul_segment(const json& body, const RequestLimits& limits) {
  if (!body.is_object()) throw HttpError{400, "expected a SimulEval segment (a JSON object), got " + std::string(body.type_name())};
  for (const auto& [key, value] : body.items()) {
    static const char* const known[] = {"index", "content", "finished", "is_empty", "data_type", "tgt_lang", "config"};
    if (std::find(std::begin(known), std::end(known), key) == std::end(known)) {
      throw HttpError{400, "unknown segment field '" + key + "'"};
    }
  }
  auto flag = [&](const char* key) {
    if (!body.contains(key)) return false;
    if (!body[key].is_boolean()) throw HttpError{400, std::string(key) + ": expected true or false, got " + body[key].dump()};
    return body[key].get<bool>();
  };
  SimulSegment segment;
  segment.finished = flag("finished");
  if (flag("is_empty")) return segment;
  const auto type = body.value("data_type", json());
  if (type != "text") {
    throw HttpError{400, "data_type: attnmt translates text segments (\"text\"), got " + type.dump()};
  }
  if (!body.contains("content") || !body["content"].is_string()) {
    throw HttpError{400, "content: expected the source word(s) as a string, got " +
                             (body.contains("content") ? body["content"].dump() : std::string("nothing"))};
  }
  segment.text = body["content"].get<std::string>();
  if (segment.text.size() > limits.max_sentence_bytes) {
    throw HttpError{413, "content: " + std::to_string(segment.text.size()) + " bytes (at most " +
                             std::to_string(limits.max_sentence_bytes) + ")"};
  }
  return segment;
}

json simul_output_segment(const std::string& words, bool finished) {
  // Every field of SimulEval's Segment and no other: it builds its dataclass from them.
  if (words.empty()) {
    return {{"index", 0},          {"content", json::array()}, {"finished", finished}, {"is_empty", true},
            {"data_type", nullptr}, {"tgt_lang", nullptr},      {"config", json::object()}};
  }
  return {{"index", 0},         {"content", words},    {"finished", finished}, {"is_empty", false},
          {"data_type", "text"}, {"tgt_lang", nullptr}, {"config", json::object()}};
}

std::string dump_json(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string error_json(const std::string& message) { return dump_json(json{{"error", message}}); }

}  // namespace attnmt
