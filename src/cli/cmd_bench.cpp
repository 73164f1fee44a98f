// attnmt bench CONFIG... [--set key=value ...] [--model DIR ...] [--threads 1,0] [--repeats N] [--window-steps N]
//              [--no-train] [--no-decode] [--no-gemm] [--no-baseline] [--isa-levels all|none|LEVEL,...]
//              [--output bench.json]
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "cli/commands.h"
#include "util/logging.h"
#include "util/text_io.h"

namespace attnmt::cli {

void add_bench_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    BenchOptions bench;
    std::string output = "bench.json", table;
    std::vector<std::string> isa_levels = {"all"};
    bool no_train = false, no_decode = false, no_gemm = false, no_baseline = false;
  };
  auto o = std::make_shared<Options>();
  o->bench.threads = {1, 0};
  auto* cmd = app.add_subcommand("bench", "Measure training/decoding speed, memory and the GEMM ceiling (see scripts/bench.sh)");
  cmd->add_option("configs", o->bench.configs, "Experiment configs (YAML)")->required();
  cmd->add_option("--set", o->bench.overrides,
                  "Override a key of every config, as train --set does (the decoding runs use its decode.*)");
  cmd->add_option("--model", o->bench.models, "Save dir of a trained model per config, for decoding (default: train.save_dir)");
  cmd->add_option("--threads", o->bench.threads, "Thread counts, e.g. 1,0 (0 = all cores)")->delimiter(',');
  cmd->add_option("--repeats", o->bench.repeats, "Training windows and decoding runs per figure (median, min, max)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--window-steps", o->bench.window_steps, "Updates per training window (one more window warms up)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--test-src", o->bench.test_src, "Decoding input (default: the config's data.test.src)");
  cmd->add_option("--test-tgt", o->bench.test_tgt, "Decoding reference, for BLEU (default: data.test.tgt)");
  cmd->add_option("--work-dir", o->bench.work_dir, "Where the children write (default: a new temp dir)");
  cmd->add_option("--output,-o", o->output, "Results as JSON");
  cmd->add_option("--table", o->table, "Also write the Markdown table here");
  cmd->add_flag("--no-train", o->no_train, "Skip the training measurement");
  cmd->add_flag("--no-decode", o->no_decode, "Skip the decoding measurement");
  cmd->add_flag("--no-gemm", o->no_gemm, "Skip the GEMM ceiling");
  cmd->add_flag("--no-baseline", o->no_baseline, "Skip the one-sentence-at-a-time beam search baseline");
  cmd->add_option("--isa-levels", o->isa_levels,
                  "The decoder step's ceilings per instruction-set level (ATTNMT_CPU_ISA's names, a child "
                  "process each): all (the CPU's, default), none, or a list such as portable,avx2")
      ->delimiter(',');
  // A child of bench (run_bench): the decoder step's ceiling at the level ATTNMT_CPU_ISA sets.
  cmd->add_flag("--decode-ceiling-only", o->bench.decode_ceiling_only)->group("");
  cmd->callback([o, &global] {
    setup_logging(global.debug);
    auto options = o->bench;
    options.train = !o->no_train;
    options.decode = !o->no_decode;
    options.gemm = !o->no_gemm;
    options.baseline = !o->no_baseline;
    options.isa_levels = check_isa_levels(o->isa_levels);
    const auto results = run_bench(options);
    const auto table = bench_table(results);
    write_file_atomic(o->output, results.dump(2) + "\n");
    if (!o->table.empty()) write_file_atomic(o->table, table);
    std::fwrite(table.data(), 1, table.size(), stdout);
  });
}

}  // namespace attnmt::cli
