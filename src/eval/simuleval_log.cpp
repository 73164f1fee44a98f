#include "eval/simuleval_log.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {

std::string simuleval_json_line(const SimulEvalRecord& r) {
  // SimulEval's key order (Instance.summarize), so a diff against its own logs reads line by line.
  nlohmann::ordered_json j;
  j["index"] = r.index;
  j["prediction"] = r.prediction;
  j["delays"] = r.delays;
  j["elapsed"] = r.elapsed;
  j["prediction_length"] = r.prediction_length;
  j["reference"] = r.reference;
  j["source"] = r.source;
  j["source_length"] = r.source_length;
  return j.dump();
}

SimulEvalRecord parse_simuleval_line(const std::string& line, const std::string& where) {
  try {
    const auto j = nlohmann::json::parse(line);
    SimulEvalRecord r;
    r.index = j.at("index").get<int64_t>();
    r.prediction = j.at("prediction").get<std::string>();
    r.delays = j.at("delays").get<std::vector<int64_t>>();
    r.elapsed = j.value("elapsed", std::vector<double>{});
    r.prediction_length = j.value("prediction_length", static_cast<int64_t>(r.delays.size()));
    r.reference = j.value("reference", std::string());
    r.source = j.value("source", std::string());
    r.source_length = j.at("source_length").get<int64_t>();
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + ": not a SimulEval instances.log record (" + e.what() + ")");
  }
}

double simuleval_reference_words(const std::string& reference) {
  return 1.0 + static_cast<double>(std::count(reference.begin(), reference.end(), ' '));
}

LatencyInstance latency_instance(const SimulEvalRecord& r) {
  LatencyInstance x;
  x.delays.assign(r.delays.begin(), r.delays.end());
  x.source_length = static_cast<double>(r.source_length);
  x.reference_length = simuleval_reference_words(r.reference);
  return x;
}

std::vector<int64_t> word_delays(const std::vector<int64_t>& subword_delays, const std::vector<int64_t>& read_words,
                                 const std::vector<int64_t>& words_after, size_t output_words, int64_t end_read) {
  if (words_after.size() != subword_delays.size()) throw RuntimeError("word_delays: one word count per target subword");
  auto words_read = [&](int64_t read) {
    if (read < 0 || read >= static_cast<int64_t>(read_words.size())) throw RuntimeError("word_delays: a delay past the source");
    return read_words[static_cast<size_t>(read)];
  };
  std::vector<int64_t> delays;
  const auto T = subword_delays.size();
  for (size_t i = 0; i < output_words; ++i) {
    const auto word = static_cast<int64_t>(i) + 1;
    // Complete once a subword begins word i + 2 (a subword that carries two words completes the
    // first at once); the last word once the output ends.
    size_t first_in = T, first_after = T;
    for (size_t t = 0; t < T; ++t) {
      if (first_in == T && words_after[t] >= word) first_in = t;
      if (first_after == T && words_after[t] > word) first_after = t;
    }
    if (first_in == T) throw RuntimeError("word_delays: the output has fewer words than the subwords give");
    delays.push_back(words_read(first_after == T ? end_read : subword_delays[first_after]));
  }
  return delays;
}

void write_simuleval_dir(const std::string& dir, const std::vector<SimulEvalRecord>& records) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("--simuleval-dir " + dir + ": cannot create it (" + ec.message() + ")");
  std::string log;
  for (const auto& r : records) log += simuleval_json_line(r) + "\n";
  write_file_atomic(dir + "/instances.log", log);
  write_file_atomic(dir + "/config.yaml", "source_type: text\ntarget_type: text\n");
}

}  // namespace attnmt
