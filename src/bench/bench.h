// attnmt bench: training and decoding speed, memory, and how close they come to the machine's
// matrix-product ceiling, for one or more experiment configs at several thread counts.
//
// Every measurement that has a peak RSS runs in its own child process (this program, re-run as
// `attnmt train` / `attnmt translate`), so that the RSS is that of the measured work alone:
// - training: `attnmt train` for warm-up + R windows of K updates (validation by perplexity only,
//   outside the windows); the figure is target tokens/s per window (the trainer's own count of
//   real target tokens and wall time), median / min / max over the R windows after the warm-up;
// - decoding: `attnmt translate` of the test set, R times per mode (greedy, beam N at
//   decode.batch_size, and the baseline: beam N one sentence at a time); sentences/s and target
//   tokens/s for the whole process (start to exit, model loading included) and for translating
//   alone (translate --stats), BLEU of the output;
// - the ceiling, in this process: fp32 (and bf16 where the CPU has native bf16 products: AVX512-BF16
//   or AMX-BF16, util/cpu_kernels.h) GEMM GFLOP/s at the model's own shapes (bench/flops.h), forward
//   and both backward orientations, combined with the weights of the model's FLOPs; achieved
//   GFLOP/s = tokens/s x FLOPs per token.
// - the decoder step's ceiling per instruction-set level (ATTNMT_CPU_ISA, util/cpu_kernels.h):
//   oneDNN's instruction set is fixed once per process, so each level other than this process's
//   own is measured by a child (`attnmt bench --decode-ceiling-only` with ATTNMT_CPU_ISA set):
//   fp32, bf16 where the level has native bf16, and int8 with the kernel that level runs.
// The machine's record names the kernels: the bf16 class, the CPU flags that decide it, and per
// run the library of the fp32 products (config key gemm).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnmt {

struct BenchOptions {
  std::vector<std::string> configs;     // experiment configs (YAML)
  std::vector<std::string> overrides;   // "key=value" applied to every config (--set), as `train` does
  std::vector<std::string> models;      // decoding: save dir per config (default: its train.save_dir)
  std::vector<int> threads;             // thread counts (0 = all cores)
  int repeats = 3;                      // training windows / decoding runs per figure
  int window_steps = 20;                // updates per training window (one more window warms up)
  bool baseline = true;                 // also decode one sentence at a time (beam search baseline)
  bool train = true, decode = true, gemm = true;
  std::string test_src, test_tgt;       // default: each config's data.test
  std::string work_dir;                 // children's save dirs and outputs (default: a temp dir)
  // The levels whose decoder-step ceilings are measured, lowest first ("portable", "avx2", ...:
  // cpu_isa_name); empty: none. Default (check_isa_levels({"all"})): every level this CPU has.
  std::vector<std::string> isa_levels;
  bool decode_ceiling_only = false;     // a child of bench: only the decoder step's ceiling, at this process's level
};

// The values of --isa-levels ("all", "none" or level names) as BenchOptions::isa_levels: every
// name checked against the levels and this CPU's flags (InputError naming the value).
std::vector<std::string> check_isa_levels(const std::vector<std::string>& values);

// Runs everything, logs progress, returns the results (see scripts/bench.sh for the table).
nlohmann::json run_bench(const BenchOptions& options);

// The results as a Markdown table (one row per config and thread count).
std::string bench_table(const nlohmann::json& results);

}  // namespace attnmt
