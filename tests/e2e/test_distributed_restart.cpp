// Elastic restarts (train --max-restarts, src/train/launcher.h): a rank SIGKILLed mid-run, after a
// checkpoint; the group restarted from the newest checkpoint ends with the parameters of a run
// never killed. Without restarts, every process stops within seconds, naming the rank.
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <string>

#include "checkpoints.h"
#include "hosts.h"
#include "program.h"
#include "train/distributed.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

// 2 x 4 pairs per update of tests/data's 30 (4 updates an epoch), dropout on (rank 1 draws masks
// of its own, which the restart must draw alike), a checkpoint every 10 updates.
constexpr int kSteps = 120;
std::string restart_config(const fs::path& dir) {
  write(dir / "c.yaml", tiny_config(dir / "unused", kSteps) + "distributed: {join_timeout: 60}\n");
  return (dir / "c.yaml").string() +
         " --set train.batch_size=4 --set train.valid_every=10 --set train.keep_checkpoints=20"
         " --set model.encoder.dropout=0.3 --set model.decoder.dropout=0.3 --set train.report_every=10";
}

// Shell: waits (at most 60 s) for `file` to exist.
std::string wait_for_file(const fs::path& file) {
  return "for i in $(seq 1200); do [ -f " + file.string() + " ] && break; sleep 0.05; done; ";
}

// Shell: the pid the launcher logged for `rank` of 2 in `log` (its first round).
std::string pid_of(int rank, const std::string& log) {
  return "$(sed -n \"s/.*rank " + std::to_string(rank) + " of 2: pid \\([0-9]*\\).*/\\1/p\" " + log + " | head -1)";
}

// The step the launcher said the restart resumes from, or -1.
long restart_step(const std::string& output) {
  std::smatch m;
  static const std::regex said(R"(\[dist\] rank 1 of 2 died \(signal 9\); restart 1 of 1 from step ([0-9]+))");
  return std::regex_search(output, m, said) ? std::stol(m[1]) : -1;
}

bool have_gloo() {
  if (attnmt::distributed_available()) return true;
  ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
  return false;
}

}  // namespace

TEST_CASE("distributed: --nproc 2 --max-restarts 1, rank 1 SIGKILLed after a checkpoint, ends as a run never killed",
          "[distributed][e2e][restart]") {
  if (!have_gloo()) return;
  auto dir = temp_dir("dist_restart");
  const std::string cfg = restart_config(dir);
  const std::string log = (dir / "killed.log").string();
  const auto out = shell(std::string(ATTNMT_BINARY) + " train " + cfg +
                         " --nproc 2 --max-restarts 1 --set train.save_dir=" + (dir / "killed").string() + " > " + log +
                         " 2>&1 & L=$!; " + wait_for_file(dir / "killed" / "ckpt.20.pt") + "P=" + pid_of(1, log) +
                         "; kill -9 $P && echo killed=$P; wait $L; echo rc=$?");
  const std::string text = attnmt::read_file(log);
  INFO(out << "--- launcher:\n" << text);
  REQUIRE(out.find("killed=") != std::string::npos);
  REQUIRE(out.find("rc=0") != std::string::npos);
  // the launcher named the rank, the restart and the step; rank 0 resumed from that checkpoint
  const long step = restart_step(text);
  REQUIRE(step >= 20);
  REQUIRE(step < kSteps);
  CHECK(text.find("resumed from '" + (dir / "killed" / ("ckpt." + std::to_string(step) + ".pt")).string() +
                  "' at step " + std::to_string(step)) != std::string::npos);

  auto straight = run("train " + cfg + " --nproc 2 --set train.save_dir=" + (dir / "straight").string());
  INFO(straight.output);
  REQUIRE(straight.status == 0);
  const std::string last = "ckpt." + std::to_string(kSteps) + ".pt";
  check_same_tensors(dir / "straight" / last, dir / "killed" / last);
  fs::remove_all(dir);
}

TEST_CASE("distributed: --max-restarts 0, rank 1 SIGKILLed: every process exits non-zero within 10 s, naming it",
          "[distributed][e2e][restart]") {
  if (!have_gloo()) return;
  auto dir = temp_dir("dist_no_restart");
  write(dir / "c.yaml", tiny_config(dir / "m", 1000000));
  const std::string log = (dir / "log").string();
  const auto out = shell(std::string(ATTNMT_BINARY) + " train " + (dir / "c.yaml").string() +
                         " --nproc 2 --max-restarts 0 --set train.report_every=50 > " + log + " 2>&1 & L=$!; " +
                         "for i in $(seq 600); do grep -q \"step 100 \" " + log + " && break; sleep 0.05; done; " +
                         "P0=" + pid_of(0, log) + "; P1=" + pid_of(1, log) + "; kill -9 $P1; t0=$(date +%s%N); " +
                         "wait $L; rc=$?; echo \"rc=$rc ms=$(( ($(date +%s%N) - t0) / 1000000 ))\"; " +
                         "kill -0 $P0 2>/dev/null && echo rank0=running || echo rank0=gone");
  const std::string text = attnmt::read_file(log);
  INFO(out << "--- launcher:\n" << text);
  CHECK(out.find("rc=1 ") != std::string::npos);
  std::smatch ms;
  REQUIRE(std::regex_search(out, ms, std::regex("ms=([0-9]+)")));
  CHECK(std::stol(ms[1]) < 10000);
  CHECK(out.find("rank0=gone") != std::string::npos);
  CHECK(text.find("attnmt: error: distributed: rank 1 of 2 died (signal 9); not restarted (--max-restarts 0)") !=
        std::string::npos);
  // the survivor stopped by itself (its collective broke) or was stopped: non-zero either way
  CHECK(std::regex_search(text, std::regex(R"(\[dist\] rank 0 of 2 (exited with code [1-9]|died \(signal))")));
  fs::remove_all(dir);
}

