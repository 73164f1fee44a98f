#include "eval/significance.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "eval/metrics.h"
#include "util/error.h"

namespace attnmt {

namespace {

std::vector<double> summed(const MetricStats& m) {
  std::vector<double> sum(m.sentences.empty() ? 0 : m.sentences.front().size(), 0.0);
  for (const auto& row : m.sentences)
    for (size_t i = 0; i < row.size(); ++i) sum[i] += row[i];
  return sum;
}

// The statistics summed over `picks` (sentence indices, repeats allowed).
std::vector<double> summed(const MetricStats& m, const std::vector<uint32_t>& picks) {
  std::vector<double> sum(m.sentences.front().size(), 0.0);
  for (uint32_t s : picks) {
    const auto& row = m.sentences[s];
    for (size_t i = 0; i < row.size(); ++i) sum[i] += row[i];
  }
  return sum;
}

double p_value(const std::vector<double>& statistics, double actual) {
  const auto above = std::count_if(statistics.begin(), statistics.end(), [&](double x) { return x > actual; });
  return static_cast<double>(above + 1) / static_cast<double>(statistics.size() + 1);
}

void check(const std::vector<MetricStats>& systems) {
  if (systems.empty()) throw std::invalid_argument("significance: no systems");
  for (const auto& s : systems) {
    if (s.sentences.size() != systems.front().sentences.size() || s.sentences.empty()) {
      throw std::invalid_argument("significance: systems of different (or no) sentences");
    }
  }
}

MetricStats metric_stats(const std::vector<std::string>& hyps, const std::vector<std::string>& refs,
                         std::vector<double> (*sentence)(const std::string&, const std::string&),
                         double (*score)(const std::vector<double>&)) {
  if (hyps.size() != refs.size()) {
    throw InputError("significance: " + std::to_string(hyps.size()) + " hypotheses for " +
                     std::to_string(refs.size()) + " references");
  }
  MetricStats m;
  for (size_t s = 0; s < hyps.size(); ++s) m.sentences.push_back(sentence(hyps[s], refs[s]));
  m.score = score;
  return m;
}

}  // namespace

MetricStats bleu_stats(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  return metric_stats(hyps, refs, &bleu_sentence_stats, [](const std::vector<double>& x) { return bleu_from_stats(x).score; });
}

MetricStats chrf_stats(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  return metric_stats(hyps, refs, &chrf_sentence_stats, [](const std::vector<double>& x) { return chrf_from_stats(x).score; });
}

std::pair<double, double> bootstrap_mean_ci(std::vector<double> scores) {
  std::sort(scores.begin(), scores.end());
  const size_t n = scores.size(), lower = n / 40, upper = n - lower - 1;
  const double mean = std::accumulate(scores.begin(), scores.end(), 0.0) / static_cast<double>(n);
  return {mean, 0.5 * (scores[upper] - scores[lower])};
}

std::vector<SignificanceResult> paired_bootstrap(const std::vector<MetricStats>& systems, int resamples,
                                                 uint64_t seed) {
  check(systems);
  const size_t n = systems.front().sentences.size();
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint32_t>> picks(static_cast<size_t>(resamples), std::vector<uint32_t>(n));
  for (auto& p : picks)
    for (auto& i : p) i = static_cast<uint32_t>(rng() % n);  // n << 2^64: the modulo bias is negligible
  std::vector<std::vector<double>> scores(systems.size());
  std::vector<SignificanceResult> out(systems.size());
  for (size_t k = 0; k < systems.size(); ++k) {
    for (const auto& p : picks) scores[k].push_back(systems[k].score(summed(systems[k], p)));
    out[k].score = systems[k].score(summed(systems[k]));
    const auto [mean, ci] = bootstrap_mean_ci(scores[k]);
    out[k].mean = mean;
    out[k].ci = ci;
  }
  for (size_t k = 1; k < systems.size(); ++k) {
    std::vector<double> diffs(scores[k].size());
    for (size_t r = 0; r < diffs.size(); ++r) diffs[r] = std::abs(scores[k][r] - scores[0][r]);
    const double mean = std::accumulate(diffs.begin(), diffs.end(), 0.0) / static_cast<double>(diffs.size());
    for (double& d : diffs) d -= mean;  // centred: the null hypothesis of no difference
    out[k].p_value = p_value(diffs, std::abs(out[k].score - out[0].score));
  }
  return out;
}

std::vector<SignificanceResult> paired_approximate_randomization(const std::vector<MetricStats>& systems,
                                                                 int trials, uint64_t seed) {
  check(systems);
  const size_t n = systems.front().sentences.size(), width = systems.front().sentences.front().size();
  std::vector<SignificanceResult> out(systems.size());
  for (size_t k = 0; k < systems.size(); ++k) out[k].score = systems[k].score(summed(systems[k]));
  for (size_t k = 1; k < systems.size(); ++k) {
    std::mt19937_64 rng(seed);  // every system sees the same swaps
    std::vector<double> diffs(static_cast<size_t>(trials));
    std::vector<double> a(width), b(width);
    for (auto& d : diffs) {
      std::fill(a.begin(), a.end(), 0.0);
      std::fill(b.begin(), b.end(), 0.0);
      uint64_t bits = 0;
      for (size_t s = 0; s < n; ++s) {
        if (s % 64 == 0) bits = rng();
        const bool swap = (bits >> (s % 64)) & 1;
        const auto& x = systems[0].sentences[s];
        const auto& y = systems[k].sentences[s];
        for (size_t i = 0; i < width; ++i) {
          a[i] += swap ? y[i] : x[i];
          b[i] += swap ? x[i] : y[i];
        }
      }
      d = std::abs(systems[0].score(a) - systems[k].score(b));
    }
    out[k].p_value = p_value(diffs, std::abs(out[k].score - out[0].score));
  }
  return out;
}

}  // namespace attnmt
