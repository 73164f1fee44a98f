// Tests that cannot run here say so: the process then exits with kSkipExitCode, which CTest
// (SKIP_RETURN_CODE, set for every test in tests/CMakeLists.txt) reports as "Skipped", and prints
// "SKIPPED: <test case>: <why>", which scripts/test.sh collects. CTest runs one Catch2 test case
// per process, so a test case that skips any part is reported Skipped as a whole.
//
// Two kinds, because a CI machine can install a package but not change its CPU:
// - ATTNMT_MISSING_DEPENDENCY: a package, a program or a permission this machine lacks (Gloo,
//   oneDNN, cpp-httplib, cairo, Chromium, root, transparent huge pages). A failure under CI=true,
//   so that CI never passes a test that did not run.
// - ATTNMT_CPU_LACKS: an instruction-set level this CPU does not have (as CTest's isa:<level>
//   tests). A skip under CI too.
// Neither returns: the caller returns, or goes on with the part that does run here.
#pragma once
#include <catch2/catch.hpp>
#include <cstdlib>
#include <sstream>
#include <string>

namespace attnmt::test {

// Exit status of a test process that skipped something and failed nothing (autoconf's and CTest's
// isa:<level> convention).
inline constexpr int kSkipExitCode = 77;

// Whether this is a CI run (CI=true): a test that cannot run for a missing dependency then fails.
inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// Records that the running test case skipped something, and why (defined in catch_main.cpp).
void note_skip(const std::string& why);

}  // namespace attnmt::test

#define ATTNMT_SKIP_MESSAGE_(message) \
  ([&] {                              \
    std::ostringstream text_;         \
    text_ << message;                 \
    return text_.str();               \
  }())

#define ATTNMT_MISSING_DEPENDENCY(message)                                                     \
  do {                                                                                         \
    if (attnmt::test::in_ci()) FAIL(message << " (CI=true: a test that cannot run fails)");    \
    attnmt::test::note_skip(ATTNMT_SKIP_MESSAGE_(message));                                    \
    WARN(message);                                                                             \
  } while (0)

#define ATTNMT_CPU_LACKS(message)                              \
  do {                                                         \
    attnmt::test::note_skip(ATTNMT_SKIP_MESSAGE_(message));    \
    WARN(message);                                             \
  } while (0)
