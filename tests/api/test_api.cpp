// The public C++ API (include/attnmt/, libattnmt.so) against the program: translations, n-best
// lists, scores and attention equal to `attnmt translate`'s, its errors as attnmt::Error with the
// program's messages, two threads sharing a Translator, and score() against `attnmt score --json`.
// This executable links libattnmt.so alone (no attnmt_core, no LibTorch header), as a user's does.
#include <attnmt/attnmt.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <thread>

#include "core/program.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A tiny trained model (tests/core/program.h's config) in a directory of the test's own.
struct TinyModel {
  fs::path dir;
  fs::path model;

  explicit TinyModel(const std::string& name) : dir(temp_dir("api_" + name)), model(dir / "model") {
    write(dir / "t.yaml", tiny_config(model, 40));
    const auto r = run("train " + (dir / "t.yaml").string());
    INFO(r.output);
    REQUIRE(r.status == 0);
  }
  ~TinyModel() { fs::remove_all(dir); }

  // `attnmt translate` on tiny.de, one thread, with `flags`; its stdout.
  std::string cli(const std::string& flags = "") const {
    const auto out = dir / "cli.out";
    const auto r = run("translate --model " + model.string() + " --input " + kSrc + " --output " + out.string() +
                       " --threads 1 " + flags);
    INFO(r.output);
    REQUIRE(r.status == 0);
    return read_text(out);
  }

  // The program's error line for `args` ("attnmt: error: " cut off), checking its exit status.
  std::string cli_error(const std::string& args, int status) const {
    const auto r = run(args);
    CHECK(r.status == status);
    const std::string prefix = "attnmt: error: ";
    const auto at = r.output.find(prefix);
    REQUIRE(at != std::string::npos);
    const auto line = r.output.substr(at + prefix.size());
    return line.substr(0, line.find('\n'));
  }
};

attnmt::TranslatorOptions one_thread() {
  attnmt::TranslatorOptions o;
  o.threads = 1;
  return o;
}

const std::vector<std::string>& source_lines() {
  static const auto lines = lines_of(read_text(kSrc));
  return lines;
}

}  // namespace

