// attnmt, the program users run. Any process that loads LibTorch (Debian's pulls in ~290 shared
// libraries) spends ~0.7 s starting, before its first line of work: the dynamic loader, page
// faults, LibTorch's operator registration (docs/architecture.md, "The front and the engine").
// This program links no LibTorch: it runs the commands that need none (score, config, help,
// --version) itself, and for any other command execs attnmt-engine, the whole program, found next
// to it, with the same arguments (argv[0] too, and the same process: signals and the PID a caller
// holds reach the engine).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/program.h"
#include "cli/recorded_help.h"
#include "cli/resident.h"
#include "util/error.h"
#include "util/host_tuning.h"
#include "util/process.h"
#include "util/signals.h"

namespace {

using attnmt::cli::Command;

// The commands whose code reaches no LibTorch header (the attnmt_cli library); help is built in.
const std::vector<Command> kCommands = {
    {"score", attnmt::cli::add_score_command},
    {"config", attnmt::cli::add_config_command},
};

std::optional<std::string> recorded_help(const std::vector<std::string>& args, const std::string& program) {
  using attnmt::cli::kRecordedHelpTexts;
  for (size_t i = 0; i < attnmt::cli::kRecordedHelpTextCount; ++i) {
    const auto& entry = kRecordedHelpTexts[i];
    const size_t count = entry.args[1] == nullptr ? 1 : 2;
    if (args.size() != count || args[0] != entry.args[0] || (count == 2 && args[1] != entry.args[1])) continue;
    std::string text = entry.text;
    const std::string marker = attnmt::cli::kRecordedProgram;
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + program.size())) {
      text.replace(at, marker.size(), program);
    }
    return text;
  }
  return std::nullopt;
}

// Whether this program runs the command line itself. The command is the first argument that is
// neither a global option nor --progress's value; anything else before it (an option of another
// spelling, `--`) goes to the engine, so that what is said about it is the engine's own.
bool runs_here(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--debug" || arg == "--version" || arg == "--help" || arg == "-h" || arg.rfind("--progress=", 0) == 0) {
      continue;
    }
    if (arg == "--progress" && i + 1 < args.size() && args[i + 1].rfind('-', 0) != 0) {
      ++i;
      continue;
    }
    if (arg.empty() || arg[0] == '-') return false;
    if (arg == "help" || recorded_help(args, "")) return true;  // recorded: `translate --help`
    for (const Command& command : kCommands) {
      if (arg == command.name) return true;
    }
    return false;
  }
  return true;  // no command: --version, --help, or CLI11's "a subcommand is required"
}

// Only returns if the engine cannot be started (then one error line, and exit code 1), or with the
// command's exit code where it ran in the resident engine (ATTNMT_RESIDENT, cli/resident.h).
int run_engine(int argc, char** argv) {
  std::string engine;
  try {
    engine = (std::filesystem::path(attnmt::self_executable()).parent_path() / ATTNMT_ENGINE_NAME).string();
    if (attnmt::cli::resident_engine_wanted()) {
      const int code = attnmt::cli::run_in_resident_engine(engine, argc, argv);
      if (code >= 0) return code;
    }
  } catch (const attnmt::Error& e) {
    std::fprintf(stderr, "attnmt: error: %s\n", e.what());
    return e.exit_code();
  }
  execv(engine.c_str(), argv);
  std::fprintf(stderr,
               "attnmt: error: cannot start %s, the program that runs every command but score, config and help: %s\n",
               engine.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Before the signal thread starts: the engine would inherit its blocked signals.
  if (!runs_here(std::vector<std::string>(argv + 1, argv + argc))) return run_engine(argc, argv);
  attnmt::take_stop_signals_on_own_thread();
  attnmt::finish_process(attnmt::cli::run_program(argc, argv, kCommands, recorded_help));
}
