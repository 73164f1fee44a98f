// attnmt config CONFIG.yaml [--set key=value ...] [--minimal]
// Prints what a config resolves to (defaults < base: chain < the file < --set), validated, without
// reading any data: every key, or with --minimal only those that differ from the defaults.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "config/loader.h"

namespace attnmt::cli {

void add_config_command(CLI::App& app, const GlobalOptions&) {
  struct Options {
    std::string config;
    std::vector<std::string> overrides;
    bool minimal = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("config", "Print the resolved config (defaults < base: < YAML < --set) and exit");
  cmd->add_option("config", o->config, "Experiment config (YAML)")->required();
  cmd->add_option("--set", o->overrides, "Override a config key: --set train.max_steps=100 (repeatable)")->take_all();
  cmd->add_flag("--minimal", o->minimal, "Only the keys whose values differ from the defaults");
  cmd->callback([o] {
    const auto text = config_to_yaml(load_config_file(o->config, o->overrides), o->minimal);
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace attnmt::cli
