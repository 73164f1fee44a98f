#include "analysis/compare.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
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
#include "util/error.h"
#include "util/logging.h"
#include "util/progress.h"
#include "util/process.h"
#include "util/text_io.h"

namespace fs = std::filesystem;

namespace attnmt {
namespace {

struct Variant {
  std::string name, path;
  Config config;
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
// a resumed run appends to it). Lines that do not parse (a kill mid-write) are skipped.
void read_training_log(const std::string& save_dir, VariantReport* v) {
  const auto path = (fs::path(save_dir) / "log.jsonl").string();
  std::ifstream in(path);
  if (!in) {
    spdlog::warn("[compare] '{}' is missing: no training speed, steps or curves for {}", path, v->row.variant);
    return;
  }
  std::vector<double> speeds;
  std::map<int64_t, CurvePoint> curve;  // by step: a resumed run may validate a step again
  std::string line;
  double last_elapsed = kMissing;
  int64_t last_step = -1;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("type") || !j.contains("step")) continue;
    const auto type = j.value("type", "");
    const int64_t step = j.value("step", int64_t{0});
    if (type == "train" && j.contains("tgt_tokens_per_sec")) speeds.push_back(j.value("tgt_tokens_per_sec", 0.0));
    if ((type == "train" || type == "valid") && step >= last_step && j.contains("elapsed")) {
      last_step = step;
      last_elapsed = j.value("elapsed", 0.0);
    }
    if (type == "valid") {
      CurvePoint p;
      p.step = step;
      p.minutes = j.value("elapsed", 0.0) / 60;
      if (j.contains("valid_bleu")) p.bleu = j.value("valid_bleu", kMissing);
      if (j.contains("valid_ppl")) p.ppl = j.value("valid_ppl", kMissing);
      curve[step] = p;
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
  for (const auto& [step, p] : curve) v->curve.push_back(p);
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
  for (const auto& path : options.configs) {
    Variant v{fs::path(path).stem().string(), path, load_config_file(path, options.overrides)};
    for (const auto& other : variants) {
      if (other.name == v.name)
        throw InputError("two configs named '" + v.name + "': '" + other.path + "' and '" + path + "'");
      if (fs::weakly_canonical(other.config.train.save_dir) == fs::weakly_canonical(v.config.train.save_dir)) {
        throw InputError("'" + other.path + "' and '" + path + "' share train.save_dir '" + v.config.train.save_dir +
                         "'");
      }
    }
    if (v.config.train.save_dir.empty()) throw InputError("'" + path + "': missing required key 'train.save_dir'");
    if (options.train_missing && !training_finished(v.config)) {
      check_training_inputs(v.config, path);
    }
    variants.push_back(std::move(v));
  }
  CorpusConfig test{options.test_src, options.test_tgt};
  if (test.src.empty()) {
    for (const auto& v : variants) {
      if (v.config.data.test.src.empty()) {
        throw InputError("'" + v.path + "' has no data.test: give the test set with --test-src and --test-tgt");
      }
      if (v.config.data.test.src != variants.front().config.data.test.src ||
          v.config.data.test.tgt != variants.front().config.data.test.tgt) {
        throw InputError("'" + variants.front().path + "' and '" + v.path +
                         "' have different data.test: give one test set with --test-src and --test-tgt");
      }
    }
    test = variants.front().config.data.test;
  }
  const auto test_text = read_parallel(test, "test");
  if (test_text.src.empty()) throw InputError("test set '" + test.src + "' is empty");

  CompareReport report;
  report.test_src = test.src;
  report.test_tgt = test.tgt;
  report.test_sentences = test_text.src.size();
  report.created = now_text();
  const size_t samples = std::min(static_cast<size_t>(options.samples), test_text.src.size());
  report.sample_sources.assign(test_text.src.begin(), test_text.src.begin() + samples);
  report.sample_references.assign(test_text.tgt.begin(), test_text.tgt.begin() + samples);

  AlignmentText gold_text;
  std::vector<GoldLinks> gold;
  if (!options.gold_links.empty()) {
    gold_text = read_alignment_text(options.gold_text, options.gold_text_tgt);
    gold = read_talp(options.gold_links);
    check_gold_links(gold, gold_text.src, gold_text.tgt, options.gold_links);
    report.gold_text = options.gold_text;
    report.gold_links = options.gold_links;
    report.gold_sentences = gold.size();
  }

  // Output folders: the report dir, or a scratch dir removed at the end.
  fs::path out_dir = options.report_dir;
  const bool scratch = out_dir.empty();
  if (scratch) out_dir = fs::temp_directory_path() / ("attnmt_compare_" + std::to_string(::getpid()));
  struct ScratchGuard {  // the scratch dir goes, on errors too
    fs::path dir;
    ~ScratchGuard() {
      std::error_code ignored;
      if (!dir.empty()) fs::remove_all(dir, ignored);
    }
  } guard{scratch ? out_dir : fs::path()};
  std::error_code ec;
  fs::create_directories(out_dir / "hyp", ec);
  fs::create_directories(out_dir / "logs", ec);
  if (ec) throw InputError("--report: cannot create '" + out_dir.string() + "': " + ec.message());

  size_t baseline = 0;  // the row the others are tested against
  if (!options.baseline.empty()) {
    const auto it = std::find_if(variants.begin(), variants.end(), [&](const Variant& v) { return v.name == options.baseline; });
    if (it == variants.end()) throw InputError("--baseline " + options.baseline + ": no config of that name (a config's file name without .yaml)");
    baseline = static_cast<size_t>(it - variants.begin());
  }
  report.baseline = variants[baseline].name;
  const std::string self = self_executable();
  std::vector<std::vector<std::string>> all_hyps;  // each variant's test output
    Progress bar("[compare]", "configs", static_cast<int64_t>(variants.size()));
  int64_t done = 0;
  auto phase = [&](const Variant& v, const std::string& what) { bar.update(done, {v.name + ": " + what}, "", true); };
  for (const auto& v : variants) {
    const auto& save_dir = v.config.train.save_dir;
    spdlog::info("[compare] {} ({}): {}", v.name, attention_name(v.config), save_dir);

    // 1. train
    if (options.train_missing && !training_finished(v.config)) {
      const bool resume = fs::is_directory(save_dir) && !list_step_checkpoints(save_dir).empty();
      std::vector<std::string> argv = {self, "train", v.path};
      if (resume) argv.push_back("--resume");
      if (options.threads >= 0) argv.insert(argv.end(), {"--threads", std::to_string(options.threads)});
      if (!options.overrides.empty()) {
        argv.push_back("--set");
        argv.insert(argv.end(), options.overrides.begin(), options.overrides.end());
      }
      spdlog::info("[compare] {}: training{}", v.name, resume ? " (resuming)" : "");
      phase(v, "training");
      const auto r = run_child(argv);
      if (r.exit_code != 0) {
        throw RuntimeError("training '" + v.path + "' failed (exit " + std::to_string(r.exit_code) + "); see '" +
                           (fs::path(save_dir) / "train.log").string() + "'");
      }
    }
    if (!fs::is_directory(save_dir) ||
        (!fs::exists(fs::path(save_dir) / "best.pt") && list_step_checkpoints(save_dir).empty())) {
      throw InputError("'" + v.path + "': no trained model in '" + save_dir +
                       "' (train it first, or pass --train-missing)");
    }
    if (!options.train_missing && !training_finished(v.config)) {
      spdlog::warn("[compare] {}: the run in '{}' has not reached its stop criteria; using the model it left", v.name,
                   save_dir);
    }

    VariantReport vr;
    auto& row = vr.row;
    row.variant = v.name;
    row.config_path = v.path;

    // 2. decode in a child process: its own clock and its own peak RSS
    const auto hyp_path = (out_dir / "hyp" / (v.name + ".txt")).string();
    const auto timing_path = (out_dir / "logs" / (v.name + ".timing.json")).string();
    const auto log_path = (out_dir / "logs" / (v.name + ".translate.log")).string();
    // The config's decode.* (its YAML and --set), not the settings stored in the model.
    const auto decode_settings = config_settings(v.config, "decode.");
    std::vector<std::string> argv = {self,     "translate", "--model", save_dir,       "--input",
                                     test.src, "--output",  hyp_path,  "--stats", timing_path};
    for (const auto& s : decode_settings) argv.insert(argv.end(), {"--set", s});
    if (options.threads >= 0) argv.insert(argv.end(), {"--threads", std::to_string(options.threads)});
    spdlog::info("[compare] {}: translating {} sentences", v.name, test_text.src.size());
    phase(v, "translating");
    const auto decoded = run_child(argv, log_path);
    if (decoded.exit_code != 0) {
      throw RuntimeError("translating with '" + save_dir + "' failed (exit " + std::to_string(decoded.exit_code) +
                         "): " + last_line(log_path));
    }
    const auto timing = nlohmann::json::parse(read_file(timing_path), nullptr, false);
    row.decode_seconds = timing.is_object() ? timing.value("translate_seconds", kMissing) : kMissing;
    row.decode_process_seconds = decoded.seconds;
    row.decode_sentences_per_sec = test_text.src.size() / std::max(row.decode_seconds, 1e-9);
    row.peak_rss_mib = decoded.peak_rss_mib;
    const auto hyps = read_lines(hyp_path);
    all_hyps.push_back(hyps);
    row.bleu = corpus_bleu(hyps, test_text.tgt).score;
    row.chrf = corpus_chrf(hyps, test_text.tgt).score;

    // 3. in this process: the model's size, perplexity, attention
    auto loaded = load_model(save_dir, "", "", decode_settings);
    configure_compute(options.threads >= 0 ? options.threads : loaded.config.threads, loaded.config.gemm);
    row.attention = attention_name(loaded.config);
    row.decoder_style = loaded.config.model.decoder.style;
    row.parameters = loaded.model->parameter_count();
    row.beam_size = loaded.config.decode.beam_size;
    if (!loaded.config.data.valid.src.empty()) {
      row.valid_ppl =
          perplexity(loaded, read_parallel(loaded.config.data.valid, "valid"), loaded.config.train.batch_size);
    }
    if (samples > 0) {
      auto options_decode = translate_options(loaded.config.decode);
      const auto sentences = translate_with_attention(loaded, report.sample_sources, options_decode);
      for (const auto& s : sentences) {
        vr.heatmaps.push_back({s.src_words, s.tgt_words, s.words, ""});
        vr.translations.push_back(s.translation);
      }
    }
    if (!gold.empty()) {
      const auto links = align(loaded, gold_text.src, gold_text.tgt, AlignOptions{});
      const auto aer = alignment_error_rate(links, gold);
      row.aer = aer.aer;
      row.precision = aer.precision;
      row.recall = aer.recall;
    }
    read_training_log(save_dir, &vr);
    spdlog::info("[compare] {}: BLEU {:.2f}, chrF {:.2f}, valid ppl {:.2f}, {:.1f} sent/s, {:.0f} MiB{}", v.name,
                 row.bleu, row.chrf, row.valid_ppl, row.decode_sentences_per_sec, row.peak_rss_mib,
                 gold.empty() ? std::string() : fmt::format(", AER {:.1f}%", 100 * row.aer));
    ++done;
    phase(v, "done");
    report.variants.push_back(std::move(vr));
  }

  mark_significance(all_hyps, test_text.tgt, baseline, &report);
  if (!scratch) {
    write_file_atomic((out_dir / "results.md").string(), results_markdown(report));
    write_file_atomic((out_dir / "results.csv").string(), results_csv(report));
    write_file_atomic((out_dir / "results.json").string(), results_json(report));
    write_file_atomic((out_dir / "index.html").string(), results_html(report));
  }
  return report;
}

}  // namespace attnmt
