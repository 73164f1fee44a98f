// The engine's help texts, recorded at build time by running attnmt-engine (cmake/engine_help.cmake
// writes them into the front program): `--help`, `help`, and per command `help CMD` and
// `CMD --help`. The front prints them instead of starting the engine (~0.7 s) for help alone, and
// they are the engine's own output, so neither program's help can drift from the other's.
#pragma once
#include <cstddef>

namespace attnmt::cli {

struct RecordedHelpText {
  const char* args[2];  // the engine's argv[1..]: one or two arguments (the second nullptr for one)
  const char* text;     // what it printed on stdout, with kRecordedProgram where it printed its argv[0]
};

extern const RecordedHelpText kRecordedHelpTexts[];
extern const size_t kRecordedHelpTextCount;
extern const char kRecordedProgram[];

}  // namespace attnmt::cli
