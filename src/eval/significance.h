// Paired significance tests between systems translating the same test set, as sacreBLEU 2.x runs
// them (sacrebleu/significance.py), on corpus-level metrics given as per-sentence sufficient
// statistics (eval/metrics.h):
// - paired bootstrap resampling (Koehn, 2004): n resamples of the sentences, drawn with
//   replacement, the same for every system; a system's mean and 95% interval come from its
//   resampled scores (the half-width between the 2.5% and 97.5% order statistics), and its p-value
//   from how often the resampled |system - baseline| differences, centred on their mean, exceed
//   the actual difference;
// - paired approximate randomization (Riezler & Maxwell, 2005): n trials each swap every
//   sentence's two outputs with probability 1/2; the p-value is how often the swapped systems
//   differ by more than the actual difference.
// Both p-values are (count + 1) / (n + 1). The draws are this project's own (std::mt19937_64,
// fixed for a seed), not NumPy's, so they agree with sacreBLEU's within sampling
// error, not to the digit.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnmt {

struct MetricStats {
  std::vector<std::vector<double>> sentences;                  // one row of statistics per sentence
  std::function<double(const std::vector<double>&)> score;     // corpus score of summed statistics
};

// A system's BLEU or chrF statistics on a test set (InputError if the sizes differ).
MetricStats bleu_stats(const std::vector<std::string>& hyps, const std::vector<std::string>& refs);
MetricStats chrf_stats(const std::vector<std::string>& hyps, const std::vector<std::string>& refs);

struct SignificanceResult {
  double score = 0;                 // the system's corpus score
  std::optional<double> p_value;    // against the baseline (none for the baseline itself)
  std::optional<double> mean, ci;   // bootstrap: the resampled mean and the 95% half-width
};

// systems[0] is the baseline; every system has as many sentences. One result per system.
std::vector<SignificanceResult> paired_bootstrap(const std::vector<MetricStats>& systems, int resamples,
                                                 uint64_t seed);
std::vector<SignificanceResult> paired_approximate_randomization(const std::vector<MetricStats>& systems,
                                                                 int trials, uint64_t seed);

// Half the distance between the (n/40)-th and (n - n/40 - 1)-th smallest scores, and their mean.
std::pair<double, double> bootstrap_mean_ci(std::vector<double> scores);

}  // namespace attnmt
