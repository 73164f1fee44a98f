// align, plot and compare through the real program on tiny models, and the compare report in a
// real browser (headless Chromium; skipped with a message where it is not installed).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>

#include "align/links.h"
#include "align/words.h"
#include "program.h"
#include "report/heatmap.h"
#include "report/report.h"
#include "util/process.h"
#include "util/text_io.h"

using namespace attnmt::test;
using Catch::Matchers::Contains;

namespace {


// Gold alignments for the first `n` tiny pairs: "SRC ||| TGT" text and a diagonal TALP file
// (sure links on the diagonal, a possible link beside each).
void write_tiny_gold(const fs::path& dir, size_t n) {
  const auto de = attnmt::read_lines(kData + "/tiny.de");
  const auto en = attnmt::read_lines(kData + "/tiny.en");
  std::string text, talp;
  for (size_t i = 0; i < n; ++i) {
    text += de[i] + " ||| " + en[i] + "\n";
    const size_t s = attnmt::split_words(de[i]).size(), t = attnmt::split_words(en[i]).size();
    std::string line;
    for (size_t k = 1; k <= std::min(s, t); ++k) {
      line += std::to_string(k) + "-" + std::to_string(k) + " ";
      if (k + 1 <= t) line += std::to_string(k) + "p" + std::to_string(k + 1) + " ";
    }
    talp += line + "\n";
  }
  write(dir / "gold.txt", text);
  write(dir / "gold.talp", talp);
}

fs::path tiny_model(const fs::path& dir, int steps) {
  write(dir / "t.yaml", tiny_config(dir / "model", steps));
  auto r = run("train " + (dir / "t.yaml").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  return dir / "model";
}

}  // namespace

TEST_CASE("align: Pharaoh output, one link per target word, AER against gold", "[align][e2e]") {
  auto dir = temp_dir("align");
  const auto model = tiny_model(dir, 60);
  write_tiny_gold(dir, 8);
  auto r = run("align --model " + model.string() + " --src " + (dir / "gold.txt").string() + " --gold " +
               (dir / "gold.talp").string() + " --output " + (dir / "out.align").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  const std::regex aer(R"(AER (\d+\.\d\d)%  precision (\d+\.\d\d)%  recall (\d+\.\d\d)%  \(8 sentence pairs)");
  std::smatch m;
  REQUIRE(std::regex_search(r.output, m, aer));
  CHECK(std::stod(m[1]) >= 0);
  CHECK(std::stod(m[1]) <= 100);
  const auto lines = attnmt::read_lines((dir / "out.align").string());
  const auto text = attnmt::read_alignment_text((dir / "gold.txt").string(), "");
  REQUIRE(lines.size() == 8);
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto links = attnmt::parse_pharaoh(lines[i], "out");
    const size_t s = attnmt::split_words(text.src[i]).size(), t = attnmt::split_words(text.tgt[i]).size();
    CHECK(links.size() == t);  // argmax: one link per target word
    std::set<int> targets;
    for (const auto& [a, b] : links) {
      CHECK(a >= 0);
      CHECK(static_cast<size_t>(a) < s);
      CHECK(static_cast<size_t>(b) < t);
      targets.insert(b);
    }
    CHECK(targets.size() == t);
  }
  // the AER printed is the AER of the file written
  const auto check = attnmt::alignment_error_rate(attnmt::read_pharaoh((dir / "out.align").string()),
                                                  attnmt::read_talp((dir / "gold.talp").string()));
  CHECK(std::stod(m[1]) == Approx(100 * check.aer).margin(0.006));

  // two files instead of a bitext, to stdout, threshold mode: at least as many links as target words
  // are not guaranteed, but every link's weight passed the threshold, so a tiny threshold links more
  write(dir / "src.txt", text.src[0] + "\n" + text.src[1] + "\n");
  write(dir / "tgt.txt", text.tgt[0] + "\n" + text.tgt[1] + "\n");
  r = run("align --model " + model.string() + " --src " + (dir / "src.txt").string() + " --tgt " +
          (dir / "tgt.txt").string() + " --threshold 0.001 2>/dev/null");
  REQUIRE(r.status == 0);
  const auto dense = r.output;
  CHECK(occurrences(dense, "\n") == 2);
  CHECK(occurrences(dense, "-") >= attnmt::split_words(text.tgt[0]).size() + attnmt::split_words(text.tgt[1]).size());
  fs::remove_all(dir);
}

TEST_CASE("plot: one heatmap, SVG and PNG", "[report][e2e]") {
  auto dir = temp_dir("plot");
  const auto model = tiny_model(dir, 2);
  const auto de = attnmt::read_lines(kData + "/tiny.de");
  const auto en = attnmt::read_lines(kData + "/tiny.en");
  auto r = run("plot --model " + model.string() + " --src \"" + de[0] + "\" --tgt \"" + en[0] + "\" --output " +
               (dir / "map.svg").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto svg = attnmt::read_file((dir / "map.svg").string());
  const size_t s = attnmt::split_words(de[0]).size(), t = attnmt::split_words(en[0]).size();
  CHECK(occurrences(svg, "<rect x=") == s * t + 1);
  CHECK(occurrences(svg, "class=\"src\"") == s);
  CHECK(occurrences(svg, "class=\"tgt\"") == t);
  // the model's own translation
  r = run("plot --model " + model.string() + " --src \"" + de[1] + "\" --output " + (dir / "own.svg").string());
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("[plot] translation:"));
  if (attnmt::png_supported()) {
    r = run("plot --model " + model.string() + " --src \"" + de[0] + "\" --tgt \"" + en[0] + "\" --output " +
            (dir / "map.png").string());
    REQUIRE(r.status == 0);
    const auto png = attnmt::read_file((dir / "map.png").string());
    REQUIRE(png.size() > 1000);
    CHECK(png.substr(1, 3) == "PNG");
  } else {
    ATTNMT_MISSING_DEPENDENCY("attnmt was built without cairo: PNG not tested");
  }
  fs::remove_all(dir);
}

TEST_CASE("compare: two tiny configs, trained when missing, every report file", "[compare][e2e]") {
  auto dir = temp_dir("compare");
  write_tiny_gold(dir, 6);
  std::string general = tiny_config(dir / "runs" / "general", 50);
  std::string concat = general;
  concat.replace(concat.find("luong_general"), 13, "luong_concat");
  concat.replace(concat.find((dir / "runs" / "general").string()), (dir / "runs" / "general").string().size(),
                 (dir / "runs" / "concat").string());
  write(dir / "general.yaml", general);
  write(dir / "concat.yaml", concat);
  const std::string args = "compare " + (dir / "general.yaml").string() + " " + (dir / "concat.yaml").string() +
                           " --test-src " + kData + "/tiny.de --test-tgt " + kData + "/tiny.en --align-gold-src " +
                           (dir / "gold.txt").string() + " --align-gold " + (dir / "gold.talp").string() +
                           " --report " + (dir / "report").string() + " --samples 2 --threads 1";

  // without --train-missing and without models: a clear error, nothing trained
  auto r = run(args);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Contains("no trained model in") && Contains("--train-missing"));

