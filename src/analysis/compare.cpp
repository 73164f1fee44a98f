#include "analysis/compare.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "align/links.h"
#include "analysis/aligner.h"
#include "analysis/perplexity.h"
#include "config/loader.h"
#include "data/corpus.h"
#include "eval/metrics.h"
#include "eval/significance.h"
#include "runtime/compute.h"
#include "io/model_file.h"
#include "io/train_log.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/progress.h"
#include "util/process.h"
#include "util/text_io.h"

namespace fs = std::filesystem;

namespace attnmt {
namespace {

// One training run: a config, or one seed of it (--seeds).
struct Run {
  std::string name, path;
  Config config;                       // the YAML with compare's --set and the run's own
  std::vector<std::string> overrides;  // compare's --set, then the seed's train.seed / train.save_dir
  bool has_seed = false;
  uint64_t seed = 0;
  std::string label() const { return has_seed ? name + " seed " + std::to_string(seed) : name; }
  std::string file_stem() const { return has_seed ? name + ".seed" + std::to_string(seed) : name; }
};

// A config and its runs (one, or one per seed).
struct Variant {
  std::string name, path;
  std::vector<Run> runs;
};

// The last line of a child's log, for error messages.
std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

std::string now_text() {
  const auto t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M", std::localtime(&t));
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return std::string(buf) + " on " + host + " (" + std::to_string(std::thread::hardware_concurrency()) + " cores)";
}

// Training speed, steps, time and learning curves from SAVE_DIR/log.jsonl (the run's own log;
// a resumed run appends to it; io/train_log.h). Lines that do not parse (a kill mid-write) are skipped.
void read_training_log(const std::string& save_dir, const std::string& label, VariantReport* v) {
  const auto path = (fs::path(save_dir) / "log.jsonl").string();
  const auto log = read_train_log(path);
  if (!log) {
    spdlog::warn("[compare] '{}' is missing: no training speed, steps or curves for {}", path, label);
    return;
  }
  std::vector<double> speeds;
  std::map<int64_t, CurvePoint> curve;  // by step: a resumed run may validate a step again
  double last_elapsed = kMissing;
  int64_t last_step = -1;
  for (const auto& record : log->records) {
    if (const auto* t = std::get_if<TrainRecord>(&record)) {
      speeds.push_back(t->tgt_tokens_per_sec);
      if (t->step >= last_step) {
        last_step = t->step;
        last_elapsed = t->elapsed;
      }
    } else if (const auto* r = std::get_if<ValidRecord>(&record)) {
      if (r->step >= last_step) {
        last_step = r->step;
        last_elapsed = r->elapsed;
      }
      CurvePoint p;
      p.step = r->step;
      p.minutes = r->elapsed / 60;
      p.bleu = r->valid_bleu.value_or(kMissing);
      p.ppl = r->valid_ppl;
      curve[r->step] = p;
    }
  }
  if (!speeds.empty()) {
    std::sort(speeds.begin(), speeds.end());
    const size_t n = speeds.size();
    v->row.train_tokens_per_sec = n % 2 ? speeds[n / 2] : (speeds[n / 2 - 1] + speeds[n / 2]) / 2;
  }
  if (last_step >= 0) {
    v->row.steps = last_step;
    v->row.train_minutes = last_elapsed / 60;
  }
  v->curves.emplace_back();
  for (const auto& [step, p] : curve) v->curves.back().push_back(p);
}

std::string attention_name(const Config& c) {
  return c.model.attention.type + (c.model.attention.coverage ? "+coverage" : "");
}

}  // namespace

// Whether the run in config.train.save_dir has reached a limit of `config` (the YAML with
// compare's --set: a raised train.max_steps makes a finished run unfinished again).
bool training_finished(const Config& config) {
  const auto& save_dir = config.train.save_dir;
  if (!fs::is_directory(save_dir)) return false;
  const auto steps = list_step_checkpoints(save_dir);
  if (steps.empty()) return false;
  const auto header = CheckpointFile(steps.front()).header();
  const auto& t = config.train;
  if (reached_limit(t, header.progress)) return true;
  // no limit at all: only a signal ends such a run, and whatever it left is its final model
  return t.max_steps <= 0 && t.max_epochs <= 0 && t.max_minutes <= 0 && t.patience <= 0;
}

namespace {

// Each row's BLEU and chrF p-values against row `baseline` (paired bootstrap resampling, 1,000
// resamples, sacreBLEU's seed: the numbers `attnmt score --paired-bs` gives for these outputs).
void mark_significance(const std::vector<std::vector<std::string>>& hyps, const std::vector<std::string>& refs,
                       size_t baseline, CompareReport* report) {
  if (hyps.size() < 2) return;
  std::vector<size_t> order{baseline};  // the baseline first, as the tests take it
  for (size_t k = 0; k < hyps.size(); ++k)
    if (k != baseline) order.push_back(k);
  for (const bool bleu : {true, false}) {
    std::vector<MetricStats> systems;
    for (size_t k : order) systems.push_back(bleu ? bleu_stats(hyps[k], refs) : chrf_stats(hyps[k], refs));
    const auto results = paired_bootstrap(systems, /*resamples=*/1000, /*seed=*/12345);
    for (size_t i = 1; i < results.size(); ++i) {
      auto& row = report->variants[order[i]].row;
      (bleu ? row.bleu_p : row.chrf_p) = *results[i].p_value;
    }
  }
}

}  // namespace

namespace {

// What every run of a comparison shares.
struct Bench {
  const CompareOptions& options;
  CorpusConfig test;
  ParallelText test_text;
  AlignmentText gold_text;
  std::vector<GoldLinks> gold;
  std::vector<std::string> sample_sources;
  fs::path out_dir;
  std::string self;
};

// A child `attnmt translate` of the test set by the model in `save_dir`, writing `hyp_path` and
// `--stats stats_path`, with the config's decode.* (its YAML and --set, not the settings stored in
// the model) and --threads; then `extra` flags.
std::vector<std::string> translate_argv(const Bench& b, const std::string& save_dir,
                                        const std::vector<std::string>& decode_settings, const std::string& hyp_path,
                                        const std::string& stats_path, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {b.self,     "translate", "--model", save_dir,   "--input",
                                   b.test.src, "--output",  hyp_path,  "--stats", stats_path};
  for (const auto& s : decode_settings) argv.insert(argv.end(), {"--set", s});
  if (b.options.threads >= 0) argv.insert(argv.end(), {"--threads", std::to_string(b.options.threads)});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// compare --streaming: the test set streamed by the model's own policy in a child `translate
// --streaming` (the config's decode.*), its BLEU and chrF, and SimulEval's latency in words from
// the child's --stats. A model the child refuses to stream (exit 2: no hard head, no wait-k) keeps
// its figures missing.
void stream_test_set(const Run& run, const Bench& b, const std::string& save_dir,
                     const std::vector<std::string>& decode_settings, VariantRow* row) {
  const auto stem = run.file_stem();
  const auto hyp_path = (b.out_dir / "hyp" / (stem + ".streamed.txt")).string();
  const auto stats_path = (b.out_dir / "logs" / (stem + ".streamed.json")).string();
  const auto log_path = (b.out_dir / "logs" / (stem + ".streamed.log")).string();
  const auto argv = translate_argv(b, save_dir, decode_settings, hyp_path, stats_path,
                                   {"--streaming", "--reference", b.test.tgt, "--progress", "never"});
  spdlog::info("[compare] {}: streaming {} sentences", run.label(), b.test_text.src.size());
  const auto streamed = run_child(argv, log_path);
  if (streamed.exit_code == 2) {
    spdlog::warn("[compare] {}: not streamed: {}", run.label(), last_line(log_path));
    return;
  }
  if (streamed.exit_code != 0) {
    throw RuntimeError("streaming with '" + save_dir + "' failed (exit " + std::to_string(streamed.exit_code) +
                       "): " + last_line(log_path));
  }
  const auto stats = nlohmann::json::parse(read_file(stats_path), nullptr, false);
  const auto words = stats.is_object() ? stats.value("latency", nlohmann::json::object()).value("words", nlohmann::json::object())
                                       : nlohmann::json::object();
  if (!words.is_object() || !words.contains("LAAL")) {
    throw RuntimeError("streaming with '" + save_dir + "': no latency in words in '" + stats_path + "'");
  }
  const auto hyps = read_lines(hyp_path);
  row->stream_bleu = corpus_bleu(hyps, b.test_text.tgt).score;
  row->stream_chrf = corpus_chrf(hyps, b.test_text.tgt).score;
  row->stream_al = words.value("AL", kMissing);
  row->stream_laal = words.value("LAAL", kMissing);
  row->stream_ap = words.value("AP", kMissing);
  row->stream_dal = words.value("DAL", kMissing);
  spdlog::info("[compare] {}: streamed BLEU {:.2f}, LAAL {:.2f} words", run.label(), row->stream_bleu, row->stream_laal);
}

// Trains `run` when asked and missing, decodes the test set in a child process and measures
// everything on its model. `hyps` receives the test output; heatmaps only with `samples`.
VariantReport evaluate_run(const Run& run, const Bench& b, bool samples, std::vector<std::string>* hyps,
                           const std::function<void(const std::string&)>& phase) {
  const auto& options = b.options;
  const auto& save_dir = run.config.train.save_dir;
  spdlog::info("[compare] {} ({}): {}", run.label(), attention_name(run.config), save_dir);

  // 1. train
  if (options.train_missing && !training_finished(run.config)) {
    const bool resume = fs::is_directory(save_dir) && !list_step_checkpoints(save_dir).empty();
    std::vector<std::string> argv = {b.self, "train", run.path};
    if (resume) argv.push_back("--resume");
    if (options.threads >= 0) argv.insert(argv.end(), {"--threads", std::to_string(options.threads)});
    if (!run.overrides.empty()) {
      argv.push_back("--set");
      argv.insert(argv.end(), run.overrides.begin(), run.overrides.end());
    }
    spdlog::info("[compare] {}: training{}", run.label(), resume ? " (resuming)" : "");
    phase("training");
    const auto r = run_child(argv);
    if (r.exit_code != 0) {
      throw RuntimeError("training '" + run.path + "'" + (run.has_seed ? " with seed " + std::to_string(run.seed) : "") +
                         " failed (exit " + std::to_string(r.exit_code) + "); see '" +
                         (fs::path(save_dir) / "train.log").string() + "'");
    }
  }
  if (!fs::is_directory(save_dir) || !has_model(save_dir)) {
    throw InputError("'" + run.path + "': no trained model in '" + save_dir +
                     "' (train it first, or pass --train-missing)");
  }
  if (!options.train_missing && !training_finished(run.config)) {
    spdlog::warn("[compare] {}: the run in '{}' has not reached its stop criteria; using the model it left",
                 run.label(), save_dir);
  }

  VariantReport vr;
  auto& row = vr.row;
  row.variant = run.name;
  row.config_path = run.path;

  // 2. decode in a child process: its own clock and its own peak RSS
  const auto hyp_path = (b.out_dir / "hyp" / (run.file_stem() + ".txt")).string();
  const auto timing_path = (b.out_dir / "logs" / (run.file_stem() + ".timing.json")).string();
  const auto log_path = (b.out_dir / "logs" / (run.file_stem() + ".translate.log")).string();
  const auto decode_settings = config_settings(run.config, "decode.");
  const auto argv = translate_argv(b, save_dir, decode_settings, hyp_path, timing_path);
  spdlog::info("[compare] {}: translating {} sentences", run.label(), b.test_text.src.size());
  phase("translating");
  const auto decoded = run_child(argv, log_path);
  if (decoded.exit_code != 0) {
    throw RuntimeError("translating with '" + save_dir + "' failed (exit " + std::to_string(decoded.exit_code) +
                       "): " + last_line(log_path));
  }
  const auto timing = nlohmann::json::parse(read_file(timing_path), nullptr, false);
  row.decode_seconds = timing.is_object() ? timing.value("translate_seconds", kMissing) : kMissing;
  row.decode_process_seconds = decoded.seconds;
  row.decode_sentences_per_sec = b.test_text.src.size() / std::max(row.decode_seconds, 1e-9);
  row.peak_rss_mib = decoded.peak_rss_mib;
  *hyps = read_lines(hyp_path);
  row.bleu = corpus_bleu(*hyps, b.test_text.tgt).score;
  row.chrf = corpus_chrf(*hyps, b.test_text.tgt).score;

  if (options.streaming) stream_test_set(run, b, save_dir, decode_settings, &row);

  // 3. in this process: the model's size, perplexity, attention
  auto loaded = load_model(save_dir, "", "", decode_settings);
  configure_compute(options.threads >= 0 ? options.threads : loaded.config.threads, loaded.config.gemm);
  row.attention = attention_name(loaded.config);
  row.decoder_style = name_string(loaded.config.model.decoder.style);
  row.parameters = loaded.model->parameter_count();
  row.beam_size = loaded.config.decode.beam_size;
  if (!loaded.config.data.valid.src.empty()) {
    row.valid_ppl =
        perplexity(loaded, read_parallel(loaded.config.data.valid, "valid"), loaded.config.train.batch_size);
  }
  if (samples && !b.sample_sources.empty()) {
    auto options_decode = translate_options(loaded.config.decode);
    const auto sentences = translate_with_attention(loaded, b.sample_sources, options_decode);
    for (const auto& s : sentences) {
      vr.heatmaps.push_back({s.src_words, s.tgt_words, s.words, ""});
      vr.translations.push_back(s.translation);
    }
  }
  if (!b.gold.empty()) {
    const auto links = align(loaded, b.gold_text.src, b.gold_text.tgt, AlignOptions{});
    const auto aer = alignment_error_rate(links, b.gold);
    row.aer = aer.aer;
    row.precision = aer.precision;
    row.recall = aer.recall;
  }
  read_training_log(save_dir, run.label(), &vr);
  spdlog::info("[compare] {}: BLEU {:.2f}, chrF {:.2f}, valid ppl {:.2f}, {:.1f} sent/s, {:.0f} MiB{}", run.label(),
               row.bleu, row.chrf, row.valid_ppl, row.decode_sentences_per_sec, row.peak_rss_mib,
               b.gold.empty() ? std::string() : fmt::format(", AER {:.1f}%", 100 * row.aer));
  return vr;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

Spread spread_of(const std::vector<double>& v) {
  Spread s;
  if (v.size() < 2 || std::any_of(v.begin(), v.end(), [](double x) { return !std::isfinite(x); })) return s;
  const double m = mean_of(v);
  double squares = 0;
  for (double x : v) squares += (x - m) * (x - m);
  s.sd = std::sqrt(squares / static_cast<double>(v.size() - 1));
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

// One row from a config's seeds: means (peak RSS: the largest), the spreads, every seed's figures
// and curve; the heatmaps and the model's description are the first seed's.
VariantReport merge_seeds(std::vector<VariantReport> runs, const std::vector<Run>& seeds) {
  std::vector<VariantRow> rows;
  for (const auto& r : runs) rows.push_back(r.row);
  auto values = [&](double VariantRow::*member) {
    std::vector<double> v;
    for (const auto& r : rows) v.push_back(r.*member);
    return v;
  };
  VariantReport merged = std::move(runs.front());
  for (size_t k = 1; k < runs.size(); ++k) {
    for (auto& c : runs[k].curves) merged.curves.push_back(std::move(c));
  }
  auto& row = merged.row;
  for (size_t k = 0; k < rows.size(); ++k) {
    const auto& r = rows[k];
    row.seeds.push_back(
        {seeds[k].seed, seeds[k].config.train.save_dir, r.bleu, r.chrf, r.valid_ppl, r.aer, r.stream_bleu, r.stream_laal});
  }
  for (auto member : {&VariantRow::bleu, &VariantRow::chrf, &VariantRow::valid_ppl, &VariantRow::aer,
                      &VariantRow::precision, &VariantRow::recall, &VariantRow::train_tokens_per_sec,
                      &VariantRow::decode_sentences_per_sec, &VariantRow::decode_seconds,
                      &VariantRow::decode_process_seconds, &VariantRow::train_minutes, &VariantRow::stream_bleu,
                      &VariantRow::stream_chrf, &VariantRow::stream_al, &VariantRow::stream_laal,
                      &VariantRow::stream_ap, &VariantRow::stream_dal}) {
    row.*member = mean_of(values(member));
  }
  const auto rss = values(&VariantRow::peak_rss_mib);
  row.peak_rss_mib = *std::max_element(rss.begin(), rss.end());
  row.bleu_spread = spread_of(values(&VariantRow::bleu));
  row.chrf_spread = spread_of(values(&VariantRow::chrf));
  row.ppl_spread = spread_of(values(&VariantRow::valid_ppl));
  row.aer_spread = spread_of(values(&VariantRow::aer));
  return merged;
}

}  // namespace

std::vector<uint64_t> parse_seeds(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return InputError("--seeds " + text + ": " + why + " (a count N for seeds 1..N, or a list: 1,2,3)");
  };
  std::vector<uint64_t> seeds;
  if (text.empty()) throw bad("empty");
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const auto item = text.substr(at, comma - at);
    if (item.empty() || item.size() > 18 || item.find_first_not_of("0123456789") != std::string::npos) {
      throw bad("'" + item + "' is not a non-negative integer");
    }
    seeds.push_back(std::stoull(item));
    at = comma + 1;
  }
  if (text.find(',') == std::string::npos) {  // a count
    const uint64_t n = seeds.front();
    if (n < 1 || n > 100) throw bad("the count must be 1 to 100");
    seeds.clear();
    for (uint64_t s = 1; s <= n; ++s) seeds.push_back(s);
  }
  for (size_t i = 0; i < seeds.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (seeds[i] == seeds[j]) throw bad("seed " + std::to_string(seeds[i]) + " is given twice");
  }
  return seeds;
}

CompareReport compare(const CompareOptions& options) {
  if (options.configs.empty()) throw InputError("compare: no config given");
  if (options.test_src.empty() != options.test_tgt.empty()) {
    throw InputError("--test-src and --test-tgt go together");
  }
  if (options.gold_text.empty() != options.gold_links.empty()) {
    throw InputError("--align-gold-src and --align-gold go together");
  }
  if (options.samples < 0) throw InputError("--samples must be >= 0");

  // Everything that can be wrong with the input is checked before anything is trained.
  std::vector<Variant> variants;
  std::vector<const Run*> all_runs;
  for (const auto& path : options.configs) {
    Variant v{fs::path(path).stem().string(), path, {}};
    auto config_overrides = options.overrides;
    if (!options.save_root.empty()) {
      config_overrides.push_back("train.save_dir=" + (fs::path(options.save_root) / v.name).string());
    }
    const auto config = load_config_file(path, config_overrides);
    if (config.train.save_dir.empty()) throw InputError("'" + path + "': missing required key 'train.save_dir'");
    for (const auto& other : variants) {
      if (other.name == v.name)
        throw InputError("two configs named '" + v.name + "': '" + other.path + "' and '" + path + "'");
    }
    if (options.seeds.empty()) {
      v.runs.push_back({v.name, path, config, config_overrides});
    } else {
      for (const uint64_t seed : options.seeds) {
        auto overrides = config_overrides;
        overrides.push_back("train.seed=" + std::to_string(seed));
        overrides.push_back("train.save_dir=" + (fs::path(config.train.save_dir) / ("seed" + std::to_string(seed))).string());
        v.runs.push_back({v.name, path, load_config_file(path, overrides), overrides, true, seed});
      }
    }
    variants.push_back(std::move(v));
  }
  for (const auto& v : variants) {
    for (const auto& run : v.runs) {
      for (const auto* other : all_runs) {
        if (fs::weakly_canonical(other->config.train.save_dir) == fs::weakly_canonical(run.config.train.save_dir)) {
          throw InputError("'" + other->path + "' and '" + run.path + "' share train.save_dir '" +
                           run.config.train.save_dir + "'");
        }
      }
      if (options.train_missing && !training_finished(run.config)) check_training_inputs(run.config, run.path);
      all_runs.push_back(&run);
    }
  }
  CorpusConfig test{options.test_src, options.test_tgt};
  if (test.src.empty()) {
    const auto& front = variants.front().runs.front();
    for (const auto& v : variants) {
      const auto& c = v.runs.front().config;
      if (c.data.test.src.empty()) {
        throw InputError("'" + v.path + "' has no data.test: give the test set with --test-src and --test-tgt");
      }
      if (c.data.test.src != front.config.data.test.src || c.data.test.tgt != front.config.data.test.tgt) {
        throw InputError("'" + front.path + "' and '" + v.path +
                         "' have different data.test: give one test set with --test-src and --test-tgt");
      }
    }
    test = front.config.data.test;
  }
  Bench bench{options, test, read_parallel(test, "test"), {}, {}, {}, {}, self_executable()};
  const auto& test_text = bench.test_text;
  if (test_text.src.empty()) throw InputError("test set '" + test.src + "' is empty");

  CompareReport report;
  report.test_src = test.src;
  report.test_tgt = test.tgt;
  report.test_sentences = test_text.src.size();
  report.created = now_text();
  report.seeds = options.seeds.size();
  report.streaming = options.streaming;
  const size_t samples = std::min(static_cast<size_t>(options.samples), test_text.src.size());
  report.sample_sources.assign(test_text.src.begin(), test_text.src.begin() + samples);
  report.sample_references.assign(test_text.tgt.begin(), test_text.tgt.begin() + samples);
  bench.sample_sources = report.sample_sources;

  if (!options.gold_links.empty()) {
    bench.gold_text = read_alignment_text(options.gold_text, options.gold_text_tgt);
    bench.gold = read_talp(options.gold_links);
    check_gold_links(bench.gold, bench.gold_text.src, bench.gold_text.tgt, options.gold_links);
    report.gold_text = options.gold_text;
    report.gold_links = options.gold_links;
    report.gold_sentences = bench.gold.size();
  }

  // Output folders: the report dir, or a scratch dir removed at the end.
  bench.out_dir = options.report_dir;
  const bool scratch = bench.out_dir.empty();
  if (scratch) bench.out_dir = fs::temp_directory_path() / ("attnmt_compare_" + std::to_string(::getpid()));
  struct ScratchGuard {  // the scratch dir goes, on errors too
    fs::path dir;
    ~ScratchGuard() {
      std::error_code ignored;
      if (!dir.empty()) fs::remove_all(dir, ignored);
    }
  } guard{scratch ? bench.out_dir : fs::path()};
  std::error_code ec;
  fs::create_directories(bench.out_dir / "hyp", ec);
  fs::create_directories(bench.out_dir / "logs", ec);
  if (ec) throw InputError("--report: cannot create '" + bench.out_dir.string() + "': " + ec.message());

  size_t baseline = 0;  // the row the others are tested against
  if (!options.baseline.empty()) {
    const auto it = std::find_if(variants.begin(), variants.end(), [&](const Variant& v) { return v.name == options.baseline; });
    if (it == variants.end()) throw InputError("--baseline " + options.baseline + ": no config of that name (a config's file name without .yaml)");
    baseline = static_cast<size_t>(it - variants.begin());
  }
  report.baseline = variants[baseline].name;
  if (!options.seeds.empty()) report.significance_seed = options.seeds.front();
  std::vector<std::vector<std::string>> first_hyps;  // each variant's test output (its first seed's)
  Progress bar("[compare]", "runs", static_cast<int64_t>(all_runs.size()));
  int64_t done = 0;
  for (const auto& v : variants) {
    std::vector<VariantReport> runs;
    for (const auto& run : v.runs) {
      auto phase = [&](const std::string& what) { bar.update(done, {run.label() + ": " + what}, "", true); };
      std::vector<std::string> hyps;
      runs.push_back(evaluate_run(run, bench, /*samples=*/runs.empty(), &hyps, phase));
      if (runs.size() == 1) first_hyps.push_back(std::move(hyps));
      ++done;
      phase("done");
    }
    report.variants.push_back(options.seeds.empty() ? std::move(runs.front()) : merge_seeds(std::move(runs), v.runs));
  }

  mark_significance(first_hyps, test_text.tgt, baseline, &report);
  if (!scratch) {
    write_file_atomic((bench.out_dir / "results.md").string(), results_markdown(report));
    write_file_atomic((bench.out_dir / "results.csv").string(), results_csv(report));
    write_file_atomic((bench.out_dir / "results.json").string(), results_json(report));
    write_file_atomic((bench.out_dir / "index.html").string(), results_html(report));
  }
  return report;
}

}  // namespace attnmt
