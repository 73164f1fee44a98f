// Corpus-level BLEU and chrF, equal to sacreBLEU 2.x defaults (one reference):
// BLEU: 13a tokenization, cased, exponential smoothing, max n-gram order 4.
// chrF: chrF2 (character n-grams up to 6, no word n-grams, beta 2), whitespace removed,
// sacreBLEU's "effective order" handling.
// Checked against sacreBLEU 2.6.0 output in tests/data/sacrebleu/ (tests/base/test_metrics.cpp).
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace attnmt {

struct BleuResult {
  double score = 0;               // 0..100
  std::vector<long> counts;       // matching n-grams, n = 1..4
  std::vector<long> totals;       // hypothesis n-grams, n = 1..4
  std::vector<double> precisions; // 100 * counts / totals (exp-smoothed where counts is 0), n = 1..4
  double bp = 0;                  // brevity penalty
  long sys_len = 0;
  long ref_len = 0;
  std::string signature() const;  // like sacreBLEU's: nrefs:1|case:mixed|eff:no|tok:13a|...
  // sacreBLEU's line: "BLEU = 35.12 67.2/42.1/28.3/19.5 (BP = 0.980 ratio = 0.980 hyp_len = ...)"
  std::string format() const;
};

struct ChrfResult {
  double score = 0;  // 0..100
  std::string signature() const;
  std::string format() const;  // sacreBLEU's line: "chrF2 = 60.12"
};

// The figures of `attnmt score --json` (and the Python module's score()): bleu, bleu_counts,
// bleu_totals, bleu_precisions, bp, sys_len, ref_len.
nlohmann::json bleu_json(const BleuResult& bleu);

// InputError if the sizes differ.
BleuResult corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::string>& refs);
ChrfResult corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::string>& refs);

// A sentence's sufficient statistics, whose sums over a corpus (or a resample of it) give the
// corpus score: BLEU's [hyp length, ref length, matches n = 1..4, hyp n-grams n = 1..4], chrF's
// [hyp n-grams, ref n-grams, matches] per character order 1..6. Doubles: sums of many are exact.
std::vector<double> bleu_sentence_stats(const std::string& hyp, const std::string& ref);
BleuResult bleu_from_stats(const std::vector<double>& summed);
std::vector<double> chrf_sentence_stats(const std::string& hyp, const std::string& ref);
ChrfResult chrf_from_stats(const std::vector<double>& summed);

// sacreBLEU's 13a tokenizer (mteval-v13a), exposed for tests and alignment tools.
std::string tokenize_13a(const std::string& line);

}  // namespace attnmt