TEST_CASE("distributed: two hosts --nnodes 2 --max-restarts 1, host B's rank SIGKILLed, end as one host's --nproc 2",
          "[distributed][e2e][hosts][restart]") {
  if (!have_gloo()) return;
  TwoHosts hosts;
  if (!hosts.error().empty()) {
    ATTNMT_MISSING_DEPENDENCY("two hosts as network namespaces need root and `ip netns` (" + hosts.error() +
                              "): skipped");
    return;
  }
  auto dir = temp_dir("dist_restart_hosts");
  const std::string cfg = restart_config(dir) + " --set train.save_dir=" + (dir / "killed").string();
  const std::string a_log = (dir / "a.log").string(), b_log = (dir / "b.log").string();
  // docs/training.md's commands: one launcher per host, node 0's address and a port
  const auto launcher = [&](int h) {
    return hosts.on(h) + "timeout 120 env -u GLOO_SOCKET_IFNAME MASTER_ADDR=10.231.7.1 MASTER_PORT=29500 " +
           ATTNMT_BINARY + " train " + cfg + " --nnodes 2 --node-rank " + std::to_string(h) +
           " --nproc 1 --max-restarts 1";
  };
  const auto out = shell(launcher(0) + " > " + a_log + " 2>&1 & PA=$!; " + launcher(1) + " > " + b_log +
                         " 2>&1 & PB=$!; " + wait_for_file(dir / "killed" / "ckpt.20.pt") + "P=" + pid_of(1, b_log) +
                         "; kill -9 $P && echo killed=$P; wait $PA; echo rcA=$?; wait $PB; echo rcB=$?");
  const std::string a = attnmt::read_file(a_log), b = attnmt::read_file(b_log);
  INFO(out << "--- host A:\n" << a << "--- host B:\n" << b);
  REQUIRE(out.find("killed=") != std::string::npos);
  REQUIRE(out.find("rcA=0") != std::string::npos);
  REQUIRE(out.find("rcB=0") != std::string::npos);
  // both launchers say which rank died and where the group resumed
  const long step = restart_step(b);
  REQUIRE(step >= 20);
  CHECK(restart_step(a) == step);
  CHECK(a.find("[dist] rank 0 of 2 on 10.231.7.1 (veth-a), rendezvous 10.231.7.1:29500") != std::string::npos);

  auto one = run("train " + restart_config(dir) + " --nproc 2 --set train.save_dir=" + (dir / "one").string());
  INFO(one.output);
  REQUIRE(one.status == 0);
  const std::string last = "ckpt." + std::to_string(kSteps) + ".pt";
  check_same_tensors(dir / "one" / last, dir / "killed" / last);
  CHECK(hosts.processes(0).empty());
  CHECK(hosts.processes(1).empty());
  fs::remove_all(dir);
}

TEST_CASE("distributed: the launcher's bad option values are one-line errors, exit 2", "[distributed][e2e][restart]") {
  auto dir = temp_dir("dist_launch_errors");
  write(dir / "c.yaml", tiny_config(dir / "m", 10));
  const std::string cfg = (dir / "c.yaml").string();
  const auto [args, said] = GENERATE(
      std::make_pair(std::string("--nproc 2 --max-restarts -1"), std::string("--max-restarts must be 0 or more")),
      std::make_pair(std::string("--nnodes 2 --node-rank 2"), std::string("--node-rank 2 is not in 0..1 (--nnodes 2)")),
      std::make_pair(std::string("--node-rank 1"), std::string("--node-rank 1 is not in 0..0 (--nnodes 1)")),
      std::make_pair(std::string("--nnodes 2 --node-rank 1"),
                     std::string("--nnodes 2: environment variable MASTER_ADDR is not set")),
      std::make_pair(std::string("--nnodes 2 --node-rank 1"), std::string("")),  // with MASTER_PORT=x below
      std::make_pair(std::string("--max-restarts 1 --distributed"),
                     std::string("--max-restarts excludes --distributed")),
      std::make_pair(std::string("--max-restarts two"), std::string("--max-restarts")));
  const bool bad_port = said.empty();
  auto r = run("train " + cfg + " " + args,
               bad_port ? "env -u RANK MASTER_ADDR=127.0.0.1 MASTER_PORT=x" : "env -u MASTER_ADDR -u MASTER_PORT");
  INFO(args << "\n" << r.output);
  CHECK(r.status == 2);
  CHECK(occurrences(r.output, "attnmt: error: ") == 1);
  CHECK(r.output.find(bad_port ? "environment variable MASTER_PORT='x' is not a port (1..65535)" : said) !=
        std::string::npos);
  CHECK(!fs::exists(dir / "m"));  // refused before any work
  fs::remove_all(dir);
}
