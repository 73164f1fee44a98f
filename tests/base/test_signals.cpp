// SIGINT and SIGTERM taken by a thread of their own (util/signals.h): recorded while a
// StopSignals is alive, the default action otherwise, and children start with them unblocked.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include "util/process.h"
#include "util/signals.h"
#include "util/text_io.h"

namespace fs = std::filesystem;

namespace {

// The blocked-signal mask in a /proc/.../status text ("SigBlk:\t0000000000004002").
unsigned long long blocked_mask(const std::string& status) {
  const auto at = status.find("SigBlk:");
  REQUIRE(at != std::string::npos);
  return std::stoull(status.substr(at + 7), nullptr, 16);
}

bool is_blocked(unsigned long long mask, int sig) { return (mask >> (sig - 1)) & 1ULL; }

int wait_for(const attnmt::StopSignals& s) {
  for (int i = 0; i < 400 && s.received() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return s.received();
}

// Runs `body` in a forked child and returns its wait status.
template <class F>
int in_child(F body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("StopSignals records SIGTERM and SIGINT sent to the process", "[signals]") {
  attnmt::StopSignals stop;
  // this thread (and every thread it starts) has them blocked: the kernel hands them to sigwait
  const auto mask = blocked_mask(attnmt::read_file("/proc/thread-self/status"));
  CHECK(is_blocked(mask, SIGINT));
  CHECK(is_blocked(mask, SIGTERM));
  CHECK(stop.received() == 0);
  REQUIRE(::kill(::getpid(), SIGTERM) == 0);
  CHECK(wait_for(stop) == SIGTERM);
  CHECK(stop.take() == SIGTERM);
  CHECK(stop.received() == 0);
  REQUIRE(::kill(::getpid(), SIGINT) == 0);
  CHECK(wait_for(stop) == SIGINT);
}

TEST_CASE("without a StopSignals, SIGTERM and SIGINT end the process as their default action does", "[signals]") {
  for (int sig : {SIGTERM, SIGINT}) {
    INFO(sig);
    const int status = in_child([sig] {
      attnmt::take_stop_signals_on_own_thread();
      { attnmt::StopSignals scope; }  // one that has come and gone leaves the default action back
      ::kill(::getpid(), sig);
      std::this_thread::sleep_for(std::chrono::seconds(5));
      ::_exit(3);  // not reached
    });
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
  }
}

TEST_CASE("a signal the process started with ignored stays ignored, unless a StopSignals asks", "[signals]") {
  const int status = in_child([] {
    std::signal(SIGINT, SIG_IGN);  // as bash starts a background job
    attnmt::take_stop_signals_on_own_thread();
    ::kill(::getpid(), SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    attnmt::StopSignals stop;
    ::kill(::getpid(), SIGINT);
    ::_exit(wait_for(stop) == SIGINT ? 0 : 4);
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("run_child starts its child with SIGINT and SIGTERM unblocked", "[signals]") {
  attnmt::take_stop_signals_on_own_thread();
  const auto out = fs::temp_directory_path() / ("attnmt_sigblk." + std::to_string(::getpid()));
  const auto r = attnmt::run_child({"/bin/sh", "-c", "cat /proc/self/status"}, out.string());
  REQUIRE(r.exit_code == 0);
  const auto mask = blocked_mask(attnmt::read_file(out.string()));
  fs::remove(out);
  CHECK_FALSE(is_blocked(mask, SIGINT));
  CHECK_FALSE(is_blocked(mask, SIGTERM));
}
