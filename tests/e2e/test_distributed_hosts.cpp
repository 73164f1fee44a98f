// Training on several hosts as a user starts it (docs/training.md's torchrun variables and
// --distributed): two hosts made as network namespaces (tests/core/hosts.h), and the start-up
// failures that used to leave the other ranks waiting for distributed.timeout.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "checkpoints.h"
#include "hosts.h"
#include "program.h"
#include "train/distributed.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

// docs/training.md's command for one rank of a 2-rank run, as host h of `hosts` runs it; no
// GLOO_SOCKET_IFNAME, whatever the test's environment has. `timeout` bounds a hang.
std::string rank_command(const TwoHosts& hosts, int h, const std::string& args) {
  return hosts.on(h) + "timeout 120 env -u GLOO_SOCKET_IFNAME RANK=" + std::to_string(h) +
         " WORLD_SIZE=2 MASTER_ADDR=10.231.7.1 MASTER_PORT=29500 " + ATTNMT_BINARY + " train " + args + " --distributed";
}

// The "loss" values of a log.jsonl, in order (training and validation records).
std::vector<std::string> logged_losses(const fs::path& log) {
  const std::string text = attnmt::read_file(log.string());
  static const std::regex loss("\"loss\":([^,}]+)");
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), loss), end; it != end; ++it) out.push_back((*it)[1]);
  return out;
}

// The "attnmt: error: ..." line of a program's output ("" when there is none).
std::string error_line(const std::string& output) {
  const auto at = output.find("attnmt: error: ");
  return at == std::string::npos ? "" : output.substr(at, output.find('\n', at) - at);
}

bool hosts_usable(const TwoHosts& hosts) {
  if (!attnmt::distributed_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
    return false;
  }
  if (!hosts.error().empty()) {
    ATTNMT_MISSING_DEPENDENCY("two hosts as network namespaces need root and `ip netns` (" + hosts.error() +
                              "): skipped");
    return false;
  }
  return true;
}

}  // namespace

TEST_CASE("distributed: two hosts (network namespaces, host name on 127.0.1.1) train as one host's --nproc 2",
          "[distributed][e2e][hosts]") {
  TwoHosts hosts;
  if (!hosts_usable(hosts)) return;
  auto dir = temp_dir("dist_hosts");
  write(dir / "c.yaml", tiny_config(dir / "hosts", 12) + "distributed: {join_timeout: 60}\n");
  const std::string cfg = (dir / "c.yaml").string() + " --set train.batch_size=5 --set train.report_every=1";
  const std::string a_log = (dir / "a.log").string(), b_log = (dir / "b.log").string();
  const auto out = shell(rank_command(hosts, 0, cfg) + " > " + a_log + " 2>&1 & PA=$!; " + rank_command(hosts, 1, cfg) +
                         " > " + b_log + " 2>&1 & PB=$!; wait $PA; echo rcA=$?; wait $PB; echo rcB=$?");
  const std::string a = attnmt::read_file(a_log), b = attnmt::read_file(b_log);
  INFO(out << "--- host A:\n" << a << "--- host B:\n" << b);
  REQUIRE(out.find("rcA=0") != std::string::npos);
  REQUIRE(out.find("rcB=0") != std::string::npos);
  // each rank bound Gloo to its end of the link, found by the route to MASTER_ADDR
  CHECK(a.find("[dist] rank 0 of 2 on 10.231.7.1 (veth-a), rendezvous 10.231.7.1:29500") != std::string::npos);
  CHECK(b.find("[dist] rank 1 of 2 on 10.231.7.2 (veth-b), rendezvous 10.231.7.1:29500") != std::string::npos);

  auto one = run("train " + cfg + " --nproc 2 --set train.save_dir=" + (dir / "one").string());
  INFO(one.output);
  REQUIRE(one.status == 0);
  const auto losses = logged_losses(dir / "hosts" / "log.jsonl");
  CHECK(losses.size() >= 12);
  CHECK(losses == logged_losses(dir / "one" / "log.jsonl"));
  check_same_tensors(dir / "hosts" / "ckpt.12.pt", dir / "one" / "ckpt.12.pt");
  fs::remove_all(dir);
}

TEST_CASE("distributed: a rank that fails to start on host B stops rank 0 within 10 s with B's error",
          "[distributed][e2e][hosts]") {
  TwoHosts hosts;
  if (!hosts_usable(hosts)) return;
  const auto [what, bad] = GENERATE(std::make_pair(std::string("bad config"), std::string("--set model.encoder.dropout=1.5")),
                                    std::make_pair(std::string("missing data"), std::string("--set data.train.src=/nonexistent/train.de")));
  INFO(what);
  auto dir = temp_dir("dist_hosts_fail");
  write(dir / "c.yaml", tiny_config(dir / "m", 1000000));
  const std::string cfg = (dir / "c.yaml").string();
  const std::string a_log = (dir / "a.log").string(), b_log = (dir / "b.log").string();
  // A waits at the join; B fails; the time from B's exit to A's is what a user waits
  const auto out = shell(rank_command(hosts, 0, cfg) + " > " + a_log + " 2>&1 & PA=$!; sleep 1; " +
                         rank_command(hosts, 1, cfg + " " + bad) + " > " + b_log +
                         " 2>&1; echo rcB=$?; t=$(date +%s%N); wait $PA; echo rcA=$?; "
                         "echo stop_ms=$(( ($(date +%s%N) - t) / 1000000 ))");
  const std::string a = attnmt::read_file(a_log), b = attnmt::read_file(b_log);
  INFO(out << "--- host A:\n" << a << "--- host B:\n" << b);
  CHECK(out.find("rcB=2") != std::string::npos);
  CHECK(out.find("rcA=1") != std::string::npos);
  const std::smatch stop = [&] {
    std::smatch m;
    std::regex_search(out, m, std::regex("stop_ms=([0-9]+)"));
    return m;
  }();
  REQUIRE(!stop.empty());
  CHECK(std::stol(stop[1]) < 10000);
  const std::string b_error = error_line(b);
  REQUIRE(b_error.size() > std::string("attnmt: error: ").size());
  CHECK(error_line(a) == "attnmt: error: distributed: rank 1 of 2 failed to start: " +
                             b_error.substr(std::string("attnmt: error: ").size()));
  // nothing left running on either host
  CHECK(hosts.processes(0).empty());
  CHECK(hosts.processes(1).empty());
  fs::remove_all(dir);
}

