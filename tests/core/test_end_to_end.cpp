// End to end through the real program: train on 30 pairs until it overfits, translate them back
// with beam search, score, resume, and the errors a user sees.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "eval/metrics.h"
#include "util/text_io.h"

namespace fs = std::filesystem;

namespace {

struct Run {
  int status;
  std::string output;
};

Run run(const std::string& args) {
  const std::string cmd = std::string(ATTNMT_BINARY) + " " + args + " 2>&1";
  Run r{0, ""};
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

fs::path temp_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("attnmt_e2e_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string tiny_config(const fs::path& save_dir, int max_steps) {
  const std::string data = ATTNMT_TEST_DATA_DIR;
  std::ostringstream c;
  c << "data:\n"
    << "  train: {src: " << data << "/tiny.de, tgt: " << data << "/tiny.en}\n"
    << "  valid: {src: " << data << "/tiny.de, tgt: " << data << "/tiny.en}\n"
    << "tokenizer: {vocab_size: 400, shared: true}\n"
    << "model:\n"
    << "  embedding_size: 64\n"
    << "  encoder: {hidden_size: 64, layers: 1, dropout: 0.0}\n"
    << "  decoder: {hidden_size: 64, layers: 1, dropout: 0.0}\n"
    << "  attention: {type: luong_general}\n"
    << "train:\n"
    << "  save_dir: " << save_dir.string() << "\n"
    << "  batch_size: 10\n"
    << "  max_steps: " << max_steps << "\n"
    << "  learning_rate: 0.01\n"
    << "  label_smoothing: 0.0\n"
    << "  valid_every: 300\n"
    << "  report_every: 50\n"
    << "decode: {beam_size: 3}\n"
    << "threads: 1\n";
  return c.str();
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

}  // namespace

TEST_CASE("train overfits 30 pairs, translate with beam search reproduces them", "[e2e]") {
  auto dir = temp_dir("overfit");
  write(dir / "config.yaml", tiny_config(dir / "model", 900));
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  const std::string ref = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.en";
  // data.test: translated (beam from decode.*) and scored at the end of training.
  auto train = run("train " + (dir / "config.yaml").string() + " --set data.test.src=" + src +
                   " --set data.test.tgt=" + ref);
  INFO(train.output);
  REQUIRE(train.status == 0);
  REQUIRE(fs::exists(dir / "model" / "best.pt"));
  REQUIRE(fs::exists(dir / "model" / "log.jsonl"));
  REQUIRE(fs::exists(dir / "model" / "config.yaml"));
  REQUIRE(train.output.find("[test]") != std::string::npos);
  {
    auto test_hyps = attnmt::read_lines((dir / "model" / "test.hyp").string());
    const double test_bleu = attnmt::corpus_bleu(test_hyps, attnmt::read_lines(ref)).score;
    REQUIRE(test_bleu > 90.0);
    std::string last_log;
    for (const auto& line : attnmt::read_lines((dir / "model" / "log.jsonl").string())) {
      if (line.find("\"type\":\"test\"") != std::string::npos) last_log = line;
    }
    INFO(last_log);
    REQUIRE(last_log.find("\"beam_size\":3") != std::string::npos);
    std::ostringstream expected;
    expected << "\"test_bleu\":" << test_bleu;
    REQUIRE(last_log.find(expected.str().substr(0, 16)) != std::string::npos);
  }

  auto tr = run("translate --model " + (dir / "model").string() + " --input " + src + " --output " +
                (dir / "hyp.en").string() + " --attention-out " + (dir / "att.jsonl").string());
  INFO(tr.output);
  REQUIRE(tr.status == 0);
  auto hyps = attnmt::read_lines((dir / "hyp.en").string());
  auto refs = attnmt::read_lines(ref);
  REQUIRE(hyps.size() == refs.size());
  const double bleu = attnmt::corpus_bleu(hyps, refs).score;
  INFO("BLEU " << bleu);
  REQUIRE(bleu > 90.0);
  REQUIRE(attnmt::read_lines((dir / "att.jsonl").string()).size() == refs.size());

  auto score = run("score --ref " + ref + " --hyp " + (dir / "hyp.en").string() + " --json");
  REQUIRE(score.status == 0);
  REQUIRE(score.output.find("\"bleu\"") != std::string::npos);

  // Empty input line -> empty output line; stdin -> stdout.
  write(dir / "in.txt", "\nEin Mann.\n\n");
  auto stdin_run = run("translate --model " + (dir / "model").string() + " < " + (dir / "in.txt").string());
  REQUIRE(stdin_run.status == 0);

  // --resume continues to a later max_steps.
  auto resumed = run("train " + (dir / "config.yaml").string() + " --resume --set train.max_steps=950");
  INFO(resumed.output);
  REQUIRE(resumed.status == 0);
  REQUIRE(resumed.output.find("resumed from") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("user errors are one line and exit 2", "[e2e]") {
  auto dir = temp_dir("errors");
  SECTION("unknown config key") {
    write(dir / "c.yaml", "model: {encoder: {hiden_size: 3}}\n");
    auto r = run("train " + (dir / "c.yaml").string());
    REQUIRE(r.status == 2);
    REQUIRE(r.output.find("did you mean 'model.encoder.hidden_size'") != std::string::npos);
  }
  SECTION("unknown attention type lists the valid ones") {
    write(dir / "c.yaml", tiny_config(dir / "m", 10) + "");
    auto r = run("train " + (dir / "c.yaml").string() + " --set model.attention.type=nope");
    REQUIRE(r.status == 2);
    REQUIRE(r.output.find("luong_general") != std::string::npos);
  }
  SECTION("missing model dir") {
    auto r = run("translate --model " + (dir / "absent").string());
    REQUIRE(r.status == 2);
    REQUIRE(r.output.find("does not exist") != std::string::npos);
  }
  SECTION("score with different line counts") {
    write(dir / "a.txt", "a\nb\n");
    write(dir / "b.txt", "a\n");
    auto r = run("score --ref " + (dir / "a.txt").string() + " --hyp " + (dir / "b.txt").string());
    REQUIRE(r.status == 2);
  }
  fs::remove_all(dir);
}
