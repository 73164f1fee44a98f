// libFuzzer target: a request body of `attnmt serve`, read as the server reads it
// (serve/request.h): the body checked for UTF-8 and parsed, then taken as a POST /v1/translate, a
// POST /v1/alternatives and an OpenNMT-py /translator/translate body for three served models (one
// that cannot stream), and the Authorization header check (serve/access.h) run on the same bytes. A refusal must be an HttpError with a 4xx status
// whose {"error"} answer is valid JSON; an accepted request must keep the limits it was checked
// against. Anything else (another exception, a 5xx, a crash, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "serve/access.h"
#include "serve/request.h"

namespace {

const std::vector<attnmt::ModelChoice> kModels = {
    {"tiny", 5, 1, ""}, {"100", 3, 2, ""}, {"onmt", 5, 1, "it decodes with decode.search_rules opennmt"}};
const attnmt::RequestLimits kLimits = {/*max_request_sentences=*/40, /*max_sentence_bytes=*/512,
                                       /*max_beam_size=*/8};

void refused(const attnmt::HttpError& e) {
  if (e.status < 400 || e.status > 499) std::abort();
  const auto answer = nlohmann::json::parse(attnmt::error_json(e.message));  // throws (a finding) if not JSON
  if (!answer.contains("error")) std::abort();
}

void check(const attnmt::ModelRequest& r) {
  if (r.model >= kModels.size() || r.sentences.size() != r.positions.size()) std::abort();
  if (r.sentences.size() > kLimits.max_request_sentences) std::abort();
  for (const auto& s : r.sentences) {
    if (s.size() > kLimits.max_sentence_bytes) std::abort();
  }
  if (r.beam_size < 1 || r.beam_size > kLimits.max_beam_size || r.n_best < 1 || r.n_best > r.beam_size) std::abort();
  // A streamed request is one sentence, for a model that can stream its words.
  if (r.stream && (r.sentences.size() != 1 || !kModels[r.model].not_interactive.empty())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  nlohmann::json parsed;
  try {
    parsed = attnmt::parse_json_body(body);
  } catch (const attnmt::HttpError& e) {
    refused(e);
    parsed = nullptr;
  }
  if (!parsed.is_null()) {
    try {
      check(attnmt::parse_v1_request(parsed, kModels, kLimits));
    } catch (const attnmt::HttpError& e) {
      refused(e);
    }
    try {
      const auto r = attnmt::parse_alternatives_request(parsed, kModels, kLimits);
      if (r.model >= kModels.size() || !kModels[r.model].not_interactive.empty()) std::abort();
      if (r.k < 1 || r.k > kLimits.max_beam_size || r.beam_size < 1 || r.beam_size > kLimits.max_beam_size) std::abort();
      if (r.text.size() > kLimits.max_sentence_bytes || r.prefix.size() > kLimits.max_sentence_bytes) std::abort();
      if (!(r.prefix_bias_beta >= 0 && r.prefix_bias_beta < 1)) std::abort();
    } catch (const attnmt::HttpError& e) {
      refused(e);
    }
    try {
      for (const auto& r : attnmt::parse_opennmt_request(parsed, kModels, kLimits)) check(r);
    } catch (const attnmt::HttpError& e) {
      refused(e);
    }
    (void)attnmt::dump_json(parsed);
  }
  attnmt::AccessOptions access{"k3y", "https://app.example"};
  const auto d = attnmt::check_access(access, "POST", "/v1/translate", body, body);
  if (d.status != 0 && d.status != 401) std::abort();
  if (d.status == 0 && body != "Bearer k3y") std::abort();  // only the key lets a request in
  // The key comparison against std::string's: equal to a copy, unequal to the body with one byte
  // changed, cut by one, or longer by one, and to the key exactly when == says so.
  if (!attnmt::constant_time_equal(body, std::string(body.begin(), body.end()))) std::abort();
  if (attnmt::constant_time_equal(body, "k3y") != (body == "k3y")) std::abort();
  if (attnmt::constant_time_equal(body, body + '\0')) std::abort();
  if (!body.empty()) {
    std::string changed = body;
    changed[body.size() / 2] = static_cast<char>(changed[body.size() / 2] ^ 0x20);
    if (attnmt::constant_time_equal(body, changed)) std::abort();
    if (attnmt::constant_time_equal(body, body.substr(0, body.size() - 1))) std::abort();
  }
  return 0;
}