  r = run(args + " --train-missing");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(occurrences(r.output, "training") >= 2);
  for (const char* f :
       {"results.md", "results.csv", "results.json", "index.html", "hyp/general.txt", "hyp/concat.txt"}) {
    CHECK(fs::exists(dir / "report" / f));
  }
  const auto md = attnmt::read_file((dir / "report" / "results.md").string());
  CHECK(occurrences(md, "\n") == 4);
  CHECK_THAT(md, Contains("| general | `luong_general` |"));
  CHECK_THAT(md, Contains("| concat | `luong_concat` |"));
  const auto json = nlohmann::json::parse(attnmt::read_file((dir / "report" / "results.json").string()));
  REQUIRE(json["variants"].size() == 2);
  for (const auto& v : json["variants"]) {
    CHECK(v["bleu"].get<double>() >= 0);
    CHECK(v["valid_ppl"].get<double>() > 1);
    CHECK(v["decode_sentences_per_sec"].get<double>() > 0);
    CHECK(v["decode_peak_rss_mib"].get<double>() > 10);
    CHECK(v["aer"].get<double>() >= 0);
    CHECK(v["aer"].get<double>() <= 1);
    CHECK(v["steps"].get<int>() == 50);
    CHECK(v["parameters"].get<int64_t>() > 1000);
    CHECK(v["beam_size"].get<int>() == 3);
    CHECK(v["train_tgt_tokens_per_sec"].get<double>() > 0);
    CHECK(v["samples"].size() == 2);
  }
  CHECK(occurrences(attnmt::read_file((dir / "report" / "results.csv").string()), "\n") == 3);
  // The second row's p-values against the first: those of `attnmt score --paired-bs` on the outputs.
  CHECK(json["variants"][0]["bleu_p"].is_null());
  const auto paired = run("score --ref " + kData + "/tiny.en --hyp " + (dir / "report" / "hyp" / "general.txt").string() +
                          " --hyp " + (dir / "report" / "hyp" / "concat.txt").string() + " --paired-bs --json 2>/dev/null");
  REQUIRE(paired.status == 0);
  const auto scored = nlohmann::json::parse(paired.output);
  CHECK(json["variants"][1]["bleu_p"].get<double>() == Approx(scored[1]["BLEU"]["p_value"].get<double>()));
  CHECK(json["variants"][1]["chrf_p"].get<double>() == Approx(scored[1]["chrF2"]["p_value"].get<double>()));
  const auto html = attnmt::read_file((dir / "report" / "index.html").string());
  CHECK(occurrences(html, "class=\"heatmap\"") == 2 * 2);
  CHECK(occurrences(html, "<tr data-variant=") == 2);
  CHECK(occurrences(html, "class=\"aer-bar\"") == 2);
  // the table on stdout
  CHECK_THAT(r.output, Contains("variant  attention"));

