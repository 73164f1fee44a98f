// attnmt score: corpus BLEU and chrF of a hypothesis file against one reference, computed as
// sacreBLEU 2.x does with its defaults (see eval/metrics.h).
//   attnmt score --ref REF [--hyp HYP] [--metrics bleu,chrf] [--json]
//   attnmt score --ref REF --hyp BASELINE --hyp SYSTEM... (--paired-bs | --paired-ar) [--paired-n N] [--seed S] [--json]
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "eval/metrics.h"
#include "eval/significance.h"
#include "util/error.h"
#include "util/text_io.h"

namespace attnmt::cli {

namespace {

const std::vector<std::string> kValidMetrics = {"bleu", "chrf"};

struct ScoreOptions {
  std::string ref_path;
  std::vector<std::string> hyp_paths;  // empty: read hypotheses from stdin; several: --paired-*
  std::string metrics = "bleu,chrf";
  bool json = false;
  bool paired_bs = false, paired_ar = false;
  int samples = 0;      // 0: 1,000 resamples (bs) or 10,000 trials (ar), as sacreBLEU
  uint64_t seed = 12345;  // sacreBLEU's default SACREBLEU_SEED
};

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i > 0 ? separator : "") + items[i];
  return out;
}

// "bleu,chrf" -> {"bleu", "chrf"}: lower-case names, duplicates dropped, order kept.
std::vector<std::string> parse_metrics(const std::string& spec) {
  std::vector<std::string> metrics;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t stop = spec.find(',', start);
    if (stop == std::string::npos) stop = spec.size();
    std::string name = spec.substr(start, stop - start);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    start = stop + 1;
    if (name.empty()) continue;
    bool valid = false;
    for (const auto& v : kValidMetrics) valid = valid || v == name;
    if (!valid) {
      throw InputError("unknown metric '" + name + "' in --metrics (valid: " +
                       join(kValidMetrics, ", ") + ")");
    }
    bool seen = false;
    for (const auto& m : metrics) seen = seen || m == name;
    if (!seen) metrics.push_back(name);
  }
  if (metrics.empty()) {
    throw InputError("--metrics names no metric (valid: " + join(kValidMetrics, ", ") + ")");
  }
  return metrics;
}

// A hypothesis file's lines, as many as the reference's (the message names both files).
std::vector<std::string> read_hypotheses(const std::string& path, const ScoreOptions& options, size_t ref_lines) {
  const std::vector<std::string> hyps = read_lines(path.empty() ? "-" : path);
  if (hyps.size() != ref_lines) {
    throw InputError("'" + (path.empty() ? std::string("<stdin>") : path) + "' has " + std::to_string(hyps.size()) +
                     " lines but '" + options.ref_path + "' has " + std::to_string(ref_lines));
  }
  return hyps;
}

