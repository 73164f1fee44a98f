// Minimum Bayes risk decoding over an n-best list (Kumar & Byrne, 2004; Eikema & Aziz, 2020):
// each hypothesis h is scored by its expected utility against the list as pseudo-references,
//   E(h) = sum_j w_j * u(h, y_j) / sum_j w_j,
// u sentence BLEU or chrF (eval/metrics.h, sacreBLEU's formulas on one sentence pair), and the
// list is reordered by E, highest first (ties keep the search's order). The weights w_j are the
// model's probabilities P(y_j|X) renormalised over the list (beam search's hypotheses: a biased
// but low-variance estimate of the expectation), or 1 for samples (a Monte Carlo estimate, where
// a sample drawn twice counts twice).
#pragma once
#include <string>
#include <vector>

#include "decoding/translation.h"
#include "util/choices.h"

namespace attnmt {

// E(h) for each of texts, weights as above (w_j = exp(log_probs[j] - max), or 1 when uniform);
// utility bleu or chrf (decode.mbr).
std::vector<double> mbr_expected_utility(const std::vector<std::string>& texts, const std::vector<double>& log_probs,
                                         bool uniform, MbrMetric utility);

// Reorders one line's hypotheses by E (above) and sets each one's score to it (0..100).
void mbr_rerank(std::vector<Translation>& hypotheses, bool uniform, MbrMetric utility);

}  // namespace attnmt
