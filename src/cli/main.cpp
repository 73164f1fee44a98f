// attnmt: one program, one sub-command per task (train, translate, score, ...).
#include <cstdio>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "util/cpu_kernels.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/progress.h"
#include "util/host_tuning.h"
#include "util/signals.h"

namespace {

int fail(const std::string& message, int code) {
  std::fprintf(stderr, "attnmt: error: %s\n", message.c_str());
  return code;
}

int run(int argc, char** argv) {
  using namespace attnmt;
  CLI::App app{"attnmt: RNN encoder-decoder NMT with pluggable attention"};
  app.set_version_flag("--version", std::string("attnmt ") + ATTNMT_VERSION);
  app.require_subcommand(1);
  cli::GlobalOptions global;
  global.args.assign(argv + 1, argv + argc);
  app.add_flag("--debug", global.debug, "Verbose logging; errors show their backtrace");
  app.add_option_function<std::string>(
      "--progress", [](const std::string& mode) { set_progress_mode(parse_progress_mode(mode)); },
      "auto | always | never: a progress line on stderr (auto: only when it is a terminal)");
  app.fallthrough();  // the options above may also follow the command: attnmt train CONFIG --progress never
  auto* help = app.add_subcommand("help", "Show help for attnmt or one of its commands");
  std::string help_topic;
  help->add_option("command", help_topic, "Command to describe");

  cli::add_train_command(app, global);
  cli::add_translate_command(app, global);
  cli::add_score_command(app, global);
  cli::add_bench_command(app, global);
  cli::add_align_command(app, global);
  cli::add_plot_command(app, global);
  cli::add_compare_command(app, global);
  cli::add_lexicon_command(app, global);
  cli::add_average_command(app, global);
  cli::add_config_command(app, global);
  cli::add_serve_command(app, global);
  cli::add_convert_command(app, global);
  cli::add_export_command(app, global);

  try {
    select_cpu_isa();  // a bad ATTNMT_CPU_ISA is one error line, before anything runs
    app.parse(argc, argv);
    if (help->parsed()) {
      if (help_topic.empty()) {
        std::printf("%s", app.help().c_str());
      } else {
        CLI::App* sub = nullptr;
        try {
          sub = app.get_subcommand(help_topic);
        } catch (const CLI::OptionNotFound&) {
          return fail("unknown command '" + help_topic + "' (see 'attnmt --help')", 2);
        }
        std::printf("%s", sub->help().c_str());
      }
    }
  } catch (const CLI::CallForHelp& e) {
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

}  // namespace

// Before any shared library's initialiser, LibTorch's included (util/host_tuning.h).
__attribute__((section(".preinit_array"), used)) static void (*const attnmt_preinit)(int, char**, char**) =
    attnmt::tune_malloc_at_start;

int main(int argc, char** argv) {
  attnmt::take_stop_signals_on_own_thread();  // before any other thread starts
  attnmt::tune_process();
  attnmt::finish_process(run(argc, argv));
}
