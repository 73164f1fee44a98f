// attnmt compare CONFIG.yaml... [--train-missing] [--test-src F --test-tgt F]
//                [--align-gold-src F [--align-gold-tgt F] --align-gold F] [--report DIR] [--samples N] [--baseline NAME]
//                [--seeds N|LIST] [--save-root DIR] [--streaming]
// One row per config (analysis/compare.h); the table on stdout, the report files in DIR.
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/compare.h"
#include "cli/commands.h"
#include "util/logging.h"

namespace attnmt::cli {

void add_compare_command(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd =
      app.add_subcommand("compare", "Compare trained configs: BLEU, chrF, perplexity, speed, memory, AER, report");
  cmd->add_option("configs", o->configs, "Experiment configs (YAML), one row each")->required();
  cmd->add_flag("--train-missing", o->train_missing,
                "Train (or resume) every config whose save dir has no finished run");
  cmd->add_option("--test-src", o->test_src, "Test source (default: the configs' data.test.src)");
  cmd->add_option("--test-tgt", o->test_tgt, "Test references (default: the configs' data.test.tgt)");
  cmd->add_option("--align-gold-src", o->gold_text,
                  "Text of the gold alignments: 'SRC ||| TGT' lines (or the source side, with --align-gold-tgt)");
  cmd->add_option("--align-gold-tgt", o->gold_text_tgt, "Target side of the gold alignments' text");
  cmd->add_option("--align-gold", o->gold_links, "Gold alignments (TALP: 'i-j' sure, 'ipj' possible, 1-based)");
  cmd->add_option("--report", o->report_dir, "Write DIR/results.{md,csv,json}, DIR/index.html, DIR/hyp/, DIR/logs/");
  cmd->add_option("--samples", o->samples, "Test sentences shown as attention heatmaps (default 4)");
  cmd->add_option("--baseline", o->baseline,
                  "The config (file name without .yaml) the others' BLEU/chrF p-values are against (default: the first)");
  auto seeds = std::make_shared<std::string>();
  cmd->add_option("--seeds", *seeds,
                  "Train and measure every config with each seed: N (seeds 1..N) or a list 1,2,3; models in "
                  "SAVE_DIR/seed<N>; rows show mean \u00b1 sd");
  cmd->add_option("--save-root", o->save_root,
                  "Keep each config's models in DIR/<name> (DIR/<name>/seed<N>) instead of its train.save_dir");
  cmd->add_option("--set", o->overrides, "Override a key in every config: --set train.max_steps=100 (repeatable)")
      ->take_all();
  cmd->add_flag("--streaming", o->streaming,
                "Also stream the test set by each model's own policy (wait-k, the hard head's): streamed BLEU/chrF, "
                "AL/LAAL/AP/DAL in words, a quality-latency chart");
  cmd->add_option("--threads", o->threads, "Threads for training and decoding (default: each config's 'threads')");
  cmd->callback([o, seeds, &global] {
    setup_logging(global.debug);
    if (!seeds->empty()) o->seeds = parse_seeds(*seeds);
    const auto report = compare(*o);
    const auto table = results_terminal(report);
    std::fwrite(table.data(), 1, table.size(), stdout);
    std::fflush(stdout);
    if (!o->report_dir.empty()) spdlog::info("[compare] report: {}/index.html", o->report_dir);
  });
}

}  // namespace attnmt::cli
