// Paired significance tests (eval/significance.h) against sacreBLEU 2.6.0's own results on four
// systems (tests/data/sacrebleu/significance/, see its README), and hand-computed cases.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "eval/metrics.h"
#include "eval/significance.h"
#include "util/text_io.h"

using namespace attnmt;

namespace {

const std::string kDir = std::string(ATTNMT_TEST_DATA_DIR) + "/sacrebleu/significance/";
const std::vector<std::string> kSystems{"beam5.hyp", "greedy.hyp", "beam5_lp0.hyp", "beam2.hyp"};

std::vector<MetricStats> stats_of(bool bleu) {
  const auto refs = read_lines(kDir + "ref.en");
  std::vector<MetricStats> out;
  for (const auto& name : kSystems) {
    const auto hyps = read_lines(kDir + name);
    out.push_back(bleu ? bleu_stats(hyps, refs) : chrf_stats(hyps, refs));
  }
  return out;
}

nlohmann::json expected(const std::string& file) {
  std::ifstream in(kDir + file);
  return nlohmann::json::parse(in);
}

// sacreBLEU draws with NumPy, this with mt19937_64: p-values within 0.02, interval ends within
// 0.15 points, the scores exactly.
void check_against(const std::vector<SignificanceResult>& got, const nlohmann::json& want, const std::string& metric,
                   bool intervals) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const auto& w = want[k][metric];
    INFO(metric << " " << want[k]["system"]);
    CHECK(got[k].score == Approx(w["score"].get<double>()).epsilon(1e-12));
    if (k == 0) {
      CHECK_FALSE(got[k].p_value.has_value());
    } else {
      REQUIRE(got[k].p_value.has_value());
      CHECK(*got[k].p_value == Approx(w["p_value"].get<double>()).margin(0.02));
    }
    if (intervals) {
      REQUIRE(got[k].mean.has_value());
      const double lo = w["mean"].get<double>() - w["ci"].get<double>(), hi = w["mean"].get<double>() + w["ci"].get<double>();
      CHECK(*got[k].mean - *got[k].ci == Approx(lo).margin(0.15));
      CHECK(*got[k].mean + *got[k].ci == Approx(hi).margin(0.15));
    }
  }
}

}  // namespace

TEST_CASE("significance: sentence statistics sum to the corpus scores", "[significance]") {
  for (bool bleu : {true, false}) {
    for (const auto& m : stats_of(bleu)) {
      std::vector<double> sum(m.sentences.front().size(), 0.0);
      for (const auto& row : m.sentences)
        for (size_t i = 0; i < row.size(); ++i) sum[i] += row[i];
      INFO(bleu);
      CHECK(m.score(sum) > 0);
    }
  }
  const auto refs = read_lines(kDir + "ref.en");
  const auto hyps = read_lines(kDir + "greedy.hyp");
  const auto stats = stats_of(true)[1];
  std::vector<double> sum(stats.sentences.front().size(), 0.0);
  for (const auto& row : stats.sentences)
    for (size_t i = 0; i < row.size(); ++i) sum[i] += row[i];
  CHECK(bleu_from_stats(sum).score == corpus_bleu(hyps, refs).score);
}

TEST_CASE("significance: paired bootstrap agrees with sacreBLEU 2.6.0", "[significance]") {
  const auto want = expected("bs.json");
  check_against(paired_bootstrap(stats_of(true), 1000, 12345), want, "BLEU", true);
  check_against(paired_bootstrap(stats_of(false), 1000, 12345), want, "chrF2", true);
}

TEST_CASE("significance: paired approximate randomization agrees with sacreBLEU 2.6.0", "[significance]") {
  const auto want = expected("ar.json");
  check_against(paired_approximate_randomization(stats_of(true), 10000, 12345), want, "BLEU", false);
  check_against(paired_approximate_randomization(stats_of(false), 10000, 12345), want, "chrF2", false);
}

TEST_CASE("significance: hand-computed cases, and one seed gives one result", "[significance]") {
  // 80 scores 0..79: the 95% bounds are the 3rd smallest (2) and the 3rd largest (77).
  std::vector<double> scores(80);
  std::iota(scores.begin(), scores.end(), 0.0);
  const auto [mean, ci] = bootstrap_mean_ci(scores);
  CHECK(mean == 39.5);
  CHECK(ci == 37.5);
  // A system against itself: no trial differs by more than 0, so p = 1 / (n + 1) (sacreBLEU's rule).
  auto same = stats_of(true);
  same.resize(1);
  same.push_back(same.front());
  CHECK(*paired_approximate_randomization(same, 99, 1)[1].p_value == Approx(0.01));
  CHECK(*paired_bootstrap(same, 99, 1)[1].p_value == Approx(0.01));
  const auto a = paired_bootstrap(stats_of(false), 200, 7), b = paired_bootstrap(stats_of(false), 200, 7);
  for (size_t k = 0; k < a.size(); ++k) CHECK(a[k].mean == b[k].mean);
  CHECK(paired_bootstrap(stats_of(false), 200, 8)[1].mean != a[1].mean);
}
