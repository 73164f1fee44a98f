#include "cli/program.h"

#include <cstdio>
#include <exception>
#include <string>

#include "util/cpu_kernels.h"
#include "util/error.h"
#include "util/progress.h"

namespace attnmt::cli {

// The commit the build's sources are at ("" outside a git clone): build/generated/git_commit.cpp,
// written by cmake/git_commit.cmake at every build.
extern const char* const kGitCommit;

namespace {

std::string version_line() {
  const std::string commit = kGitCommit;
  return std::string("attnmt ") + ATTNMT_VERSION + (commit.empty() ? "" : " (git " + commit + ")");
}

int fail(const std::string& message, int code) {
  std::fprintf(stderr, "attnmt: error: %s\n", message.c_str());
  return code;
}

int print(const std::string& text) {
  std::printf("%s", text.c_str());
  return 0;
}

}  // namespace

int run_program(int argc, char** argv, const std::vector<Command>& commands, RecordedHelp recorded) {
  CLI::App app{"attnmt: RNN encoder-decoder NMT with pluggable attention"};
  app.set_version_flag("--version", version_line());
  app.require_subcommand(1);
  GlobalOptions global;
  global.args.assign(argv + 1, argv + argc);
  app.add_flag("--debug", global.debug, "Verbose logging; errors show their backtrace");
  app.add_option_function<std::string>(
      "--progress", [](const std::string& mode) { set_progress_mode(parse_progress_mode(mode)); },
      "auto | always | never: a progress line on stderr (auto: only when it is a terminal)");
  app.fallthrough();  // the options above may also follow the command: attnmt train CONFIG --progress never
  auto* help = app.add_subcommand("help", "Show help for attnmt or one of its commands");
  std::string help_topic;
  help->add_option("command", help_topic, "Command to describe");
  for (const Command& command : commands) {
    command.add(app, global);
    // The front routes command lines by these names: one that is not the command's own throws here
    // (uncaught, on every run), rather than sending that command to the engine unnoticed.
    app.get_subcommand(command.name);
  }

  try {
    select_cpu_isa();  // a bad ATTNMT_CPU_ISA is one error line, before anything runs
    if (recorded) {
      if (auto text = recorded(global.args, argv[0])) return print(*text);
    }
    app.parse(argc, argv);
    if (help->parsed()) {
      if (recorded) {
        // The record has every command's help, this program's and those it lacks alike.
        std::vector<std::string> asked{"help"};
        if (!help_topic.empty()) asked.push_back(help_topic);
        if (auto text = recorded(asked, argv[0])) return print(*text);
        return fail("unknown command '" + help_topic + "' (see 'attnmt --help')", 2);
      }
      if (help_topic.empty()) return print(app.help());
      CLI::App* sub = nullptr;
      try {
        sub = app.get_subcommand(help_topic);
      } catch (const CLI::OptionNotFound&) {
        return fail("unknown command '" + help_topic + "' (see 'attnmt --help')", 2);
      }
      return print(sub->help());
    }
  } catch (const CLI::CallForHelp& e) {
    if (recorded) {
      // The whole program's help lists the commands this program lacks too: the engine's text.
      std::vector<std::string> asked{"--help"};
      if (!app.get_subcommands().empty()) asked.insert(asked.begin(), app.get_subcommands().front()->get_name());
      if (auto text = recorded(asked, argv[0])) return print(*text);
    }
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(e.what(), 2);
  } catch (const Error& e) {
    return fail(e.what(), e.exit_code());
  } catch (const std::exception& e) {
    // LibTorch errors carry a multi-line backtrace: keep the first line unless --debug.
    std::string message = e.what();
    if (!global.debug) message = message.substr(0, message.find('\n'));
    return fail(message, 1);
  }
  return 0;
}

}  // namespace attnmt::cli