// --paired-bs / --paired-ar: the first --hyp is the baseline. A table like sacreBLEU's, or with
// --json a list in sacreBLEU's -f json shape.
void run_paired(const ScoreOptions& options, const std::vector<std::string>& metrics,
                const std::vector<std::string>& refs) {
  if (options.hyp_paths.size() < 2) throw InputError("--paired-bs/--paired-ar: give the baseline and at least one system (--hyp twice or more)");
  const bool bs = options.paired_bs;
  const int n = options.samples > 0 ? options.samples : (bs ? 1000 : 10000);
  std::vector<std::vector<std::string>> systems;
  for (const auto& path : options.hyp_paths) systems.push_back(read_hypotheses(path, options, refs.size()));
  nlohmann::json out = nlohmann::json::array();
  for (size_t k = 0; k < systems.size(); ++k) {
    out.push_back({{"system", (k == 0 ? "Baseline: " : "") + options.hyp_paths[k]}});
  }
  std::vector<std::string> names;
  for (const auto& metric : metrics) {
    const std::string name = metric == "bleu" ? "BLEU" : "chrF2";
    names.push_back(name);
    std::vector<MetricStats> stats;
    for (const auto& hyps : systems) stats.push_back(metric == "bleu" ? bleu_stats(hyps, refs) : chrf_stats(hyps, refs));
    const auto results = bs ? paired_bootstrap(stats, n, options.seed) : paired_approximate_randomization(stats, n, options.seed);
    for (size_t k = 0; k < results.size(); ++k) {
      auto optional = [](const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
      out[k][name] = {{"score", results[k].score}, {"p_value", optional(results[k].p_value)},
                      {"mean", optional(results[k].mean)}, {"ci", optional(results[k].ci)}};
    }
  }
  if (options.json) {
    std::cout << out.dump(4) << "\n";
    return;
  }
  // System | per metric: score (mean ± ci) and, for systems, (p = ...), * where p < 0.05.
  std::printf("%s test, %d %s, seed %llu; p < 0.05 marked *\n",
              bs ? "Paired bootstrap resampling" : "Paired approximate randomization", n,
              bs ? "resamples" : "trials", static_cast<unsigned long long>(options.seed));
  size_t width = 0;
  for (const auto& system : out) width = std::max(width, system["system"].get<std::string>().size());
  for (const auto& system : out) {
    std::printf("%-*s", static_cast<int>(width), system["system"].get<std::string>().c_str());
    for (const auto& name : names) {
      const auto& r = system[name];
      std::string cell = fmt::format("{:.2f}", r["score"].get<double>());
      if (!r["mean"].is_null()) cell += fmt::format(" ({:.2f} ± {:.2f})", r["mean"].get<double>(), r["ci"].get<double>());
      if (!r["p_value"].is_null()) {
        const double p = r["p_value"].get<double>();
        cell += fmt::format(" (p = {:.4f}){}", p, p < 0.05 ? "*" : "");
      }
      std::printf("  %s %-36s", name.c_str(), cell.c_str());
    }
    std::printf("\n");
  }
}

void run_score(const ScoreOptions& options) {
  const std::vector<std::string> metrics = parse_metrics(options.metrics);
  const std::vector<std::string> refs = read_lines(options.ref_path);
  if (options.paired_bs || options.paired_ar) {
    run_paired(options, metrics, refs);
    return;
  }
  if (options.hyp_paths.size() > 1) throw InputError("--hyp given " + std::to_string(options.hyp_paths.size()) + " times: compare systems with --paired-bs or --paired-ar");
  const std::vector<std::string> hyps = read_hypotheses(options.hyp_paths.empty() ? "" : options.hyp_paths.front(), options, refs.size());

  nlohmann::json json_out = nlohmann::json::object();
  nlohmann::json signatures = nlohmann::json::object();
  std::vector<std::string> text_lines, signature_lines;
  for (const std::string& metric : metrics) {
    if (metric == "bleu") {
      const BleuResult bleu = corpus_bleu(hyps, refs);
      json_out.update(bleu_json(bleu));
      signatures["bleu"] = bleu.signature();
      text_lines.push_back(bleu.format());
      signature_lines.push_back("BLEU signature: " + bleu.signature());
    } else if (metric == "chrf") {
      const ChrfResult chrf = corpus_chrf(hyps, refs);
      json_out["chrf"] = chrf.score;
      signatures["chrf"] = chrf.signature();
      text_lines.push_back(chrf.format());
      signature_lines.push_back("chrF2 signature: " + chrf.signature());
    }
  }

  if (options.json) {
    json_out["signature"] = signatures;
    std::cout << json_out.dump() << "\n";
  } else {
    for (const auto& line : text_lines) std::cout << line << "\n";
    for (const auto& line : signature_lines) std::cout << line << "\n";
  }
  std::cout.flush();
}

}  // namespace

void add_score_command(CLI::App& app, const GlobalOptions& /*global*/) {
  auto options = std::make_shared<ScoreOptions>();
  CLI::App* sub = app.add_subcommand(
      "score", "Corpus BLEU and chrF of hypotheses against a reference (sacreBLEU defaults)");
  sub->add_option("--ref", options->ref_path, "Reference file, one sentence per line")
      ->required();
  sub->add_option("--hyp", options->hyp_paths,
                  "Hypothesis file, one sentence per line (default: read standard input); with --paired-*: "
                  "the baseline first, then the systems");
  sub->add_option("--metrics", options->metrics, "Comma-separated metrics: bleu, chrf")
      ->capture_default_str();
  sub->add_flag("--json", options->json, "Print one JSON object instead of text");
  auto* bs = sub->add_flag("--paired-bs", options->paired_bs,
                           "Paired bootstrap resampling of each --hyp against the first (Koehn, 2004)");
  sub->add_flag("--paired-ar", options->paired_ar,
                "Paired approximate randomization of each --hyp against the first (Riezler & Maxwell, 2005)")
      ->excludes(bs);
  sub->add_option("--paired-n", options->samples, "Resamples (default 1,000) or trials (default 10,000)")
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--seed", options->seed, "The resampling seed (default 12345, as sacreBLEU's)");
  sub->callback([options] { run_score(*options); });
}

}  // namespace attnmt::cli
