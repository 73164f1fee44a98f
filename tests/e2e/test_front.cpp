// The front program (attnmt, no LibTorch) and the engine (attnmt-engine, every command): which
// commands the front runs without loading LibTorch, and that every other command line, help
// included, reads through the front exactly as the engine answers it.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
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

// The dynamic loader's account of a program's objects without running it: name => file, a line each.
std::map<std::string, std::string> loaded_objects(const std::string& program) {
  std::map<std::string, std::string> objects;
  std::istringstream lines(shell("LD_TRACE_LOADED_OBJECTS=1 /lib64/ld-linux-x86-64.so.2 " + program));
  for (std::string line; std::getline(lines, line);) {
    const size_t arrow = line.find(" => ");
    if (arrow == std::string::npos) continue;
    std::istringstream name(line.substr(0, arrow)), file(line.substr(arrow + 4));
    std::string n, f;
    name >> n;
    file >> f;
    objects[n] = f;
  }
  return objects;
}

TEST_CASE("the engine loads one empty library in place of the libraries LibTorch links but never calls",
          "[e2e][front][startup]") {
  // cmake/torch_trim.cmake: the engine's DT_RPATH names the directory beside it that
  // cmake/unused_links.py wrote.
  const fs::path dir = fs::path(kEngine).parent_path() / "torch-unused";
  if (shell("readelf -dW " + kEngine + " | grep -F \"(RPATH)\"").find("$ORIGIN/torch-unused") == std::string::npos) {
    ATTNMT_MISSING_DEPENDENCY("the engine was built to load every library LibTorch links "
                              "(ATTNMT_TRIM_TORCH_LINKS=OFF, or no python3/readelf/ldconfig at configure time)");
    return;
  }
  std::ifstream list(dir / "unused.txt");
  REQUIRE(list);
  std::set<std::string> unused;
  for (std::string name; std::getline(list, name);) unused.insert(name);
  // The loader lists a file once, under the first name it was asked for.
  const auto trimmed = loaded_objects(kEngine);
  const auto torch = trimmed.find("libtorch_cpu.so.1.13");
  REQUIRE(torch != trimmed.end());
  const auto everything = loaded_objects(torch->second);  // libtorch_cpu's own, no RPATH of ours
  INFO(trimmed.size() << " objects loaded; libtorch_cpu alone loads " << everything.size());
  // Debian's LibTorch links OpenCV and FFmpeg without calling them: the hard case is found.
  if (shell("readelf -dW " + torch->second + " | grep -F \"[libopencv_core.so\"").find("NEEDED") != std::string::npos) {
    CHECK(std::any_of(unused.begin(), unused.end(), [](const std::string& n) { return n.rfind("libopencv_core.so", 0) == 0; }));
    CHECK(everything.size() > trimmed.size() + 100);
  }
  // The empty library, found in the directory, under one of the names; nothing else from there,
  // and none of the names from anywhere else.
  const std::string empty = fs::canonical(dir / "libattnmt_unused.so").string();
  int from_dir = 0;
  for (const auto& [name, file] : trimmed) {
    INFO(name << " => " << file);
    if (fs::path(file).parent_path() == dir) {
      ++from_dir;
      CHECK(unused.count(name) == 1);
      CHECK(fs::canonical(file).string() == empty);
    } else {
      CHECK(unused.count(name) == 0);
    }
  }
  CHECK(from_dir == (unused.empty() ? 0 : 1));
  // And the engine runs on them.
  CHECK(run_binary(kEngine, "--version").status == 0);
}

// Minor page faults of `program args...` run to its end (its own, from wait4).
long minor_faults(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (freopen("/dev/null", "w", stdout) == nullptr) _exit(127);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  REQUIRE(wait4(pid, &status, 0, &usage) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return usage.ru_minflt;
}

TEST_CASE("the engine's start allocates into huge pages: far fewer page faults than without (ATTNMT_HUGE_PAGES=0)",
          "[e2e][front][startup]") {
  // util/host_tuning.h: the first 60 MiB of the heap are advised into transparent huge pages before
  // LibTorch's initialisers allocate into them, on tcmalloc as on glibc.
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  if (mode.empty() || mode.find("[never]") != std::string::npos) {
    ATTNMT_CPU_LACKS("this kernel has transparent huge pages off ('" << mode << "')");
    return;
  }
  long with = 0, without = 0;
  for (int round = 0; round < 2; ++round) {  // the lower of two: another process's work can fault ours
    const long w = minor_faults({kEngine, "--version"}, {});
    const long wo = minor_faults({kEngine, "--version"}, {"ATTNMT_HUGE_PAGES=0"});
    with = round == 0 ? w : std::min(with, w);
    without = round == 0 ? wo : std::min(without, wo);
  }
  INFO(with << " minor page faults, " << without << " with ATTNMT_HUGE_PAGES=0 (" << ATTNMT_PROGRAM_MALLOC << ")");
  CHECK(with < without * 2 / 3);
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
