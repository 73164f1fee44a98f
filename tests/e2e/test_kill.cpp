// SIGKILL at any moment loses nothing: training killed again and again (some kills aimed at the
// moment a checkpoint is being written) and resumed each time ends bit for bit where a run never
// killed ends. The CI runs ATTNMT_KILLS=6 (the default); scripts/kill_test.sh runs it with more.
// And a damaged newest checkpoint makes --resume fall back to the one before, saying so.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "checkpoints.h"
#include "io/model_file.h"
#include "program.h"
#include "util/process.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

bool has_temp_checkpoint(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().find(".pt.tmp.") != std::string::npos) return true;
  }
  return false;
}

bool has_step_checkpoint(const fs::path& dir) { return !attnmt::list_step_checkpoints(dir.string()).empty(); }

// A small model whose checkpoints (with Adam's moments) take a moment to write.
std::string kill_config(const fs::path& save_dir, int max_steps) {
  const std::string data = ATTNMT_TEST_DATA_DIR;
  return "data:\n  train: {src: " + data + "/tiny.de, tgt: " + data + "/tiny.en}\n" +
         "  valid: {src: " + data + "/tiny.de, tgt: " + data + "/tiny.en}\n" +
         "tokenizer: {vocab_size: 400}\n"
         "model:\n  embedding_size: 128\n  encoder: {hidden_size: 128, layers: 2}\n"
         "  decoder: {hidden_size: 128, layers: 2}\n"
         "train:\n  save_dir: " + save_dir.string() + "\n  batch_size: 10\n  max_steps: " + std::to_string(max_steps) +
         "\n  learning_rate: 0.002\n  valid_every: 10\n  valid_metric: ppl\n  report_every: 10\n"
         "  keep_checkpoints: 2\nthreads: 2\n";
}

}  // namespace

TEST_CASE("SIGKILL at random moments and during saves: every run resumes, the end is the never-killed run's",
          "[reliability][e2e][kill]") {
  const int kills = env_int("ATTNMT_KILLS", 6);
  std::mt19937 random(static_cast<unsigned>(env_int("ATTNMT_KILL_SEED", 7)));
  // Each run trains for at most a few seconds before its kill: the budget leaves room for all.
  const int steps = 60 + 60 * kills;
  auto dir = temp_dir("kill");
  write(dir / "straight.yaml", kill_config(dir / "straight", steps));
  write(dir / "killed.yaml", kill_config(dir / "killed", steps));
  auto straight = run("train " + (dir / "straight.yaml").string());
  INFO(straight.output);
  REQUIRE(straight.status == 0);

  int during_save = 0, resumed = 0;
  for (int k = 1; k <= kills; ++k) {
    const bool resume = has_step_checkpoint(dir / "killed");
    std::vector<std::string> argv = {ATTNMT_BINARY, "train", (dir / "killed.yaml").string()};
    if (resume) argv.push_back("--resume");
    const auto log = (dir / ("run" + std::to_string(k) + ".log")).string();
    const pid_t pid = attnmt::spawn_child(argv, {}, log);
    const bool aimed = k % 2 == 0 && resume;
    const auto start = std::chrono::steady_clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    int status = 0;
    bool exited = false;
    if (aimed) {  // the moment a checkpoint's temp file appears (that is, while it is written)
      while (!has_temp_checkpoint(dir / "killed") && seconds() < 60) {
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          exited = true;
          break;
        }
      }
    } else {  // a random moment: loading, training, validating or saving
      // The first run lives until it has written a checkpoint, so that the later runs resume and
      // their kills can be aimed at saves however slow a loaded machine makes the training.
      double at = std::uniform_real_distribution<double>(1.0, 4.0)(random);
      if (!resume) {
        while (!has_step_checkpoint(dir / "killed") && seconds() < 120 && !exited) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          exited = ::waitpid(pid, &status, WNOHANG) == pid;
        }
        at += seconds();
      }
      while (seconds() < at && !exited) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        exited = ::waitpid(pid, &status, WNOHANG) == pid;
      }
    }
    // Only a running, unfinished training is killed.
    INFO("run " << k << ":\n" << attnmt::read_file(log));
    REQUIRE_FALSE(exited);
    REQUIRE(attnmt::read_file(log).find("finished at step") == std::string::npos);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    const bool saving = has_temp_checkpoint(dir / "killed");
    during_save += saving ? 1 : 0;
    const auto text = attnmt::read_file(log);
    CHECK(text.find("attnmt: error") == std::string::npos);
    CHECK(text.find("cannot resume from") == std::string::npos);  // no fallback to an older checkpoint
    if (resume && text.find("resumed from") != std::string::npos) ++resumed;
    WARN("kill " << k << "/" << kills << " after " << seconds() << " s" << (saving ? ", during a save" : ""));
  }
  auto last = run("train " + (dir / "killed.yaml").string() + " --resume");
  INFO(last.output);
  REQUIRE(last.status == 0);
  CHECK(last.output.find("finished at step " + std::to_string(steps)) != std::string::npos);
  CHECK(last.output.find("cannot resume from") == std::string::npos);
  WARN(kills << " SIGKILLs, " << during_save << " of them while a checkpoint was being written; " << resumed
             << " runs resumed from a checkpoint");
  CHECK(during_save >= 1);

  // Resume is exact: the same parameters, learning rate and schedule as the run never killed.
  const auto a_path = dir / "straight" / ("ckpt." + std::to_string(steps) + ".pt");
  const auto b_path = dir / "killed" / ("ckpt." + std::to_string(steps) + ".pt");
  const attnmt::CheckpointFile a(a_path.string()), b(b_path.string());
  CHECK(a.header().progress.learning_rate == b.header().progress.learning_rate);
  CHECK(a.header().progress.best_score == b.header().progress.best_score);
  CHECK(a.header().progress.bad_validations == b.header().progress.bad_validations);
  check_same_tensors(a_path, b_path);
  fs::remove_all(dir);
}

TEST_CASE("a damaged newest checkpoint: --resume falls back to the one before and says so", "[reliability][e2e]") {
  auto dir = temp_dir("fallback");
  write(dir / "c.yaml", tiny_config(dir / "model", 20) + "");
  REQUIRE(run("train " + (dir / "c.yaml").string() + " --set train.valid_every=10").status == 0);
  const auto newest = dir / "model" / "ckpt.20.pt";
  REQUIRE(fs::exists(newest));
  REQUIRE(fs::exists(dir / "model" / "ckpt.10.pt"));
  fs::resize_file(newest, fs::file_size(newest) / 2);  // as a copy cut off half-way
  auto r = run("train " + (dir / "c.yaml").string() + " --set train.valid_every=10 --set train.max_steps=25 --resume");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("cannot resume from '" + newest.string() + "'") &&
                           Catch::Contains("resumed from '" + (dir / "model" / "ckpt.10.pt").string() + "' at step 10"));
  CHECK(fs::exists(dir / "model" / "ckpt.25.pt"));
  fs::remove_all(dir);
}
