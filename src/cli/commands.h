// Sub-commands of the attnmt program. Each add_*_command registers its sub-command on the app;
// its callback turns options into library structs, calls the library, and throws attnmt::Error
// (InputError -> exit 2, RuntimeError -> exit 1) on failure. cli/program.cpp prints the one-line error.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace attnmt::cli {

struct GlobalOptions {
  bool debug = false;  // --debug: verbose logs and backtraces on errors
  std::vector<std::string> args;  // the command line, argv[1..] (train --nproc re-runs it per rank)
};

void add_train_command(CLI::App& app, const GlobalOptions& global);
void add_translate_command(CLI::App& app, const GlobalOptions& global);
void add_score_command(CLI::App& app, const GlobalOptions& global);
void add_bench_command(CLI::App& app, const GlobalOptions& global);
void add_align_command(CLI::App& app, const GlobalOptions& global);
void add_plot_command(CLI::App& app, const GlobalOptions& global);
void add_compare_command(CLI::App& app, const GlobalOptions& global);
void add_lexicon_command(CLI::App& app, const GlobalOptions& global);
void add_average_command(CLI::App& app, const GlobalOptions& global);
void add_config_command(CLI::App& app, const GlobalOptions& global);
void add_serve_command(CLI::App& app, const GlobalOptions& global);
void add_convert_command(CLI::App& app, const GlobalOptions& global);
void add_export_command(CLI::App& app, const GlobalOptions& global);

}  // namespace attnmt::cli
