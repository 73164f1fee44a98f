// attnmt score: corpus BLEU and chrF of a hypothesis file against one reference, computed as
// sacreBLEU 2.x does with its defaults (see eval/metrics.h).
//   attnmt score --ref REF [--hyp HYP] [--metrics bleu,chrf] [--json]
#include <cctype>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "eval/metrics.h"
#include "util/error.h"
#include "util/text_io.h"

namespace attnmt::cli {

namespace {

const std::vector<std::string> kValidMetrics = {"bleu", "chrf"};

struct ScoreOptions {
  std::string ref_path;
  std::string hyp_path;  // empty: read hypotheses from stdin
  std::string metrics = "bleu,chrf";
  bool json = false;
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

void run_score(const ScoreOptions& options) {
  const std::vector<std::string> metrics = parse_metrics(options.metrics);
  const std::vector<std::string> refs = read_lines(options.ref_path);
  const std::string hyp_name = options.hyp_path.empty() ? "<stdin>" : options.hyp_path;
  const std::vector<std::string> hyps =
      read_lines(options.hyp_path.empty() ? "-" : options.hyp_path);
  // Checked here (not left to corpus_bleu) so that the message names both files.
  if (hyps.size() != refs.size()) {
    throw InputError("'" + hyp_name + "' has " + std::to_string(hyps.size()) +
                     " lines but '" + options.ref_path + "' has " + std::to_string(refs.size()));
  }

  nlohmann::json json_out = nlohmann::json::object();
  nlohmann::json signatures = nlohmann::json::object();
  std::vector<std::string> text_lines, signature_lines;
  for (const std::string& metric : metrics) {
    if (metric == "bleu") {
      const BleuResult bleu = corpus_bleu(hyps, refs);
      json_out["bleu"] = bleu.score;
      json_out["bleu_counts"] = bleu.counts;
      json_out["bleu_totals"] = bleu.totals;
      json_out["bleu_precisions"] = bleu.precisions;
      json_out["bp"] = bleu.bp;
      json_out["sys_len"] = bleu.sys_len;
      json_out["ref_len"] = bleu.ref_len;
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
  sub->add_option("--hyp", options->hyp_path,
                  "Hypothesis file, one sentence per line (default: read standard input)");
  sub->add_option("--metrics", options->metrics, "Comma-separated metrics: bleu, chrf")
      ->capture_default_str();
  sub->add_flag("--json", options->json, "Print one JSON object instead of text");
  sub->callback([options] { run_score(*options); });
}

}  // namespace attnmt::cli
