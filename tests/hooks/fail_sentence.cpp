// Linked into attnmt-engine-test-hooks only (tests/CMakeLists.txt): with the environment variable
// ATTNMT_TEST_FAIL_SENTENCE=TEXT, a batch of `attnmt serve` holding a sentence equal to TEXT
// throws as a decoding failure would (serve/batch_fault.h). tests/e2e/test_serve.cpp uses it to
// check that such a sentence fails its own request only.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "serve/batch_fault.h"
#include "util/error.h"
#include "util/logging.h"

namespace {

std::string& fail_sentence() {
  static std::string sentence;
  return sentence;
}

void fail_on_sentence(const std::vector<std::string>& batch) {
  if (std::find(batch.begin(), batch.end(), fail_sentence()) != batch.end()) {
    throw attnmt::RuntimeError("decoding failed (ATTNMT_TEST_FAIL_SENTENCE, a test-only hook)");
  }
}

// Runs when the program loads: before main, so before any batch worker starts.
const bool installed = [] {
  const char* value = std::getenv("ATTNMT_TEST_FAIL_SENTENCE");
  if (value == nullptr) return false;
  fail_sentence() = value;
  attnmt::batch_fault_for_tests = &fail_on_sentence;
  return true;
}();

}  // namespace
