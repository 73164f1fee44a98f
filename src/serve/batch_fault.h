// A test seam of the dynamic batcher (serve/batcher.h): a function called with each batch's
// sentences before they are decoded, which may throw to make the batch fail as a decoding failure
// would. Null in every attnmt program; only the tests' variant of the engine sets it
// (tests/hooks/fail_sentence.cpp, linked into attnmt-engine-test-hooks), so a release binary has
// no way to fail a batch on purpose. Torch-free, so that the hook compiles in a second.
#pragma once
#include <string>
#include <vector>

namespace attnmt {

using BatchFault = void (*)(const std::vector<std::string>& batch);

// Set before the server starts (a static initializer of the hook's object file); read by every
// batch worker. Constant-initialized to null.
extern BatchFault batch_fault_for_tests;

}  // namespace attnmt
