// Latency of simultaneous translation as SimulEval (facebookresearch/SimulEval,
// simuleval/evaluator/scorers/latency_scorer.py) scores an instances.log with --score-only:
//   AL    average lagging (Ma et al., 2019, STACL, eq. 4) with |y| = the reference length
//   AL_STACL  the same with |y| = the hypothesis length (the paper's; SimulEval's --no-use-ref-len)
//   LAAL  length-adaptive AL (Papi et al., 2022): |y| = max(hypothesis, reference) length
//   AP    average proportion (Cho & Esipova, 2016): sum of delays / (|x| |y|), |y| as AL's
//   DAL   differentiable AL (Arivazhagan et al., 2019, MILk, eq. 12): hypothesis length
//   ATD   average token delay (Kano et al., 2022) as SimulEval computes it from a log: a log's
//         instances are not text-input instances to its ATD scorer, so it takes the source as
//         speech -- each run of new source units one "segment" lasting as many units (300 to a
//         token) -- and target tokens as lasting 0; this is what `--score-only` prints
//   ATD_text  ATD as SimulEval's live text-to-text evaluation computes it (source and target
//         tokens lasting 1 each): the paper's text ATD, which `--score-only` cannot reproduce
// A delay is the number of source units (words or subwords) read when a target unit was written.
// SimulEval's edge cases are kept: an instance without delays (an empty output) is left out of the
// corpus mean, and a first delay past the source length is AL's and LAAL's value (tau = 1).
// Checked against SimulEval's own scorers on recorded delays (tests/base/test_latency.cpp,
// tests/data/simuleval/).
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace attnmt {

struct LatencyInstance {
  std::vector<double> delays;     // source units read when each target unit was written
  double source_length = 0;       // |x| in the same units
  double reference_length = -1;   // |y*| in target units; < 0: no reference (|y| = the hypothesis')
};

struct LatencyScores {
  double al = 0;        // SimulEval's AL (reference length when there is one)
  double al_stacl = 0;  // STACL's AL (hypothesis length)
  double laal = 0;
  double ap = 0;
  double dal = 0;
  double atd = 0;       // as --score-only computes it
  double atd_text = 0;  // as a live text-to-text run computes it
};

// One instance's scores; `delays` must not be empty and source_length must be > 0.
LatencyScores instance_latency(const LatencyInstance& instance);

// The single metrics, with the target length each uses passed explicitly.
double average_lagging(const std::vector<double>& delays, double source_length, double target_length);
double length_adaptive_average_lagging(const std::vector<double>& delays, double source_length, double reference_length);
double average_proportion(const std::vector<double>& delays, double source_length, double target_length);
double differentiable_average_lagging(const std::vector<double>& delays, double source_length);
enum class AtdSource { log, text };  // which of SimulEval's ATD branches (see above)
double average_token_delay(const std::vector<double>& delays, AtdSource source);

struct CorpusLatency {
  LatencyScores mean;   // over the scored instances (SimulEval's corpus figure)
  size_t scored = 0;    // instances with at least one delay
};

// SimulEval's corpus figures: each metric's mean over the instances that have delays.
CorpusLatency corpus_latency(const std::vector<LatencyInstance>& instances);

// The names SimulEval prints, in LatencyScores' order, and the scores as (name, value) pairs.
std::vector<std::pair<std::string, double>> latency_fields(const LatencyScores& scores);

}  // namespace attnmt
