// The comparison of attention variants (`attnmt compare`) as data, and its renderings: a
// terminal table, results.md / .csv / .json, and a self-contained index.html (inline SVG, CSS and
// a few lines of script to sort the table; nothing fetched from the network).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "report/heatmap.h"

namespace attnmt {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();  // shown as "–"

// A figure over a config's seeds (compare --seeds): the sample standard deviation (n - 1), the
// smallest and the largest; all missing for a single run.
struct Spread {
  double sd = kMissing, min = kMissing, max = kMissing;
};

// One seed's run of a config (compare --seeds).
struct SeedResult {
  uint64_t seed = 0;
  std::string save_dir;
  double bleu = kMissing, chrf = kMissing, valid_ppl = kMissing, aer = kMissing;
  double stream_bleu = kMissing, stream_laal = kMissing;  // compare --streaming
};

// One row of the table: one config. With several seeds, every figure is the mean over them
// (peak RSS: the largest), BLEU/chrF/valid ppl/AER with their spread.
struct VariantRow {
  std::string variant;  // the config file's name without .yaml
  std::string config_path;
  std::string attention;  // model.attention.type (+ "+coverage")
  std::string decoder_style;
  int64_t parameters = 0;
  double bleu = kMissing, chrf = kMissing;  // test set, beam as configured, measured here
  // Paired bootstrap resampling against the baseline row's test output (1,000 resamples, as
  // `attnmt score --paired-bs`): p-values of the BLEU and chrF differences; missing for the baseline.
  double bleu_p = kMissing, chrf_p = kMissing;
  double valid_ppl = kMissing;              // measured here on data.valid
  double train_tokens_per_sec = kMissing;   // median of the model's own log.jsonl report lines
  int beam_size = 0;
  double decode_sentences_per_sec = kMissing;                      // `attnmt translate` child: search time only
  double decode_seconds = kMissing;                                // its search time (model loading not included)
  double decode_process_seconds = kMissing;                        // the whole child process
  double peak_rss_mib = kMissing;                                  // the child's own peak RSS (util/process.h)
  double aer = kMissing, precision = kMissing, recall = kMissing;  // 0..1, when gold is given
  int64_t steps = 0;                                               // from log.jsonl
  double train_minutes = kMissing;  // from log.jsonl (training wall time, validation included)
  // compare --streaming: the test set streamed by the model's own policy (`translate --streaming`
  // with the config's decode.*): BLEU, chrF and SimulEval's latency in words; missing for a model
  // without a streaming policy.
  double stream_bleu = kMissing, stream_chrf = kMissing;
  double stream_al = kMissing, stream_laal = kMissing, stream_ap = kMissing, stream_dal = kMissing;
  std::vector<SeedResult> seeds;    // empty: one run, no --seeds
  Spread bleu_spread, chrf_spread, ppl_spread, aer_spread;
};

// One validation of the training run (log.jsonl "valid" records).
struct CurvePoint {
  int64_t step = 0;
  double minutes = 0;
  double bleu = kMissing;  // when the run validated by BLEU
  double ppl = kMissing;
};

struct VariantReport {
  VariantRow row;
  std::vector<std::vector<CurvePoint>> curves;  // one per seed (one without --seeds)
  std::vector<Heatmap> heatmaps;          // one per sample sentence (word level)
  std::vector<std::string> translations;  // the same sentences, this variant's output
};

struct CompareReport {
  std::vector<VariantReport> variants;
  std::string baseline;  // the variant the p-values are against
  size_t seeds = 0;      // runs per config (compare --seeds); 0: one run each, no seed given
  bool streaming = false;  // compare --streaming: the stream_* figures and the quality-latency chart
  uint64_t significance_seed = 0;  // with seeds: the seed whose outputs the p-values compare
  std::string test_src, test_tgt;  // paths
  size_t test_sentences = 0;
  std::string gold_text, gold_links;  // paths, empty without gold
  size_t gold_sentences = 0;
  std::vector<std::string> sample_sources, sample_references;  // the N heatmap sentences
  std::string created;                                         // date and host, for the page's footer
};

// The table's columns, in order (shared by every rendering).
std::string results_terminal(const CompareReport& report);
std::string results_markdown(const CompareReport& report);
std::string results_csv(const CompareReport& report);
std::string results_json(const CompareReport& report);
std::string results_html(const CompareReport& report);

}  // namespace attnmt