TEST_CASE("distributed: a rank that never comes stops the others after distributed.join_timeout, named",
          "[distributed][e2e]") {
  if (!attnmt::distributed_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
    return;
  }
  auto dir = temp_dir("dist_join_timeout");
  write(dir / "c.yaml", tiny_config(dir / "m", 10) + "distributed: {join_timeout: 3}\n");
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  const auto started = std::chrono::steady_clock::now();
  auto r = run("train " + (dir / "c.yaml").string() + " --distributed",
               "RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(error_line(r.output) == "attnmt: error: distributed: waited 3 s for rank 1 of 2 at 127.0.0.1:" + port +
                                    " (distributed.join_timeout)");
  CHECK(seconds < 10);
  fs::remove_all(dir);
}

TEST_CASE("distributed: ranks that differ are refused at the join, naming the rank and the first key",
          "[distributed][e2e]") {
  if (!attnmt::distributed_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
    return;
  }
  auto dir = temp_dir("dist_differ");
  write(dir / "c.yaml", tiny_config(dir / "m", 10) + "distributed: {join_timeout: 30}\n");
  const std::string cfg = (dir / "c.yaml").string();
  const std::string log = (dir / "log").string();
  // threads may differ per host (cores differ); the learning rate may not
  const auto out = shell("export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + $$ % 20000)) WORLD_SIZE=2; RANK=0 timeout 60 " +
                         std::string(ATTNMT_BINARY) + " train " + cfg + " --distributed > " + log +
                         ".0 2>&1 & P0=$!; RANK=1 timeout 60 " + ATTNMT_BINARY + " train " + cfg +
                         " --distributed --threads 2 --set train.learning_rate=0.02 > " + log +
                         ".1 2>&1; echo rc1=$?; wait $P0; echo rc0=$?");
  const std::string r0 = attnmt::read_file(log + ".0"), r1 = attnmt::read_file(log + ".1");
  INFO(out << "--- rank 0:\n" << r0 << "--- rank 1:\n" << r1);
  CHECK(out.find("rc0=2") != std::string::npos);
  CHECK(out.find("rc1=2") != std::string::npos);
  const std::regex said(
      "attnmt: error: distributed: rank 1 of 2 differs from rank 0: config [0-9a-f]{16} vs rank 0's [0-9a-f]{16}; "
      "first difference: train.learning_rate = 0.02 there, 0.01 on rank 0");
  CHECK(std::regex_match(error_line(r0), said));
  CHECK(std::regex_match(error_line(r1), said));
  fs::remove_all(dir);
}

TEST_CASE("distributed: a launcher (--nnodes 2) that fails to start on host B stops host A's within 10 s with B's error",
          "[distributed][e2e][hosts]") {
  TwoHosts hosts;
  if (!hosts_usable(hosts)) return;
  auto dir = temp_dir("dist_hosts_launcher_fail");
  write(dir / "c.yaml", tiny_config(dir / "m", 1000000));
  const std::string cfg = (dir / "c.yaml").string();
  const std::string a_log = (dir / "a.log").string(), b_log = (dir / "b.log").string();
  const auto launcher = [&](int h, const std::string& extra) {
    return hosts.on(h) + "timeout 120 env MASTER_ADDR=10.231.7.1 MASTER_PORT=29500 " + ATTNMT_BINARY + " train " + cfg +
           " --nnodes 2 --node-rank " + std::to_string(h) + " --max-restarts 1 " + extra;
  };
  const auto out = shell(launcher(0, "") + " > " + a_log + " 2>&1 & PA=$!; sleep 1; " +
                         launcher(1, "--set model.encoder.dropout=1.5") + " > " + b_log +
                         " 2>&1; echo rcB=$?; t=$(date +%s%N); wait $PA; echo rcA=$?; "
                         "echo stop_ms=$(( ($(date +%s%N) - t) / 1000000 ))");
  const std::string a = attnmt::read_file(a_log), b = attnmt::read_file(b_log);
  INFO(out << "--- host A:\n" << a << "--- host B:\n" << b);
  CHECK(out.find("rcB=2") != std::string::npos);
  CHECK(out.find("rcA=2") != std::string::npos);  // bad input: not restarted
  std::smatch stop;
  REQUIRE(std::regex_search(out, stop, std::regex("stop_ms=([0-9]+)")));
  CHECK(std::stol(stop[1]) < 10000);
  const std::string b_error = error_line(b);
  REQUIRE(b_error.size() > std::string("attnmt: error: ").size());
  CHECK(error_line(a) == "attnmt: error: distributed: node 1 of 2 failed to start: " +
                             b_error.substr(std::string("attnmt: error: ").size()));
  CHECK(hosts.processes(0).empty());
  CHECK(hosts.processes(1).empty());
  fs::remove_all(dir);
}