TEST_CASE("the C++ API translates as attnmt translate: 1-best, n-best with scores, attention", "[api]") {
  const TinyModel m("translate");
  const attnmt::Translator tr(m.model.string(), one_thread());
  CHECK(tr.model_path() == (m.model / "best.pt").string());

  // 1-best, the model's settings (beam 3) and greedy.
  auto results = tr.translate(source_lines());
  REQUIRE(results.size() == source_lines().size());
  std::string text;
  for (const auto& nbest : results) {
    REQUIRE(nbest.size() == 1);
    text += nbest.front().text + "\n";
    CHECK(nbest.front().tokens.back() == "</s>");
    CHECK(nbest.front().source_tokens.back() == "</s>");
    CHECK(nbest.front().attention.empty());
  }
  CHECK(text == m.cli());
  attnmt::DecodeOptions greedy;
  greedy.beam_size = 1;
  std::string greedy_text;
  for (const auto& nbest : tr.translate(source_lines(), greedy)) greedy_text += nbest.front().text + "\n";
  CHECK(greedy_text == m.cli("--beam-size 1"));

  // n-best: the texts and order of --n-best, the scores and log-probabilities of --scores to 1e-4,
  // as the Python module's test has them: the library's numbers are the program's, not bit for bit
  // (they differ from the 7th digit in another process).
  attnmt::DecodeOptions n3;
  n3.beam_size = 4;
  n3.n_best = 3;
  const auto nbest = tr.translate(source_lines(), n3);
  const auto scores_file = m.dir / "scores.tsv";
  const auto cli_nbest = lines_of(m.cli("--beam-size 4 --n-best 3 --scores " + scores_file.string()));
  const auto cli_scores = lines_of(read_text(scores_file));
  REQUIRE(cli_nbest.size() == 3 * source_lines().size());
  REQUIRE(cli_scores.size() == cli_nbest.size());
  size_t row = 0;
  for (size_t i = 0; i < nbest.size(); ++i) {
    REQUIRE(nbest[i].size() == 3);
    for (const auto& h : nbest[i]) {
      std::istringstream fields(cli_scores[row]);
      size_t index = 0;
      double log_prob = 0, score = 0;
      fields >> index >> log_prob >> score;
      CHECK(index == i);
      CHECK(h.log_prob == Approx(log_prob).margin(1e-4));
      CHECK(h.score == Approx(score).margin(1e-4));
      CHECK(cli_nbest[row].rfind(std::to_string(i) + " ||| " + h.text + " ||| ", 0) == 0);
      ++row;
    }
    CHECK(nbest[i][0].score >= nbest[i][1].score);
  }

  // Attention: the weights --attention-out writes for each best translation.
  attnmt::DecodeOptions with_attention;
  with_attention.return_attention = true;
  const auto attended = tr.translate(source_lines(), with_attention);
  const auto attention_file = m.dir / "attention.jsonl";
  m.cli("--attention-out " + attention_file.string());
  const auto json_lines = lines_of(read_text(attention_file));
  REQUIRE(json_lines.size() == attended.size());
  for (size_t i = 0; i < attended.size(); ++i) {
    const auto j = nlohmann::json::parse(json_lines[i]);
    const auto& best = attended[i].front();
    CHECK(j["tgt"].get<std::vector<std::string>>() == best.tokens);
    CHECK(j["src"].get<std::vector<std::string>>() == best.source_tokens);
    REQUIRE(best.attention.size() == best.tokens.size());
    const auto weights = j["attention"].get<std::vector<std::vector<float>>>();
    REQUIRE(weights.size() == best.attention.size());
    for (size_t t = 0; t < weights.size(); ++t) {
      REQUIRE(best.attention[t].size() == best.source_tokens.size());
      REQUIRE(weights[t].size() == best.attention[t].size());
      for (size_t s = 0; s < weights[t].size(); ++s) CHECK(best.attention[t][s] == Approx(weights[t][s]).margin(1e-4));
    }
  }

  // An empty sentence: one empty hypothesis, as the program writes an empty line.
  const auto empty = tr.translate({"", source_lines()[0]});
  REQUIRE(empty.size() == 2);
  CHECK(empty[0].front().text.empty());
  CHECK(empty[1].front().text == results[0].front().text);
}

TEST_CASE("the C++ API's errors are attnmt::Error exceptions with the program's messages", "[api]") {
  const TinyModel m("errors");
  const std::string translate = "translate --model " + m.model.string() + " --input " + kSrc + " --threads 1 ";

  // No model there.
  const auto absent = (m.dir / "absent.pt").string();
  try {
    attnmt::Translator tr(absent);
    FAIL("a missing model opened");
  } catch (const attnmt::InputError& e) {
    CHECK(e.what() == m.cli_error("translate --model " + absent + " --input " + kSrc, 2));
    CHECK(e.exit_code() == 2);
  }
  // A file that is not a model.
  write(m.dir / "noise.pt", "not a model");
  try {
    attnmt::Translator tr((m.dir / "noise.pt").string());
    FAIL("a corrupt model opened");
  } catch (const attnmt::InputError& e) {
    CHECK(e.what() == m.cli_error("translate --model " + (m.dir / "noise.pt").string() + " --input " + kSrc, 2));
  }
  // A setting the model may not change, and one out of range.
  auto bad_key = one_thread();
  bad_key.settings = {{"model.embedding_size", "8"}};
  CHECK_THROWS_WITH(attnmt::Translator(m.model.string(), bad_key), m.cli_error(translate + "--set model.embedding_size=8", 2));
  auto bad_precision = one_thread();
  bad_precision.precision = "fp8";
  CHECK_THROWS_WITH(attnmt::Translator(m.model.string(), bad_precision), m.cli_error(translate + "--precision fp8", 2));

  // A per-call option out of range, and one against another: the same messages as the flags.
  const attnmt::Translator tr(m.model.string(), one_thread());
  attnmt::DecodeOptions zero_beam;
  zero_beam.beam_size = 0;
  try {
    tr.translate({"Hallo"}, zero_beam);
    FAIL("beam size 0 accepted");
  } catch (const attnmt::InputError& e) {
    CHECK(e.what() == m.cli_error(translate + "--beam-size 0", 2));
  }
  attnmt::DecodeOptions too_many;
  too_many.beam_size = 2;
  too_many.n_best = 3;
  CHECK_THROWS_AS(tr.translate({"Hallo"}, too_many), attnmt::InputError);
  CHECK_THROWS_WITH(tr.translate({"Hallo"}, too_many), m.cli_error(translate + "--beam-size 2 --n-best 3", 2));
  attnmt::DecodeOptions rules;
  rules.mbr = "meteor";
  CHECK_THROWS_WITH(tr.translate({"Hallo"}, rules), m.cli_error(translate + "--set decode.mbr=meteor", 2));
  // Guides of another length than the input.
  attnmt::TranslationGuides guides;
  guides.prefixes = {"A", "B"};
  CHECK_THROWS_AS(tr.translate({"Hallo"}, {}, guides), attnmt::InputError);
  // The translator still works after them.
  CHECK(tr.translate({source_lines()[0]}).front().front().text == lines_of(m.cli()).front());
}