  // the models are there and finished: a second run trains nothing; --baseline picks the row the
  // p-values are against
  r = run(args + " --train-missing --baseline concat");
  REQUIRE(r.status == 0);
  CHECK(r.output.find(": training") == std::string::npos);
  const auto against_concat = nlohmann::json::parse(attnmt::read_file((dir / "report" / "results.json").string()));
  CHECK(against_concat["baseline"] == "concat");
  CHECK(against_concat["variants"][1]["bleu_p"].is_null());
  CHECK(against_concat["variants"][0]["bleu_p"].get<double>() == Approx(json["variants"][1]["bleu_p"].get<double>()));
  r = run(args + " --baseline nope");
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Contains("--baseline nope: no config of that name"));

  // The config's decode.* (with --set) decides how the models are decoded, not the settings stored
  // in them; a raised train.max_steps makes the finished runs go on.
  r = run(args + " --train-missing --set decode.beam_size=2 --set train.max_steps=55");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(occurrences(r.output, "training (resuming)") == 2);
  const auto again = nlohmann::json::parse(attnmt::read_file((dir / "report" / "results.json").string()));
  for (const auto& v : again["variants"]) {
    CHECK(v["beam_size"].get<int>() == 2);
    CHECK(v["steps"].get<int>() == 55);
  }
  fs::remove_all(dir);
}

