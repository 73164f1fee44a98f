// Latency metrics (eval/latency.h) against SimulEval's own scorers on recorded delays
// (tests/data/simuleval/: instances.log scored by scripts/simuleval_fixtures/make.sh), plus
// hand-computed cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/latency.h"
#include "eval/simuleval_log.h"

namespace {

const std::string kSimulEvalDir = std::string(ATTNMT_TEST_DATA_DIR) + "/simuleval/";

std::vector<attnmt::LatencyInstance> read_log() {
  std::ifstream in(kSimulEvalDir + "instances.log");
  REQUIRE(in.good());
  std::vector<attnmt::LatencyInstance> instances;
  for (std::string line; std::getline(in, line);) {
    instances.push_back(attnmt::latency_instance(attnmt::parse_simuleval_line(line, "instances.log")));
  }
  return instances;
}

double field(const attnmt::LatencyScores& s, const std::string& name) {
  for (const auto& [n, v] : attnmt::latency_fields(s)) {
    if (n == name) return v;
  }
  FAIL("no metric " << name);
  return 0;
}

}  // namespace

TEST_CASE("Latency metrics equal SimulEval's scorers on every recorded instance and the corpus", "[latency]") {
  std::ifstream in(kSimulEvalDir + "expected.json");
  REQUIRE(in.good());
  const auto expected = nlohmann::json::parse(in);
  const auto instances = read_log();
  REQUIRE(instances.size() == expected.at("instances").size());
  size_t compared = 0;
  for (size_t i = 0; i < instances.size(); ++i) {
    const auto& e = expected.at("instances")[i];
    CHECK(instances[i].reference_length == e.at("reference_length").get<double>());
    if (instances[i].delays.empty()) {
      CHECK(e.at("metrics").empty());  // SimulEval skips an empty output
      continue;
    }
    const auto s = attnmt::instance_latency(instances[i]);
    for (const auto& [name, value] : e.at("metrics").items()) {
      INFO("instance " << i << " " << name);
      CHECK(field(s, name) == Approx(value.get<double>()).margin(1e-6).epsilon(0));
      ++compared;
    }
  }
  CHECK(compared == 7 * (instances.size() - 1));
  const auto corpus = attnmt::corpus_latency(instances);
  CHECK(corpus.scored == instances.size() - 1);
  for (const auto& [name, value] : expected.at("corpus").items()) {
    INFO("corpus " << name);
    CHECK(field(corpus.mean, name) == Approx(value.get<double>()).margin(1e-6).epsilon(0));
  }
}

TEST_CASE("The recorded cases include a longer-than-reference and an empty output", "[latency]") {
  const auto instances = read_log();
  bool longer = false, empty = false;
  for (const auto& x : instances) {
    if (x.delays.empty()) empty = true;
    if (!x.delays.empty() && static_cast<double>(x.delays.size()) > x.reference_length) {
      const auto s = attnmt::instance_latency(x);
      longer = longer || s.al != s.laal;  // where AL and LAAL part
    }
  }
  CHECK(longer);
  CHECK(empty);
}

TEST_CASE("AL, LAAL, AP and DAL on a hand-computed wait-1 case", "[latency]") {
  // |x| = 4, 4 target words written after 1, 2, 3, 4 source words: AL = mean(1-0, 2-1, 3-2, 4-3) = 1
  attnmt::LatencyInstance x{{1, 2, 3, 4}, 4, 4};
  auto s = attnmt::instance_latency(x);
  CHECK(s.al == Approx(1));
  CHECK(s.al_stacl == Approx(1));
  CHECK(s.laal == Approx(1));
  CHECK(s.ap == Approx(10.0 / 16));
  CHECK(s.dal == Approx(1));
  // The reference twice as long: gamma = 8/4, AL = mean(1, 2 - 0.5, 3 - 1, 4 - 1.5) = 2.0 (tau = 4)
  x.reference_length = 8;
  s = attnmt::instance_latency(x);
  CHECK(s.al == Approx((1 + 1.5 + 2 + 2.5) / 4));
  CHECK(s.al_stacl == Approx(1));
  CHECK(s.laal == Approx(s.al));  // max(4, 8) = the reference
  CHECK(s.ap == Approx(10.0 / 32));
  // DAL: g' = 4, max(4, 4 + 1) = 5, 6, 7 with gamma 1: mean(4, 5-1, 6-2, 7-3) = 4
  CHECK(attnmt::differentiable_average_lagging({4, 4, 4, 4}, 4) == Approx(4));
}

TEST_CASE("Subword delays to SimulEval's word delays, by hand", "[latency]") {
  // Source "ein Mann läuft" as ein | Man n | läuft: 0..4 subwords touch 0, 1, 2, 2, 3 words.
  const std::vector<int64_t> read_words{0, 1, 2, 2, 3};
  // Target "a man runs" as a | m an | runs, written after 1, 2, 3, 4 subwords read, ended at 4.
  const std::vector<int64_t> delays{1, 2, 3, 4};
  const std::vector<int64_t> words_after{1, 2, 2, 3};
  // "a" goes out when "m" begins the next word (2 subwords read, "Man" touched: 2 words), "man"
  // when "runs" begins it (4 read: 3 words), "runs" when the output ends.
  CHECK(attnmt::word_delays(delays, read_words, words_after, 3, 4) == std::vector<int64_t>{2, 3, 3});
  // Ended earlier (cut at decode.max_length after 3 read): the last word goes out then.
  CHECK(attnmt::word_delays({1, 2, 3}, read_words, {1, 2, 2}, 2, 3) == std::vector<int64_t>{2, 2});
  // A subword that carries two words completes the first at once.
  CHECK(attnmt::word_delays({2, 4}, read_words, {2, 3}, 3, 4) == std::vector<int64_t>{2, 3, 3});
  // A trailing subword that adds no word (a lone space) does not complete the last word.
  CHECK(attnmt::word_delays({1, 2, 3}, read_words, {1, 1, 1}, 1, 4) == std::vector<int64_t>{3});
  CHECK(attnmt::word_delays({}, read_words, {}, 0, 4).empty());
  CHECK_THROWS(attnmt::word_delays({1, 5}, read_words, {1, 2}, 2, 4));  // a delay past the source
}

TEST_CASE("A SimulEval record round-trips and scores as SimulEval reads it", "[latency]") {
  attnmt::SimulEvalRecord r;
  r.index = 3;
  r.prediction = "a man runs";
  r.delays = {1, 2, 3};
  r.elapsed = {0, 0, 0};
  r.prediction_length = 3;
  r.reference = "a  man is running";  // SimulEval: 5 words (split on every single space)
  r.source = "ein Mann läuft";
  r.source_length = 3;
  const auto back = attnmt::parse_simuleval_line(attnmt::simuleval_json_line(r), "test");
  CHECK(back.prediction == r.prediction);
  CHECK(back.delays == r.delays);
  CHECK(back.reference == r.reference);
  CHECK(back.source_length == 3);
  CHECK(attnmt::latency_instance(back).reference_length == 5);
  CHECK_THROWS_WITH(attnmt::parse_simuleval_line("{\"index\": 1}", "log:2"), Catch::Contains("log:2"));
}
