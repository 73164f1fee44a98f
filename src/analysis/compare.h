// `attnmt compare`: one row per experiment config, every figure measured here on the config's
// trained model (training speed, steps and time excepted: those come from the model's own
// log.jsonl). For each config, in order:
//   1. with train_missing, train it (a child `attnmt train`, --resume when it has checkpoints)
//      unless its save dir holds a finished run (the newest checkpoint reached one of the
//      config's stop criteria: train.max_steps / max_epochs / max_minutes / patience);
//   2. translate the test set in a child `attnmt translate` with the config's decode.* (beam
//      included): decode sentences/s = sentences / search time (the child's own clock, model
//      loading excluded); peak RSS = the child's own (util/process.h);
//      with streaming, the test set streamed too (translate --streaming) and its latency;
//   3. BLEU and chrF of that output; valid perplexity on data.valid; the attention of the first
//      `samples` test sentences (heatmaps); with gold alignments, AER of force-decoded
//      references (one link per target word at the attention argmax).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "report/report.h"

namespace attnmt {

struct CompareOptions {
  std::vector<std::string> configs;    // YAML paths; the variant is the file name without .yaml
  std::vector<std::string> overrides;  // --set key=value, applied to every config
  bool train_missing = false;
  std::string test_src, test_tgt;  // default: the configs' data.test (must be the same)
  std::string gold_text;           // "SRC ||| TGT" lines, or the source side when gold_text_tgt is set
  std::string gold_text_tgt;
  std::string gold_links;  // TALP: 1-based, "i-j" sure, "ipj" possible
  std::string report_dir;  // results.{md,csv,json}, index.html, hyp/, logs/; empty: none
  int samples = 4;         // test sentences shown as heatmaps
  std::string baseline;    // the variant the others' p-values are against (default: the first)
  // Train and measure every config once per seed (train.seed = N, train.save_dir = its own
  // save_dir/seedN); rows show means and spreads; the p-values compare the first seed's outputs.
  // Empty: one run per config, as its YAML says.
  std::vector<uint64_t> seeds;
  // Each config's models in SAVE_ROOT/<name> (SAVE_ROOT/<name>/seedN) instead of its train.save_dir:
  // a study at another budget (--set) next to the configs' own runs.
  std::string save_root;
  int threads = -1;        // -1: each config's own `threads`
  // Also stream the test set by each model's own policy (translate --streaming): streamed BLEU and
  // chrF, AL/LAAL/AP/DAL in words, and the quality-latency chart.
  bool streaming = false;
};

// Runs the comparison and writes the report files; InputError / RuntimeError on failure.
CompareReport compare(const CompareOptions& options);

// --seeds: "N" for seeds 1..N (N <= 100), or a list "1,2,5"; InputError naming the flag otherwise.
std::vector<uint64_t> parse_seeds(const std::string& text);

// Whether SAVE_DIR holds a finished training run (see above); false if it holds
// no checkpoint.
bool training_finished(const std::string& save_dir);

}  // namespace attnmt