TEST_CASE("compare --streaming: each model streamed by its own policy, latency as translate --streaming gives it",
          "[compare][e2e][streaming]") {
  auto dir = temp_dir("compare_streaming");
  auto config = [&](const std::string& name, const std::string& attention, const std::string& extra_train,
                    const std::string& decoder_init, bool unidirectional) {
    std::string c = tiny_config(dir / "runs" / name, 40);
    auto swap = [&](const std::string& from, const std::string& to) { c.replace(c.find(from), from.size(), to); };
    if (unidirectional) swap("dropout: 0.0}\n  decoder", "dropout: 0.0, bidirectional: false}\n  decoder");
    swap("{type: luong_general}", attention);
    swap("train:\n", "train:\n" + extra_train);
    if (!decoder_init.empty()) swap("decoder: {hidden_size: 64,", "decoder: {init: " + decoder_init + ", hidden_size: 64,");
    write(dir / (name + ".yaml"), c);
    return (dir / (name + ".yaml")).string();
  };
  const auto waitk = config("waitk", "{type: luong_general}", "  wait_k: 2\n", "", true);
  const auto milk = config("milk", "{type: milk, score_bias_init: 1.0}", "", "zero", true);
  const auto full = config("full", "{type: luong_general}", "", "", false);  // bidirectional: no policy
  const std::string test = " --test-src " + kData + "/tiny.de --test-tgt " + kData + "/tiny.en";
  auto r = run("compare " + waitk + " " + milk + " " + full + test + " --report " + (dir / "report").string() +
               " --samples 1 --threads 1 --train-missing --streaming");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("full: not streamed: ") && Contains("the model's attention must stop hard"));
  CHECK_THAT(r.output, Contains("LAAL"));
  const auto json = nlohmann::json::parse(attnmt::read_file((dir / "report" / "results.json").string()));
  REQUIRE(json["variants"].size() == 3);
  // Each streamed row equals a translate --streaming of its model with the config's decode.*.
  for (size_t i = 0; i < 2; ++i) {
    const auto& v = json["variants"][i];
    const std::string name = v["variant"];
    INFO(name);
    const auto stats = dir / (name + ".stats.json");
    const auto hyp = dir / (name + ".hyp");
    const auto alone = run("translate --model " + (dir / "runs" / name).string() + " --input " + kData +
                           "/tiny.de --output " + hyp.string() + " --streaming --reference " + kData +
                           "/tiny.en --stats " + stats.string() + " --set decode.beam_size=3 --threads 1");
    REQUIRE(alone.status == 0);
    CHECK(attnmt::read_file(hyp.string()) ==
          attnmt::read_file((dir / "report" / "hyp" / (name + ".streamed.txt")).string()));
    const auto words = nlohmann::json::parse(attnmt::read_file(stats.string()))["latency"]["words"];
    for (const char* metric : {"AL", "LAAL", "AP", "DAL"}) {
      CHECK(v["streaming"][metric].get<double>() == Approx(words[metric].get<double>()).epsilon(1e-12));
    }
    const auto scored = run("score --ref " + kData + "/tiny.en --hyp " + hyp.string() + " --json 2>/dev/null");
    REQUIRE(scored.status == 0);
    const auto score = nlohmann::json::parse(scored.output);
    const double bleu = score["bleu"].is_object() ? score["bleu"]["score"].get<double>() : score["bleu"].get<double>();
    CHECK(v["streaming"]["bleu"].get<double>() == Approx(bleu).margin(1e-9));
    CHECK(std::isfinite(v["streaming"]["LAAL"].get<double>()));  // (an untrained model may lag below 0)
  }
  CHECK(json["variants"][2]["streaming"]["LAAL"].is_null());
  CHECK_FALSE(fs::exists(dir / "report" / "hyp" / "full.streamed.txt"));
  const auto csv = attnmt::read_file((dir / "report" / "results.csv").string());
  CHECK_THAT(csv, Contains(",stream_bleu,stream_chrf,al,laal,ap,dal\n"));
  const auto html = attnmt::read_file((dir / "report" / "index.html").string());
  CHECK_THAT(html, Contains("streamed BLEU vs LAAL"));
  CHECK(occurrences(html, "r=\"4\"") == 2);  // a point for each streamed model
  fs::remove_all(dir);
}

