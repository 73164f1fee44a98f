// The front program (attnmt, no LibTorch) and the engine (attnmt-engine, every command): which
// commands the front runs without loading LibTorch, and that every other command line, help
// included, reads through the front exactly as the engine answers it.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "program.h"
#include "serve/serve_options.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

const std::string kEngine = ATTNMT_ENGINE_BINARY;

// Output with the program's own path (help's usage lines print argv[0]) written as PROGRAM.
std::string without_path(std::string text, const std::string& path) {
  for (size_t at = text.find(path); at != std::string::npos; at = text.find(path, at))
    text.replace(at, path.size(), "PROGRAM");
  return text;
}

// `args` through the front and through the engine run directly: the same exit code and output.
void check_front_answers_as_engine(const std::string& args) {
  INFO("attnmt " << args);
  const Run front = run(args);
  const Run engine = run_binary(kEngine, args);
  CHECK(front.status == engine.status);
  CHECK(without_path(front.output, ATTNMT_BINARY) == without_path(engine.output, kEngine));
}

// The commands the engine's --help lists.
std::vector<std::string> engine_commands() {
  const std::string help = run_binary(kEngine, "--help").output;
  std::vector<std::string> commands;
  std::istringstream lines(help.substr(help.find("\nSubcommands:\n") + 14));
  std::string line;
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    commands.push_back(name);
  }
  return commands;
}

}  // namespace

TEST_CASE("attnmt runs --version, score, config and help without loading LibTorch", "[e2e][front]") {
  const std::string ref = kData + "/tiny.en";
  // LD_DEBUG=libs: the dynamic loader names every library it looks for, on stderr.
  for (const std::string& args :
       std::vector<std::string>{"--version", "config --keys",
                                "config " + std::string(ATTNMT_SOURCE_DIR) + "/configs/multi30k_de_en/local_p.yaml",
                                "score --ref " + ref + " --hyp " + ref, "score --ref " + ref + " < " + ref, "help",
                                "--help", "help translate", "translate --help", "--debug help train"}) {
    INFO("attnmt " << args);
    const Run r = run(args, "LD_DEBUG=libs");
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("find library=libstdc++") && !Catch::Contains("libtorch"));
  }
  CHECK_THAT(run("score --ref " + ref + " --hyp " + ref).output, Catch::Contains("BLEU") && Catch::Contains("100.0"));

  // The engine does load it, in the process the front started: exec keeps the PID (the number
  // before each line of LD_DEBUG's).
  const Run engine = run("translate --model /nonexistent", "LD_DEBUG=libs");
  CHECK(engine.status == 2);
  CHECK_THAT(engine.output, Catch::Contains("find library=libtorch_cpu.so"));
  std::set<std::string> pids;
  std::istringstream lines(engine.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("find library=") != std::string::npos) pids.insert(line.substr(0, line.find(':')));
  }
  CHECK(pids.size() == 1);
}

TEST_CASE("a command line reads through the front as the engine answers it", "[e2e][front]") {
  const std::string ref = kData + "/tiny.en";
  // The engine's commands, their errors, and the front's own commands' errors, which are CLI11's
  // reading of the same declarations.
  for (const std::string& args : std::vector<std::string>{
           "translate --model /nonexistent", "translate --input /nonexistent", "train", "bogus", "", "--debug",
           "--bogus score", "-- score", "--progress sometimes score --ref " + ref, "--progress", "--version translate",
           "score", "score --bogus", "score --ref /nonexistent --hyp " + ref, "config", "config /nonexistent.yaml",
           "config --keys --minimal", "--debug config --keys --set x=1", "--help translate"}) {
    check_front_answers_as_engine(args);
  }
}

TEST_CASE("help through the front is the engine's help", "[e2e][front][help]") {
  const std::vector<std::string> commands = engine_commands();
  REQUIRE(commands.size() > 10);
  for (const std::string& args : std::vector<std::string>{
           "--help", "-h", "help", "--debug --help", "--progress never help", "help bogus", "help translate extra",
           "help --help", "score -h", "translate -h", "--debug help translate", "--debug help score"}) {
    check_front_answers_as_engine(args);
  }
  // Every command's recorded help.
  for (const std::string& command : commands) {
    check_front_answers_as_engine("help " + command);
    check_front_answers_as_engine(command + " --help");
  }
}

TEST_CASE("without the engine beside it, the front runs its own commands and names the missing program",
          "[e2e][front]") {
  auto dir = temp_dir("front_alone");
  fs::copy_file(ATTNMT_BINARY, dir / "attnmt");
  const std::string front = (dir / "attnmt").string();
  CHECK(run_binary(front, "--version").status == 0);
  CHECK(without_path(run_binary(front, "help translate").output, front) ==
        without_path(run("help translate").output, ATTNMT_BINARY));
  const Run r = run_binary(front, "translate --model /nonexistent");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::StartsWith("attnmt: error: cannot start " + (dir / "attnmt-engine").string()));
  CHECK(occurrences(r.output, "\n") == 1);
  fs::remove_all(dir);
}

TEST_CASE("serve --help states the defaults ServeOptions has", "[e2e][front][help]") {
  const attnmt::ServeOptions d;
  const std::string help = run("serve --help").output;
  for (const std::string& stated :
       {fmt::format("(default {}: this machine only)", d.host), fmt::format("(default {}; 0 = any free port", d.port),
        fmt::format("(default 0: {} on a CPU", attnmt::kCpuBatchSentences),
        fmt::format("{} on a GPU)", attnmt::kGpuBatchSentences),
        fmt::format("batch with (default {})", d.batching.max_wait_ms),
        fmt::format("503 (default {})", d.batching.max_queue_sentences),
        fmt::format("413 (default {})", d.max_request_sentences),
        fmt::format("413 (default {} bytes)", d.max_body_bytes), fmt::format("504 (default {})", d.request_timeout_s)}) {
    INFO(stated);
    CHECK(help.find(stated) != std::string::npos);
  }
  // 0 batch sentences is the device's default, as the batcher reads it.
  attnmt::BatcherLimits limits;
  CHECK(limits.max_batch_sentences == 0);
  CHECK(attnmt::batch_sentences(limits) == attnmt::kCpuBatchSentences);
  limits.cpu = false;
  CHECK(attnmt::batch_sentences(limits) == attnmt::kGpuBatchSentences);
  limits.max_batch_sentences = 3;
  CHECK(attnmt::batch_sentences(limits) == 3);
}
