// Linked into attnmt-engine-test-hooks only (tests/CMakeLists.txt): with the environment variable
// ATTNMT_TEST_STREAM_STEP_MS=N, every search step of a streamed sentence of `attnmt serve` sleeps
// N ms (serve/batch_fault.h), so that tests/e2e/test_serve.cpp's client can leave while the
// sentence still decodes, whatever the machine's speed, and see its search stop.
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "serve/batch_fault.h"

namespace {

int& step_ms() {
  static int ms = 0;
  return ms;
}

void sleep_a_step() { std::this_thread::sleep_for(std::chrono::milliseconds(step_ms())); }

// Runs when the program loads: before main, so before any batch worker starts.
const bool installed = [] {
  const char* value = std::getenv("ATTNMT_TEST_STREAM_STEP_MS");
  if (value == nullptr) return false;
  step_ms() = std::stoi(value);
  attnmt::stream_step_for_tests = &sleep_a_step;
  return true;
}();

}  // namespace