TEST_CASE("compare --seeds: every config once per seed, mean and spread, p-values on the first seed",
          "[compare][e2e]") {
  auto dir = temp_dir("compare_seeds");
  write_tiny_gold(dir, 6);
  std::string general = tiny_config(dir / "elsewhere" / "general", 30);
  std::string dot = general;
  dot.replace(dot.find("luong_general"), 13, "luong_concat");
  dot.replace(dot.find((dir / "elsewhere" / "general").string()), (dir / "elsewhere" / "general").string().size(),
              (dir / "elsewhere" / "dot").string());
  write(dir / "general.yaml", general);
  write(dir / "dot.yaml", dot);
  const auto root = dir / "study";
  const std::string args = "compare " + (dir / "general.yaml").string() + " " + (dir / "dot.yaml").string() +
                           " --test-src " + kData + "/tiny.de --test-tgt " + kData + "/tiny.en --align-gold-src " +
                           (dir / "gold.txt").string() + " --align-gold " + (dir / "gold.talp").string() +
                           " --report " + (dir / "report").string() + " --samples 1 --threads 1 --save-root " +
                           root.string() + " --train-missing";
  auto r = run(args + " --seeds 3,7");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(occurrences(r.output, ": training") == 4);
  // each seed in its own save dir under --save-root, none in the configs' own save dirs
  for (const char* name : {"general", "dot"}) {
    for (const char* seed : {"seed3", "seed7"}) CHECK(fs::exists(root / name / seed / "best.pt"));
  }
  CHECK(!fs::exists(dir / "elsewhere"));
  const auto json = nlohmann::json::parse(attnmt::read_file((dir / "report" / "results.json").string()));
  CHECK(json["seeds_per_config"] == 2);
  CHECK(json["significance_seed"] == 3);
  for (const auto& v : json["variants"]) {
    REQUIRE(v["seeds"].size() == 2);
    CHECK(v["seeds"][0]["seed"] == 3);
    CHECK(v["seeds"][1]["seed"] == 7);
    // different seeds train different models
    const double p0 = v["seeds"][0]["valid_ppl"].get<double>(), p1 = v["seeds"][1]["valid_ppl"].get<double>();
    CHECK(p0 != p1);
    for (const char* key : {"bleu", "chrf", "valid_ppl", "aer"}) {
      const double a = v["seeds"][0][key].get<double>(), b = v["seeds"][1][key].get<double>();
      INFO(key);
      CHECK(v[key].get<double>() == Approx((a + b) / 2));
      CHECK(v[std::string(key) + "_sd"].get<double>() == Approx(std::fabs(a - b) / std::sqrt(2.0)));
      CHECK(v[std::string(key) + "_min"].get<double>() == std::min(a, b));
      CHECK(v[std::string(key) + "_max"].get<double>() == std::max(a, b));
    }
    CHECK(v["seeds"][1]["curve"].size() == 1);  // validated at the end of the run
  }
  // p-values: seed 3's outputs, as `attnmt score --paired-bs` gives them
  const auto paired = run("score --ref " + kData + "/tiny.en --hyp " +
                          (dir / "report" / "hyp" / "general.seed3.txt").string() + " --hyp " +
                          (dir / "report" / "hyp" / "dot.seed3.txt").string() + " --paired-bs --json 2>/dev/null");
  REQUIRE(paired.status == 0);
  const auto scored = nlohmann::json::parse(paired.output);
  CHECK(json["variants"][1]["bleu_p"].get<double>() == Approx(scored[1]["BLEU"]["p_value"].get<double>()));
  const auto md = attnmt::read_file((dir / "report" / "results.md").string());
  CHECK(occurrences(md, " \xC2\xB1 ") >= 2 * 4);  // BLEU, chrF, valid ppl, AER of both rows
  const auto csv = attnmt::read_lines((dir / "report" / "results.csv").string());
  REQUIRE(csv.size() == 3);
  CHECK_THAT(csv[0], Contains(",seeds,bleu_sd,bleu_min,bleu_max,"));
  CHECK_THAT(csv[1], Contains(",3 7,"));
  const auto html = attnmt::read_file((dir / "report" / "index.html").string());
  CHECK(occurrences(html, "class=\"aer-range\"") == 2);
  CHECK_THAT(html, Contains("general seed 7"));  // a curve per seed
  // a second run reuses all four models
  r = run(args + " --seeds 3,7");
  REQUIRE(r.status == 0);
  CHECK(r.output.find(": training") == std::string::npos);
  // bad --seeds values: one line naming the flag, nothing trained
  for (const char* bad : {"0", "x", "1,,2", "2,2", "101"}) {
    r = run(args + " --seeds " + bad);
    INFO(bad);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Contains(std::string("--seeds ") + bad + ":"));
  }
  fs::remove_all(dir);
}

