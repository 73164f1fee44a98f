#include "decoding/mbr.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "eval/metrics.h"
#include "util/error.h"

namespace attnmt {

std::vector<double> mbr_expected_utility(const std::vector<std::string>& texts, const std::vector<double>& log_probs,
                                         bool uniform, MbrMetric utility) {
  if (utility == MbrMetric::none) throw std::invalid_argument("mbr_expected_utility: no utility (decode.mbr: none)");
  const size_t n = texts.size();
  std::vector<double> weights(n, 1.0);
  if (!uniform && n > 0) {
    const double top = *std::max_element(log_probs.begin(), log_probs.end());
    for (size_t j = 0; j < n; ++j) weights[j] = std::exp(log_probs[j] - top);
  }
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> expected(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      // A hypothesis against itself scores 100 under both utilities (when it has any n-gram).
      const double u = utility == MbrMetric::bleu ? bleu_from_stats(bleu_sentence_stats(texts[i], texts[j])).score
                                                   : chrf_from_stats(chrf_sentence_stats(texts[i], texts[j])).score;
      expected[i] += weights[j] * u;
    }
    expected[i] /= total;
  }
  return expected;
}

void mbr_rerank(std::vector<Translation>& hypotheses, bool uniform, MbrMetric utility) {
  if (hypotheses.empty()) return;
  std::vector<std::string> texts;
  std::vector<double> log_probs;
  for (const auto& h : hypotheses) {
    texts.push_back(h.text);
    log_probs.push_back(h.log_prob);
  }
  const auto expected = mbr_expected_utility(texts, log_probs, uniform, utility);
  for (size_t i = 0; i < hypotheses.size(); ++i) hypotheses[i].score = expected[i];
  std::stable_sort(hypotheses.begin(), hypotheses.end(),
                   [](const Translation& a, const Translation& b) { return a.score > b.score; });
}

}  // namespace attnmt
