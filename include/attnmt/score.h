// Corpus BLEU and chrF2 of hypotheses against one reference each, equal to sacreBLEU 2.x's
// defaults (13a tokenization, exponential smoothing; chrF: character 6-grams, beta 2), as
// `attnmt score` computes them.
#pragma once
#include <string>
#include <vector>

#include <attnmt/export.h>

namespace attnmt {

struct Scores {
  double bleu = 0;                      // 0..100
  std::vector<long> bleu_counts;        // matching n-grams, n = 1..4
  std::vector<long> bleu_totals;        // hypothesis n-grams, n = 1..4
  std::vector<double> bleu_precisions;  // 100 * counts / totals (smoothed where a count is 0)
  double bp = 0;                        // brevity penalty
  long sys_len = 0, ref_len = 0;        // hypothesis and reference lengths in tokens
  double chrf = 0;                      // 0..100
  std::string bleu_signature, chrf_signature;  // sacreBLEU's: "nrefs:1|case:mixed|eff:no|tok:13a|..."
  std::string bleu_line, chrf_line;            // sacreBLEU's lines: "BLEU = 35.12 67.2/...", "chrF2 = 60.12"
};

// InputError when the two lists differ in length.
ATTNMT_API Scores score(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);

}  // namespace attnmt
