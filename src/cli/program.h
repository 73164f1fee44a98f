// What the two attnmt programs share of main(): the app with its global options (--version,
// --debug, --progress) and its help command, the commands each program registers, and the one-line
// errors and exit codes. The engine (cli/engine_main.cpp) registers every command; the front
// (cli/front_main.cpp), which users run as `attnmt`, registers only those that need no LibTorch
// and answers help from the engine's texts recorded at build time (cli/recorded_help.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace attnmt::cli {

struct Command {
  const char* name;
  void (*add)(CLI::App& app, const GlobalOptions& global);
};

// The engine's output for exactly these arguments (argv[1..]) when it is a help text recorded at
// build time, with argv[0] where the engine printed its own; nullopt otherwise.
using RecordedHelp = std::optional<std::string> (*)(const std::vector<std::string>& args, const std::string& program);

// Parses the command line and runs the command it names among `commands` (help is built in).
// Returns the exit code: 0, or that of the one error line printed. With `recorded` (the front),
// help for the whole program and for the commands this program lacks comes from it.
int run_program(int argc, char** argv, const std::vector<Command>& commands, RecordedHelp recorded = nullptr);

}  // namespace attnmt::cli
