// Catch2's runner, plus skips (skip.h): a run that failed nothing but skipped something exits
// kSkipExitCode, after one "SKIPPED: <test case>: <why>" line per skip.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "skip.h"

namespace {

std::vector<std::string>& skips() {
  static std::vector<std::string> list;
  return list;
}

}  // namespace

void attnmt::test::note_skip(const std::string& why) {
  skips().push_back(Catch::getResultCapture().getCurrentTestName() + ": " + why);
}

int main(int argc, char* argv[]) {
  const int result = Catch::Session().run(argc, argv);
  for (const auto& skip : skips()) std::cout << "SKIPPED: " << skip << "\n";
  std::cout.flush();
  // result: the number of failed assertions (capped), or of tests listed for --list-*.
  return result == 0 && !skips().empty() ? attnmt::test::kSkipExitCode : result;
}