TEST_CASE("the C++ API: two threads translate with one Translator at once", "[api]") {
  const TinyModel m("threads");
  const attnmt::Translator tr(m.model.string(), one_thread());
  attnmt::DecodeOptions beam;
  beam.beam_size = 4;
  beam.batch_size = 3;  // several batches per call
  const auto want_beam = tr.translate(source_lines(), beam);
  const auto want_default = tr.translate(source_lines());
  std::vector<std::vector<std::vector<attnmt::TranslationHypothesis>>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) got[t] = t % 2 ? tr.translate(source_lines(), beam) : tr.translate(source_lines());
    });
  }
  for (auto& t : threads) t.join();
  for (size_t t = 0; t < got.size(); ++t) {
    const auto& want = t % 2 ? want_beam : want_default;
    REQUIRE(got[t].size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CHECK(got[t][i].front().text == want[i].front().text);
      CHECK(got[t][i].front().score == want[i].front().score);
    }
  }
}

TEST_CASE("the C++ API: version, model format and score", "[api]") {
  CHECK(std::string(attnmt::version()) == ATTNMT_VERSION_STRING);
  CHECK(std::to_string(ATTNMT_VERSION_MAJOR) + "." + std::to_string(ATTNMT_VERSION_MINOR) + "." +
            std::to_string(ATTNMT_VERSION_PATCH) == ATTNMT_VERSION_STRING);
  const auto version = run("--version");
  CHECK(version.output.rfind(std::string("attnmt ") + ATTNMT_VERSION_STRING, 0) == 0);
  CHECK(attnmt::model_format_version() == 2);

  // The model file names the attnmt that wrote it (read back when it is too new for a reader).
  const TinyModel m("version");
  const auto bytes = read_text(m.model / "best.pt");
  CHECK(bytes.find("attnmt_version") != std::string::npos);
  CHECK(bytes.find(ATTNMT_VERSION_STRING) != std::string::npos);

  // score(): the figures of `attnmt score --json`.
  const std::string hyp = kData + "/sacrebleu/light_noise.hyp", ref = kData + "/sacrebleu/light_noise.ref";
  const auto s = attnmt::score(lines_of(read_text(hyp)), lines_of(read_text(ref)));
  const auto r = run("score --ref " + ref + " --hyp " + hyp + " --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(s.bleu == j["bleu"].get<double>());
  CHECK(s.chrf == j["chrf"].get<double>());
  CHECK(s.bleu_counts == j["bleu_counts"].get<std::vector<long>>());
  CHECK(s.bleu_totals == j["bleu_totals"].get<std::vector<long>>());
  CHECK(s.bp == j["bp"].get<double>());
  CHECK(s.sys_len == j["sys_len"].get<long>());
  CHECK(s.ref_len == j["ref_len"].get<long>());
  CHECK(s.bleu_line.rfind("BLEU = ", 0) == 0);
  CHECK(s.chrf_line.rfind("chrF2 = ", 0) == 0);
  CHECK_THROWS_AS(attnmt::score({"a"}, {"a", "b"}), attnmt::InputError);
}