TEST_CASE("compare report in a real browser: table, sorting, seeds, one heatmap per variant per sentence",
          "[report][browser]") {
  const auto browser = chromium();
  if (browser.empty()) {
    ATTNMT_MISSING_DEPENDENCY(
        "SKIPPED: no chromium on this machine (scripts/test.sh installs it): the report was not opened in a browser");
    return;
  }
  auto dir = temp_dir("browser");
  // A report as compare writes it: 3 variants, 2 sentences, AER for two of them.
  attnmt::CompareReport report;
  report.test_src = "test.de";
  report.seeds = 2;
  report.significance_seed = 1;
  report.test_sentences = 2;
  report.gold_text = "gold.txt";
  report.gold_links = "gold.talp";
  report.sample_sources = {"Ein Hund läuft .", "Zwei Männer ."};
  report.sample_references = {"A dog runs .", "Two men ."};
  const double bleu[] = {12.5, 30.25, 20.0};
  for (int v = 0; v < 3; ++v) {
    attnmt::VariantReport r;
    r.row.variant = "v" + std::to_string(v);
    r.row.attention = "luong_general";
    r.row.parameters = 1000 + v;
    r.row.bleu = bleu[v];
    r.row.aer = 0.2 * (v + 1);
    r.row.precision = r.row.recall = 0.5;
    // two seeds each: mean ± sd in the table, a curve per seed
    r.curves = {{{100, 1.0, 5.0 + v, 30.0}, {200, 2.0, 9.0 + v, 20.0}}, {{100, 1.0, 4.0 + v, 31.0}, {200, 2.0, 8.0 + v, 21.0}}};
    r.row.seeds = {{1, "runs/v/seed1", bleu[v] - 1, 40, 20, r.row.aer - 0.05}, {2, "runs/v/seed2", bleu[v] + 1, 42, 21, r.row.aer + 0.05}};
    r.row.bleu_spread = {1.41, bleu[v] - 1, bleu[v] + 1};
    r.row.aer_spread = {0.07, r.row.aer - 0.05, r.row.aer + 0.05};
    r.heatmaps = {
        {{"Ein", "Hund", "läuft", "."}, {"A", "dog", "runs", "."}, {{1, 0}, {0, 1}, {0, 0, 1}, {0, 0, 0, 1}}, ""},
        {{"Zwei", "Männer", "."}, {"Two", "men", "."}, {{1}, {0, 1}, {0, 0, 1}}, ""}};
    r.translations = {"A dog runs .", "Two men ."};
    report.variants.push_back(r);
  }
  write(dir / "index.html", attnmt::results_html(report));
  const std::string url = "file://" + (dir / "index.html").string();
  const std::string flags =
      "--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=" + (dir / "profile").string();
  const std::string dom = shell(browser + " " + flags + " --dump-dom \"" + url + "#sort=bleu-desc\" 2>/dev/null");
  INFO(dom.substr(0, 2000));
  CHECK(occurrences(dom, "<table id=\"results\">") == 1);
  CHECK(occurrences(dom, "<tr data-variant=") == 3);
  CHECK(occurrences(dom, "class=\"heatmap\"") == 3 * 2);
  for (int v = 0; v < 3; ++v) {
    for (int k = 0; k < 2; ++k) {
      CHECK(occurrences(dom, "data-variant=\"v" + std::to_string(v) + "\" data-sentence=\"" + std::to_string(k) + "\"") == 1);
    }
  }
  // the script ran: rows sorted by BLEU, highest first
  const auto v1 = dom.find("<tr data-variant=\"v1\""), v2 = dom.find("<tr data-variant=\"v2\""),
             v0 = dom.find("<tr data-variant=\"v0\"");
  CHECK(v1 < v2);
  CHECK(v2 < v0);
  CHECK_THAT(dom, Contains("data-order=\"desc\""));
  CHECK(occurrences(dom, "seed 2</title></path>") == 4 * 3);  // 4 charts, a line per variant and seed
  CHECK(occurrences(dom, "class=\"aer-range\"") == 3);
  CHECK_THAT(dom, Contains("30.25 \xC2\xB1 1.41"));

  shell(browser + " " + flags + " --window-size=1280,1600 --screenshot=" + (dir / "shot.png").string() + " \"" + url +
        "\" >/dev/null 2>&1");
  REQUIRE(fs::exists(dir / "shot.png"));
  const auto png = attnmt::read_file((dir / "shot.png").string());
  CHECK(png.substr(1, 3) == "PNG");
  CHECK(png.size() > 10000);  // not a blank page
  fs::remove_all(dir);
}

TEST_CASE("run_child: the child's own peak RSS, not its parent's", "[compare]") {
  // A parent far larger than its child: 600 MiB written. Through posix_spawn, Linux counts the
  // parent's peak into the child's ru_maxrss (util/process.h); the child's own VmHWM is ~160 MiB
  // for `attnmt-engine --version` (LibTorch's libraries), the program compare and bench run.
  std::vector<char> ballast(600u << 20, 1);
  const auto dir = fs::temp_directory_path() / ("attnmt_rss_test." + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto r = attnmt::run_child({ATTNMT_ENGINE_BINARY, "--version"}, (dir / "out.txt").string());
  REQUIRE(r.exit_code == 0);
  CHECK(r.rss_from_child);
  CHECK(r.peak_rss_mib > 20);
  CHECK(r.peak_rss_mib < 450);
  CHECK(ballast[ballast.size() / 2] == 1);
  // A child that is not attnmt reports nothing: wait4's figure stands.
  const auto other = attnmt::run_child({"/bin/true"});
  CHECK(other.exit_code == 0);
  CHECK_FALSE(other.rss_from_child);
  CHECK(other.peak_rss_mib > 0);
  // No report file is left behind.
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
    CHECK(e.path().filename().string().rfind("attnmt_rss." + std::to_string(::getpid()) + ".", 0) != 0);
  }
  fs::remove_all(dir);
}
