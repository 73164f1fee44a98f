// Test seams of the dynamic batcher (serve/batcher.h): a function called with each batch's
// sentences before they are decoded, which may throw to make the batch fail as a decoding failure
// would; and one called at every search step of a streamed sentence (before its words are
// passed on), which may sleep so that a test's client can leave while it decodes. Null in every
// attnmt program; only the tests' variant of the engine sets them (tests/hooks/, linked into
// attnmt-engine-test-hooks), so a release binary has no way to fail or slow a batch on purpose.
// Torch-free, so that the hooks compile in a second.
#pragma once
#include <string>
#include <vector>

namespace attnmt {

using BatchFault = void (*)(const std::vector<std::string>& batch);

// Set before the server starts (a static initializer of the hook's object file); read by every
// batch worker. Constant-initialized to null.
extern BatchFault batch_fault_for_tests;

using StreamStep = void (*)();
extern StreamStep stream_step_for_tests;

}  // namespace attnmt
