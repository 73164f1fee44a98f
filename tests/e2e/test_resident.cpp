// The resident engine (ATTNMT_RESIDENT=1, cli/resident.h): a command run through it answers as the
// engine run directly (output, files, exit code, stdin, working directory), one resident engine
// serves the commands of one environment, signals reach the command, and it ends when idle.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "program.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The resident engines listening in `dir`: their sockets.
int sockets_in(const fs::path& dir) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) n += entry.path().extension() == ".sock";
  return n;
}

// The resident engines' processes for `dir`: those whose command line names its sockets, less their
// children (a command forked from one has its command line).
int engines_of(const fs::path& dir) {
  return std::stoi("0" + shell("pids=$(pgrep -f -- \"[-]-resident-engine " + dir.string() +
                               "/\"); n=0; for p in $pids; do pp=$(ps -o ppid= -p $p | tr -d \" \"); "
                               "echo \"$pids\" | grep -qx \"$pp\" || n=$((n + 1)); done; echo $n"));
}

struct ResidentDir {
  fs::path dir = temp_dir("resident") / "run";
  ~ResidentDir() {
    shell("pkill -f -- \"[-]-resident-engine " + dir.string() + "/\" || true");
    fs::remove_all(dir.parent_path());
  }
  std::string env(const std::string& idle = "60") const {
    return "ATTNMT_RESIDENT=1 ATTNMT_RESIDENT_DIR=" + dir.string() + " ATTNMT_RESIDENT_IDLE=" + idle;
  }
};

const std::string kModel = kData + "/model_v1";

}  // namespace

TEST_CASE("a command in the resident engine answers as the engine run directly", "[e2e][front][resident]") {
  ResidentDir r;
  const std::string args = "translate --model " + kModel;
  const Run direct = run(args + " --input " + kSrc);
  REQUIRE(direct.status == 0);
  REQUIRE(direct.output == read_file(kModel + "/tiny.beam3.en"));

  // Started by the first command (its own output and exit code), then reused.
  const Run first = run(args + " --input " + kSrc, r.env());
  CHECK(first.status == 0);
  CHECK(first.output == direct.output);
  CHECK(sockets_in(r.dir) == 1);
  CHECK(engines_of(r.dir) == 1);
  // stdin, and a relative output path in the caller's working directory.
  fs::create_directories(r.dir.parent_path() / "work");
  const Run second = run_binary("cd " + (r.dir.parent_path() / "work").string() + " && " + std::string(ATTNMT_BINARY),
                                args + " --output out.en < " + kSrc, r.env());
  CHECK(second.status == 0);
  CHECK(read_file(r.dir.parent_path() / "work" / "out.en") == direct.output);
  CHECK(engines_of(r.dir) == 1);

  // Errors: the same line and exit code.
  for (const std::string& bad : std::vector<std::string>{"translate --model /nonexistent",
                                                         "translate --model " + kModel + " --beam-size 0", "bogus"}) {
    INFO(bad);
    const Run want = run(bad);
    const Run got = run(bad, r.env());
    CHECK(got.status == want.status);
    CHECK(got.output == want.output);
  }

  // Another setting that loading reads (OMP_NUM_THREADS): another resident engine.
  CHECK(run(args + " --input " + kSrc, "OMP_NUM_THREADS=1 " + r.env()).output == direct.output);
  CHECK(sockets_in(r.dir) == 2);
  CHECK(engines_of(r.dir) == 2);
}

TEST_CASE("signals reach the command in the resident engine, and it ends when idle", "[e2e][front][resident]") {
  ResidentDir r;
  const std::string env = r.env("4");
  REQUIRE(run("translate --model " + kModel + " --input " + kSrc, env).status == 0);
  REQUIRE(engines_of(r.dir) == 1);
  // A command waiting on its stdin; SIGTERM to the front ends it, and the front dies of it too.
  const std::string engine = "$(pgrep -o -f -- \"[-]-resident-engine " + r.dir.string() + "/\")";  // the oldest
  const std::string out = shell(env + " " + std::string(ATTNMT_BINARY) + " translate --model " + kModel +
                                " < <(sleep 60) & front=$!; for i in $(seq 200); do [ \"$(pgrep -c -P " + engine +
                                ")\" = 1 ] && break; sleep 0.1; done; echo children=$(pgrep -c -P " + engine +
                                "); kill -TERM $front; wait $front; echo status=$?; sleep 0.5; echo after=$(pgrep -c -P " +
                                engine + "); pkill -f \"^sleep 60\"");
  CHECK_THAT(out, Catch::Contains("children=1"));
  CHECK_THAT(out, Catch::Contains("status=143"));
  CHECK_THAT(out, Catch::Contains("after=0"));
  // Idle for 4 s: gone, its socket removed.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (engines_of(r.dir) > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(engines_of(r.dir) == 0);
  CHECK(sockets_in(r.dir) == 0);
}

TEST_CASE("bad resident-engine settings are one line each", "[e2e][front][resident]") {
  ResidentDir r;
  for (const std::string& env : std::vector<std::string>{"ATTNMT_RESIDENT=maybe", r.env("soon")}) {
    INFO(env);
    const Run got = run("translate --model /nonexistent", env);
    CHECK(got.status == 2);
    CHECK(occurrences(got.output, "\n") == 1);
    CHECK_THAT(got.output, Catch::StartsWith("attnmt: error: ATTNMT_RESIDENT"));
  }
  // A directory others can enter is not used: a warning, and the engine runs directly.
  fs::create_directories(r.dir);
  fs::permissions(r.dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  const Run open_dir = run("translate --model " + kModel + " --input " + kSrc, r.env());
  CHECK(open_dir.status == 0);
  CHECK_THAT(open_dir.output, Catch::StartsWith("attnmt: warning: ATTNMT_RESIDENT: " + r.dir.string() +
                                                " can be entered by other users"));
  CHECK_THAT(open_dir.output, Catch::EndsWith(read_file(kModel + "/tiny.beam3.en")));
  CHECK(engines_of(r.dir) == 0);
}
