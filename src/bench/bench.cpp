#include "bench/bench.h"

#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <set>
#include <thread>

#include "bench/flops.h"
#include "config/loader.h"
#include "data/corpus.h"
#include "data/examples.h"
#include "eval/metrics.h"
#include "io/model_file.h"
#include "io/train_log.h"
#include "runtime/compute.h"
#include "runtime/gemm.h"
#include "runtime/int8_gemm.h"
#include "runtime/packed_linear.h"
#include "util/cpu_kernels.h"
#include "util/error.h"
#include "util/host_tuning.h"
#include "util/logging.h"
#include "util/progress.h"
#include "util/process.h"
#include "util/text_io.h"

namespace attnmt {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats stats_of(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {median, v.front(), v.back()};
}

json to_json(const Stats& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

// Runs this program with `args`, stdout and stderr to `log` (util/process.h: the child's own peak
// RSS); throws with the log's last line when it fails.
ChildResult run_attnmt(const std::vector<std::string>& args, const std::string& log,
                       const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::vector<std::string> argv{self_executable()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = run_child(argv, log, env);
  if (r.exit_code != 0) {
    std::string last;
    for (const auto& line : read_lines(log)) {
      if (!line.empty()) last = line;
    }
    throw RuntimeError("bench: '" + args.front() + "' failed (" +
                       (r.exit_code > 128 ? "signal " + std::to_string(r.exit_code - 128)
                                          : "exit " + std::to_string(r.exit_code)) +
                       "; log " + log + "): " + last);
  }
  return r;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// Whether this CPU's bf16 products have a native kernel (util/cpu_kernels.h): only then is the
// bf16 ceiling measured (emulated, it would take minutes and say nothing).
bool cpu_has_bf16() { return has_native_bf16(this_cpu_flags()); }

int resolve_threads(int threads) {
  return threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// GFLOP/s of `run` doing `flops` per call: the median of 3 timings of >= 0.1 s each, each after
// one call to warm up (caches, oneDNN's JIT).
double median_gflops(double flops, const std::function<void()>& run) {
  std::vector<double> rates;
  for (int rep = 0; rep < 3; ++rep) {
    run();
    int64_t iters = 0;
    const auto start = Clock::now();
    double seconds = 0;
    do {
      run();
      ++iters;
      seconds = std::chrono::duration<double>(Clock::now() - start).count();
    } while (seconds < 0.1);
    rates.push_back(flops * static_cast<double>(iters) / seconds / 1e9);
  }
  return stats_of(rates).median;
}

// GFLOP/s of one product shape (median_gflops): forward [m,k]x[k,n] and
// the two backward orientations ([m,n]x[n,k]^T-like and [k,m]x[m,n]), averaged by time.
double gemm_gflops(const GemmShape& s, int64_t batch, torch::Dtype dtype) {
  const auto opt = torch::TensorOptions().dtype(dtype);
  std::vector<std::function<torch::Tensor()>> products;
  if (s.batched) {
    auto a = torch::randn({batch, s.m, s.k}, opt), b = torch::randn({batch, s.k, s.n}, opt);
    auto gy = torch::randn({batch, s.m, s.n}, opt);
    products = {[=] { return torch::bmm(a, b); }, [=] { return torch::bmm(gy, b.transpose(1, 2)); },
                [=] { return torch::bmm(a.transpose(1, 2), gy); }};
  } else {
    auto x = torch::randn({s.m, s.k}, opt), w = torch::randn({s.n, s.k}, opt);  // y = x w^T, as nn::Linear
    auto gy = torch::randn({s.m, s.n}, opt);
    products = {[=] { return torch::mm(x, w.t()); }, [=] { return torch::mm(gy, w); },
                [=] { return torch::mm(gy.t(), x); }};
  }
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n) *
                       static_cast<double>(s.batched ? batch : 1) * static_cast<double>(products.size());
  return median_gflops(flops, [&] {
    for (auto& p : products) p();
  });
}

// The model's ceiling: the time its products would take at the measured rates, as GFLOP/s.
json gemm_ceiling(const ModelArithmetic& arith, int64_t batch, torch::Dtype dtype) {
  double total_flops = 0, total_seconds = 0;
  json shapes = json::array();
  for (const auto& s : arith.gemms) {
    const double rate = gemm_gflops(s, batch, dtype);
    const double flops = s.flops() * s.calls_per_batch * static_cast<double>(s.batched ? batch : 1);
    total_flops += flops;
    total_seconds += flops / (rate * 1e9);
    shapes.push_back({{"name", s.name}, {"m", s.m}, {"k", s.k}, {"n", s.n}, {"batched", s.batched},
                      {"share_of_flops", flops / arith.forward_flops_per_batch}, {"gflops", rate}});
  }
  GemmShape square{"square_1024", false, 1024, 1024, 1024, 1, 1024};
  return {{"gflops", total_flops / total_seconds / 1e9}, {"square_1024_gflops", gemm_gflops(square, 1, dtype)},
          {"shapes", shapes}};
}

// Decoding's products: y = x W^T for one step's rows (a batch's sentences x beams), forward only,
// as decoding runs them (runtime/packed_linear.h: oneDNN's packed fp32 or bf16, or an int8 kernel).
// GFLOP/s (median_gflops).
double decode_gflops(int64_t m, int64_t k, int64_t n, ProductPrecision precision,
                     std::optional<Int8Kernel> kernel = std::nullopt) {
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({m, k}), w = torch::randn({n, k}) * 0.1;
  const PackedLinear linear(w, torch::Tensor(), precision);
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  if (kernel) return median_gflops(flops, [&] { linear.int8_with(x, *kernel); });
  return median_gflops(flops, [&] { linear(x); });
}

// What a decoder step multiplies per row (every product after the encoder and the attention's
// keys, which run once per sentence), and what the encoder does per sentence: FLOPs from the
// model's arithmetic, per target token and per sentence.
struct DecodeArithmetic {
  double step_flops_per_row = 0, encoder_flops_per_sentence = 0;
};
bool per_sentence(const GemmShape& s) { return s.name.rfind("encoder.", 0) == 0 || s.name == "attention.keys"; }
DecodeArithmetic decode_arithmetic(const ModelArithmetic& arith, int64_t batch, double tgt_len) {
  DecodeArithmetic d;
  for (const auto& s : arith.gemms) {
    const double flops = s.flops() * s.calls_per_batch * static_cast<double>(s.batched ? batch : 1);
    (per_sentence(s) ? d.encoder_flops_per_sentence : d.step_flops_per_row) += flops;
  }
  d.encoder_flops_per_sentence /= static_cast<double>(batch);
  d.step_flops_per_row /= static_cast<double>(batch) * tgt_len;
  return d;
}

// Decoding's ceiling: the step's products (the unbatched ones) at `rows` rows, weighted by their
// FLOPs as gemm_ceiling weights the training shapes: fp32, bf16 where the CPU has native bf16, and
// int8 by every kernel this CPU runs ("int8" is the one decoding uses; "int8 <kernel>" each, unless
// !each_kernel).
json decode_ceiling(const ModelArithmetic& arith, int64_t rows, bool each_kernel = true) {
  json out = {{"rows", rows}, {"shapes", json::array()}};
  struct Path {
    std::string name;
    ProductPrecision precision;
    std::optional<Int8Kernel> kernel;
  };
  std::vector<Path> paths = {{"fp32", ProductPrecision::kFp32, std::nullopt}};
  if (cpu_has_bf16()) paths.push_back({"bf16", ProductPrecision::kBf16, std::nullopt});
  paths.push_back({"int8", ProductPrecision::kInt8, std::nullopt});
  auto kernels = each_kernel ? int8_kernels_runnable(this_cpu_flags()) : std::vector<Int8Kernel>{};
  for (auto kernel : kernels) {
    paths.push_back({std::string("int8 ") + int8_kernel_name(kernel), ProductPrecision::kInt8, kernel});
  }
  for (const auto& path : paths) {
    double total_flops = 0, total_seconds = 0;
    for (const auto& s : arith.gemms) {
      if (s.batched || per_sentence(s)) continue;
      const double rate = decode_gflops(rows, s.k, s.n, path.precision, path.kernel);
      const double flops = s.flops() * s.calls_per_batch;
      total_flops += flops;
      total_seconds += flops / (rate * 1e9);
      if (path.name == "fp32") out["shapes"].push_back({{"name", s.name}, {"k", s.k}, {"n", s.n}});
      for (auto& shape : out["shapes"]) {
        if (shape["name"] == s.name) shape[path.name + "_gflops"] = rate;
      }
    }
    out[path.name] = {{"gflops", total_flops / total_seconds / 1e9}};
  }
  out["int8_kernel"] = int8_kernel_name(Int8Matrix::kernel_in_use());
  out["bf16_kernel"] = bf16_kernel_name(bf16_kernel(this_cpu_flags()));
  out["cpu_isa"] = cpu_isa_name(this_cpu_isa());
  std::string fastest = "fp32";
  for (const auto& path : paths) {
    if (out[path.name]["gflops"].get<double>() > out[fastest]["gflops"].get<double>()) fastest = path.name;
  }
  out["fastest"] = fastest;
  return out;
}

// The decoder step's ceiling at each of `levels`: this process's own level from `own` (measured
// here), every other by a child at that ATTNMT_CPU_ISA (oneDNN's instruction set cannot be lowered
// twice in one process). Per level: fp32, bf16 (where native there), int8 and the kernels.
json ceilings_per_level(const BenchOptions& o, const std::string& config_path, const std::string& model_dir, int threads,
                        const std::string& dir, const json& own) {
  json out = json::array();  // lowest level first
  for (const auto& level : o.isa_levels) {
    json c;
    if (level == cpu_isa_name(this_cpu_isa())) {
      c = own;
    } else {
      const std::string child_dir = dir + "/isa_" + level, result = child_dir + "/bench.json";
      fs::create_directories(child_dir);
      std::vector<std::string> args = {"bench", config_path};
      for (const auto& s : o.overrides) args.insert(args.end(), {"--set", s});
      args.insert(args.end(), {"--model", model_dir, "--threads", std::to_string(threads), "--repeats", "1",
                               "--no-train", "--no-baseline", "--isa-levels", "none", "--decode-ceiling-only",
                               "--work-dir", child_dir + "/work", "--output", result});
      run_attnmt(args, child_dir + "/bench.out", {{"ATTNMT_CPU_ISA", level}});
      c = json::parse(read_file(result))["runs"][0]["decode_ceiling"];
    }
    json entry = {{"level", level}, {"fp32", c["fp32"]["gflops"]}, {"int8", c["int8"]["gflops"]}, {"int8_kernel", c["int8_kernel"]},
                  {"bf16_kernel", c.value("bf16_kernel", "")}, {"cpu_isa", c.value("cpu_isa", level)}};
    if (c.contains("bf16")) entry["bf16"] = c["bf16"]["gflops"];
    out.push_back(entry);
  }
  return out;
}

}  // namespace

std::vector<std::string> check_isa_levels(const std::vector<std::string>& values) {
  const auto& flags = this_cpu_hardware_flags();
  if (values.size() == 1 && values[0] == "none") return {};
  std::set<CpuIsa> chosen;
  for (const auto& value : values) {
    if (value == "all") {
      for (CpuIsa isa : cpu_isas()) {
        if (isa <= best_cpu_isa(flags)) chosen.insert(isa);
      }
      continue;
    }
    const auto& isas = cpu_isas();
    const auto it = std::find_if(isas.begin(), isas.end(), [&](CpuIsa isa) { return value == cpu_isa_name(isa); });
    if (it == isas.end()) {
      throw InputError("bench: --isa-levels: '" + value + "' is not a level (all, none, " + cpu_isa_names() + ")");
    }
    for (const auto& flag : cpu_isa_flags(*it)) {
      if (!flags.count(flag)) throw InputError("bench: --isa-levels: " + value + ": this CPU has no " + flag);
    }
    chosen.insert(*it);
  }
  std::vector<std::string> levels;
  for (CpuIsa isa : chosen) levels.push_back(cpu_isa_name(isa));
  return levels;
}

namespace {

std::string str(double v, int decimals = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Mean lengths (with the end token) of the pairs training takes: the first kSamplePairs pairs of
// each training corpus, encoded and filtered as training does, weighted by the corpora's shares
// of an epoch (data.train's weights).
struct MeanLengths {
  double src = 0, tgt = 0;
};
MeanLengths mean_lengths(const DataConfig& data, const Tokenizers& tokenizers) {
  constexpr size_t kSamplePairs = 100000;
  MeanLengths mean;
  double weights = 0;
  const auto corpora = training_corpora(data);
  for (size_t c = 0; c < corpora.size(); ++c) {
    ParallelText sample;
    PairReader pairs(corpora[c], training_corpus_name(c, corpora.size()));
    std::string src, tgt;
    while (sample.src.size() < kSamplePairs && pairs.next(src, tgt)) {
      sample.src.push_back(std::move(src));
      sample.tgt.push_back(std::move(tgt));
    }
    const auto encoded = encode_dataset(sample, tokenizers, data.max_length);
    if (encoded.examples.empty()) continue;
    double src_tokens = 0, tgt_tokens = 0;
    for (const auto& ex : encoded.examples) {
      src_tokens += static_cast<double>(ex.src.size() + 1);
      tgt_tokens += static_cast<double>(ex.tgt.size() + 1);
    }
    const double n = static_cast<double>(encoded.examples.size());
    mean.src += corpora[c].weight * src_tokens / n;
    mean.tgt += corpora[c].weight * tgt_tokens / n;
    weights += corpora[c].weight;
  }
  if (weights <= 0) throw InputError("bench: data.train has no pair that training would take (all empty or too long)");
  mean.src /= weights;
  mean.tgt /= weights;
  return mean;
}

}  // namespace

namespace {

// One config at one thread count: what run_bench measures, step by step, into `run`.
struct BenchRun {
  const BenchOptions& o;
  const Config& cfg;
  std::string config_path, name, model_dir, dir;
  int threads = 1;
  std::function<void(const std::string&)> phase;  // the progress line's text
  json run;

  void prepare_dir() const;
  void training();
  void train_ceiling(const ModelArithmetic& arith);
  void decoding(const ModelArithmetic& arith, const MeanLengths& lengths, const std::string& src, const std::string& ref);
  void decode_ceilings(const ModelArithmetic& arith);
};

json machine_info() {
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  return {{"cpu", cpu_model()}, {"cores", std::thread::hardware_concurrency()}, {"libtorch", TORCH_VERSION},
          {"blas", blas_description()}, {"malloc", malloc_description()}, {"bf16", cpu_has_bf16()},
          {"bf16_kernel", bf16_kernel_name(bf16_kernel(this_cpu_flags()))}, {"cpu_flags", kernel_flags(this_cpu_flags())},
          {"omp_wait_policy", wait_policy ? wait_policy : ""}};
}

// A fresh work directory for the run, with the decode model's tokenizers, so that no child trains
// SentencePiece again.
void BenchRun::prepare_dir() const {
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"spm.model", "spm.vocab", "spm.src.model", "spm.src.vocab", "spm.tgt.model", "spm.tgt.vocab"}) {
    std::error_code ec;
    if (fs::exists(fs::path(model_dir) / f)) fs::copy_file(fs::path(model_dir) / f, fs::path(dir) / f, ec);
  }
}

// Training speed: (repeats + 1) windows of updates in a child `attnmt train`, the first a warm-up.
void BenchRun::training() {
  const int steps = o.window_steps * (o.repeats + 1);
  spdlog::info("[bench] {}: training {} updates at {} thread(s)", name, steps, threads);
  phase("training at " + std::to_string(threads) + " thread(s)");
  std::vector<std::string> train_args = {"train", config_path};
  for (const auto& s : o.overrides) train_args.insert(train_args.end(), {"--set", s});
  train_args.insert(train_args.end(), {"--threads", std::to_string(threads), "--set",
                          "train.save_dir=" + dir, "--set", "train.max_steps=" + std::to_string(steps), "--set",
                          "train.report_every=" + std::to_string(o.window_steps), "--set",
                          "train.valid_every=1000000000", "--set", "train.max_minutes=0", "--set",
                          "train.max_epochs=0", "--set", "train.valid_metric=ppl", "--set", "train.patience=0",
                          "--set", "data.test.src=", "--set", "data.test.tgt=", "--set", "decode.shortlist=false"});
  auto child = run_attnmt(train_args, dir + "/train.out");
  std::vector<double> windows;
  const auto log = read_train_log(dir + "/log.jsonl");
  if (!log) throw RuntimeError("bench: training wrote no '" + dir + "/log.jsonl' (see " + dir + "/train.out)");
  for (const auto& t : log->all<TrainRecord>()) {
    if (t.step > o.window_steps) windows.push_back(t.tgt_tokens_per_sec);  // the first window warms up
  }
  run["train"] = {{"tgt_tokens_per_sec", to_json(stats_of(windows))}, {"windows", windows},
                  {"window_steps", o.window_steps}, {"peak_rss_mib", child.peak_rss_mib}};
}

// The products' ceiling at the model's training shapes, and training's share of it.
void BenchRun::train_ceiling(const ModelArithmetic& arith) {
  spdlog::info("[bench] {}: GEMM ceiling at the model's shapes, {} thread(s)", name, threads);
  phase("GEMM ceiling");
  run["ceiling"]["fp32"] = gemm_ceiling(arith, cfg.train.batch_size, torch::kFloat);
  if (cpu_has_bf16()) run["ceiling"]["bf16"] = gemm_ceiling(arith, cfg.train.batch_size, torch::kBFloat16);
  if (run.contains("train")) {
    const double achieved = run["train"]["tgt_tokens_per_sec"]["median"].get<double>() *
                            arith.train_flops_per_target_token / 1e9;
    run["train"]["achieved_gflops"] = achieved;
    const std::string ceiling = cfg.train.precision == TrainPrecision::bf16 && run["ceiling"].contains("bf16") ? "bf16" : "fp32";
    run["train"]["utilisation"] = achieved / run["ceiling"][ceiling]["gflops"].get<double>();
    run["train"]["utilisation_of"] = ceiling;
  }
}

// Decoding speed in child `attnmt translate`s: greedy, beam, int8 beam (and one sentence a batch).
void BenchRun::decoding(const ModelArithmetic& arith, const MeanLengths& lengths, const std::string& src,
                        const std::string& ref) {
  const auto refs = ref.empty() ? std::vector<std::string>{} : read_lines(ref);
  struct Mode {
    std::string name;
    int beam, batch;
    DecodePrecision precision;
  };
  std::vector<Mode> modes = {{"greedy", 1, cfg.decode.batch_size, cfg.decode.precision},
                             {"beam", cfg.decode.beam_size, cfg.decode.batch_size, cfg.decode.precision}};
  // int8 beside the config's own precision: the same model, the same run (runtime/int8_gemm.h).
  if (cfg.decode.precision != DecodePrecision::int8) {
    modes.push_back({"beam_int8", cfg.decode.beam_size, cfg.decode.batch_size, DecodePrecision::int8});
  }
  if (o.baseline) modes.push_back({"beam_one_sentence", cfg.decode.beam_size, 1, cfg.decode.precision});
  if (o.decode_ceiling_only) modes.clear();
  const auto decode_arith = decode_arithmetic(arith, cfg.train.batch_size, lengths.tgt);
  for (const auto& mode : modes) {
    std::vector<double> whole, inner, whole_tok, inner_tok, rss;
    double bleu = -1;
    std::string allocator;  // as translate reports it
    bool packed_weights = false;
    for (int r = 0; r < o.repeats; ++r) {
      spdlog::info("[bench] {}: decoding ({}, beam {}, batch {}) at {} thread(s), run {}/{}", name, mode.name,
                   mode.beam, mode.batch, threads, r + 1, o.repeats);
      phase("decoding " + mode.name + ", run " + std::to_string(r + 1) + "/" + std::to_string(o.repeats));
      const std::string hyp = dir + "/" + mode.name + ".hyp", stats_file = dir + "/" + mode.name + ".json";
      auto child = run_attnmt({"translate", "--model", model_dir, "--input", src, "--output", hyp,
                              "--beam-size", std::to_string(mode.beam), "--batch-size", std::to_string(mode.batch),
                              "--threads", std::to_string(threads), "--precision", name_string(mode.precision),
                              "--packed-weights", cfg.decode.packed_weights ? "true" : "false",
                              "--workers", std::to_string(cfg.decode.workers), "--shortlist",
                              cfg.decode.shortlist ? "true" : "false", "--stats", stats_file},
                             dir + "/" + mode.name + ".out");
      const auto stats = json::parse(read_file(stats_file));
      const double sentences = stats["sentences"].get<double>(), tokens = stats["target_tokens"].get<double>();
      const double seconds = stats["translate_seconds"].get<double>();
      whole.push_back(sentences / child.seconds);
      whole_tok.push_back(tokens / child.seconds);
      inner.push_back(sentences / seconds);
      inner_tok.push_back(tokens / seconds);
      rss.push_back(child.peak_rss_mib);
      allocator = stats.value("cpu_allocator", "");
      packed_weights = stats.value("packed_weights", false);
      if (r == 0 && !refs.empty()) bleu = corpus_bleu(read_lines(hyp), refs).score;
    }
    // Achieved GFLOP/s while translating: every step's products for each of the beam's rows
    // (counted per output token: rows that end early are not subtracted) and the encoder's.
    const double achieved = (decode_arith.step_flops_per_row * mode.beam * stats_of(inner_tok).median +
                             decode_arith.encoder_flops_per_sentence * stats_of(inner).median) / 1e9;
    run["decode"][mode.name] = {{"beam_size", mode.beam}, {"batch_size", mode.batch}, {"precision", name_string(mode.precision)},
                                {"achieved_gflops", achieved},
                                {"sentences_per_sec_process", to_json(stats_of(whole))},
                                {"tokens_per_sec_process", to_json(stats_of(whole_tok))},
                                {"sentences_per_sec_translate", to_json(stats_of(inner))},
                                {"tokens_per_sec_translate", to_json(stats_of(inner_tok))},
                                {"peak_rss_mib", stats_of(rss).max}, {"bleu", bleu},
                                {"cpu_allocator", allocator}, {"packed_weights", packed_weights}};
  }
}

// Decoding's ceiling (per instruction-set level too), and each decoding mode's share of it.
void BenchRun::decode_ceilings(const ModelArithmetic& arith) {
  phase("decoding's GEMM ceiling");
  const auto rows = static_cast<int64_t>(cfg.decode.batch_size) * cfg.decode.beam_size;
  run["decode_ceiling"] = decode_ceiling(arith, rows, !o.decode_ceiling_only);
  if (!o.decode_ceiling_only && !o.isa_levels.empty()) {
    phase("decoding's GEMM ceiling per instruction-set level");
    run["decode_ceiling_per_isa"] =
        ceilings_per_level(o, config_path, model_dir, threads, dir, run["decode_ceiling"]);
  }
  const auto& ceiling = run["decode_ceiling"];
  // (a --decode-ceiling-only child decodes nothing: its run has no "decode")
  if (run.contains("decode")) {
    for (auto& [mode, d] : run["decode"].items()) {
      const std::string precision = d["precision"];
      const std::string of = ceiling.contains(precision) ? precision : "fp32";
      d["utilisation"] = d["achieved_gflops"].get<double>() / ceiling[of]["gflops"].get<double>();
      d["utilisation_of"] = of;
      // Decoding's share of the fastest ceiling this CPU has, whatever precision it ran in.
      const std::string fastest = ceiling["fastest"];
      d["share_of_fastest"] = d["achieved_gflops"].get<double>() / ceiling[fastest]["gflops"].get<double>();
      d["fastest"] = fastest;
    }
  }
}

}  // namespace

json run_bench(const BenchOptions& o) {
  if (o.configs.empty()) throw InputError("bench: no config given");
  if (!o.models.empty() && o.models.size() != o.configs.size()) {
    throw InputError("bench: --model must be given once per config (" + std::to_string(o.configs.size()) + ")");
  }
  if (o.repeats < 1 || o.window_steps < 1) throw InputError("bench: --repeats and --window-steps must be >= 1");
  const std::string work = o.work_dir.empty() ? (fs::temp_directory_path() / ("attnmt_bench." + std::to_string(::getpid()))).string()
                                              : o.work_dir;
  fs::create_directories(work);
  json results = {{"machine", machine_info()}, {"runs", json::array()}};
  spdlog::info("[bench] {} ({}) | {} cores | LibTorch {} | {} | bf16 products: {} | malloc: {}",
               results["machine"]["cpu"].get<std::string>(), kernel_flags(this_cpu_flags()),
               std::thread::hardware_concurrency(), TORCH_VERSION, blas_description(),
               bf16_kernel_name(bf16_kernel(this_cpu_flags())), malloc_description());

  Progress bar("[bench]", "configs", static_cast<int64_t>(o.configs.size()));
  for (size_t c = 0; c < o.configs.size(); ++c) {
    const auto& config_path = o.configs[c];
    const Config cfg = load_config_file(config_path, o.overrides);
    const std::string name = fs::path(config_path).stem().string();
    const std::string model_dir = o.models.empty() ? cfg.train.save_dir : o.models[c];
    const bool have_model = has_model(model_dir);
    for (const int requested : o.threads) {
      BenchRun b{o, cfg, config_path, name, model_dir, "", resolve_threads(requested), {}, {}};
      b.phase = [&](const std::string& what) { bar.update(static_cast<int64_t>(c), {name + ": " + what}, "", true); };
      b.dir = (fs::path(work) / (name + ".t" + std::to_string(b.threads))).string();
      b.run = {{"config", config_path}, {"name", name}, {"threads", b.threads}, {"precision", name_string(cfg.train.precision)},
               {"shortlist", cfg.decode.shortlist}, {"attention", cfg.model.attention.type}, {"batch_size", cfg.train.batch_size}};
      b.prepare_dir();
      if (o.train) b.training();

      // The arithmetic, from the training data's mean real lengths under the model's tokenizers.
      configure_compute(b.threads, cfg.gemm);  // the ceiling is measured with the products the config asks for
      b.run["gemm"] = gemm_description();
      const auto tokenizers = load_or_train_tokenizers(cfg.tokenizer, b.dir, nullptr, cfg.train.seed);
      const auto lengths = mean_lengths(cfg.data, tokenizers);
      const auto arith = model_arithmetic(cfg.model, tokenizers.tgt->vocab_size(), cfg.train.batch_size,
                                          lengths.src, lengths.tgt);
      b.run["flops"] = {{"train_flops_per_target_token", arith.train_flops_per_target_token},
                        {"mean_src_tokens", lengths.src}, {"mean_tgt_tokens", lengths.tgt}};
      if (o.gemm && !o.decode_ceiling_only) b.train_ceiling(arith);

      if (o.decode && have_model) {
        const std::string src = o.test_src.empty() ? cfg.data.test.src : o.test_src;
        const std::string ref = o.test_tgt.empty() ? cfg.data.test.tgt : o.test_tgt;
        if (src.empty() && !o.decode_ceiling_only) {
          throw InputError("bench: " + config_path + " has no data.test and no --test-src was given");
        }
        b.decoding(arith, lengths, src, ref);
        if (o.gemm) b.decode_ceilings(arith);
        b.run["decode_model"] = model_dir;
      } else if (o.decode) {
        b.run["decode_skipped"] = "no trained model in " + model_dir;
        spdlog::warn("[bench] {}: no trained model in '{}': decoding not measured", name, model_dir);
      }
      results["runs"].push_back(std::move(b.run));
    }
  }
  return results;
}

std::string bench_table(const json& results) {
  auto fig = [](const json& s, int decimals = 0) {
    return str(s["median"].get<double>(), decimals) + " (" + str(s["min"].get<double>(), decimals) + "–" +
           str(s["max"].get<double>(), decimals) + ")";
  };
  const auto& m = results["machine"];
  std::string out = "Machine: " + m["cpu"].get<std::string>() + ", " + std::to_string(m["cores"].get<int>()) + " cores";
  if (m.contains("cpu_flags")) out += " (" + m["cpu_flags"].get<std::string>() + ")";
  out += "; LibTorch " + m["libtorch"].get<std::string>() + "; " + m["blas"].get<std::string>();
  if (m.contains("bf16_kernel")) out += "; bf16 products: " + m["bf16_kernel"].get<std::string>();
  if (m.contains("malloc")) out += "; malloc: " + m["malloc"].get<std::string>();
  std::set<std::string> gemms;  // what ran the fp32 products (config key gemm), per run
  for (const auto& r : results["runs"]) {
    if (r.contains("gemm")) gemms.insert(r["gemm"].get<std::string>());
  }
  for (const auto& g : gemms) out += (g == *gemms.begin() ? "; fp32 products: " : ", ") + g;
  out += "; OMP_WAIT_POLICY=" + m["omp_wait_policy"].get<std::string>() + "\n\n";
  out += "| config | threads | train tgt tok/s | train peak RSS MiB | MFLOP/tok | achieved GFLOP/s | ceiling GFLOP/s "
         "(fp32 / bf16) | utilisation | greedy sent/s | beam sent/s | beam int8 sent/s | beam GFLOP/s (share of the "
         "decode ceiling), fp32 / int8 | beam 1-at-a-time sent/s | decode peak RSS MiB | BLEU greedy / beam / int8 |\n";
  out += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : results["runs"]) {
    out += "| " + r["name"].get<std::string>() + (r["precision"] == "bf16" ? " (bf16)" : "") +
           (r.value("shortlist", false) ? " (shortlist)" : "") + " | " +
           std::to_string(r["threads"].get<int>()) + " | ";
    if (r.contains("train")) {
      out += fig(r["train"]["tgt_tokens_per_sec"]) + " | " + str(r["train"]["peak_rss_mib"].get<double>()) + " | ";
    } else {
      out += "– | – | ";
    }
    out += str(r["flops"]["train_flops_per_target_token"].get<double>() / 1e6, 1) + " | ";
    out += r.contains("train") && r["train"].contains("achieved_gflops")
               ? str(r["train"]["achieved_gflops"].get<double>(), 1) + " | "
               : "– | ";
    if (r.contains("ceiling")) {
      out += str(r["ceiling"]["fp32"]["gflops"].get<double>(), 1) +
             (r["ceiling"].contains("bf16") ? " / " + str(r["ceiling"]["bf16"]["gflops"].get<double>(), 1) : "") + " | ";
    } else {
      out += "– | ";
    }
    out += r.contains("train") && r["train"].contains("utilisation")
               ? str(100 * r["train"]["utilisation"].get<double>()) + "% of " + r["train"]["utilisation_of"].get<std::string>() + " | "
               : "– | ";
    if (r.contains("decode")) {
      const auto& d = r["decode"];
      const bool int8 = d.contains("beam_int8");
      out += fig(d["greedy"]["sentences_per_sec_process"]) + " | " + fig(d["beam"]["sentences_per_sec_process"]) + " | ";
      out += int8 ? fig(d["beam_int8"]["sentences_per_sec_process"]) + " | " : "– | ";
      auto gflops = [](const json& m) {
        return str(m["achieved_gflops"].get<double>(), 1) +
               (m.contains("utilisation") ? " (" + str(100 * m["utilisation"].get<double>()) + "%)" : "");
      };
      out += gflops(d["beam"]) + (int8 ? " / " + gflops(d["beam_int8"]) : "") + " | ";
      out += d.contains("beam_one_sentence") ? fig(d["beam_one_sentence"]["sentences_per_sec_process"], 1) + " | " : "– | ";
      double rss = 0;
      for (const auto& [k, v] : d.items()) rss = std::max(rss, v["peak_rss_mib"].get<double>());
      out += str(rss) + " | " + str(d["greedy"]["bleu"].get<double>(), 2) + " / " + str(d["beam"]["bleu"].get<double>(), 2) +
             (int8 ? " / " + str(d["beam_int8"]["bleu"].get<double>(), 2) : "") + " |\n";
    } else {
      out += "– | – | – | – | – | – | – |\n";
    }
  }
  out += "\nFigures: median (min–max) of the windows / runs. Decoding sentences/s are for the whole process "
         "(start to exit, model loading included); bench.json also has translating alone and tokens/s.\n";
  // The decoder step's ceilings per path: which instruction set pays off on this CPU.
  std::string ceilings;
  for (const auto& r : results["runs"]) {
    if (!r.contains("decode_ceiling")) continue;
    const auto& c = r["decode_ceiling"];
    std::string cells;
    for (const auto& [path, v] : c.items()) {
      if (v.is_object() && v.contains("gflops")) cells += (cells.empty() ? "" : ", ") + path + " " + str(v["gflops"].get<double>(), 1);
    }
    std::string share;
    if (r.contains("decode") && r["decode"].contains("beam") && r["decode"]["beam"].contains("share_of_fastest")) {
      share = str(100 * r["decode"]["beam"]["share_of_fastest"].get<double>()) + "%";
    }
    ceilings += "| " + r["name"].get<std::string>() + " | " + std::to_string(c["rows"].get<int64_t>()) + " | " + cells +
                " | " + c["fastest"].get<std::string>() + " | " + (share.empty() ? "–" : share) + " |\n";
  }
  if (!ceilings.empty()) {
    out += "\n| run | rows | decoder step's ceiling, GFLOP/s per path (int8: the kernel in use, then each kernel) | "
           "fastest | beam's share of it |\n|---|---|---|---|---|\n" + ceilings;
  }
  // The same per instruction-set level (ATTNMT_CPU_ISA): what each class of CPU below this one gets.
  std::string levels;
  for (const auto& r : results["runs"]) {
    if (!r.contains("decode_ceiling_per_isa")) continue;
    for (const auto& v : r["decode_ceiling_per_isa"]) {
      levels += "| " + r["name"].get<std::string>() + " | " + v["level"].get<std::string>() + " | " + str(v["fp32"].get<double>(), 1) + " | " +
                (v.contains("bf16") ? str(v["bf16"].get<double>(), 1) + " (" + v["bf16_kernel"].get<std::string>() + ")"
                                    : std::string("–")) +
                " | " + str(v["int8"].get<double>(), 1) + " (" + v["int8_kernel"].get<std::string>() + ") |\n";
    }
  }
  if (!levels.empty()) {
    out += "\n| run | ATTNMT_CPU_ISA | decoder step fp32 GFLOP/s | bf16 (kernel) | int8 (kernel) |\n"
           "|---|---|---:|---:|---:|\n" + levels;
  }
  return out;
}

}  // namespace attnmt
