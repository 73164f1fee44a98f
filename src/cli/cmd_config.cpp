// attnmt config CONFIG.yaml [--set key=value ...] [--minimal] | attnmt config --keys
// Prints what a config resolves to (defaults < base: chain < the file < --set), validated, without
// reading any data: every key, or with --minimal only those that differ from the defaults. --keys
// prints the key table instead (type, default, values, when it may change, help).
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/decode_flags.h"
#include "config/loader.h"
#include "util/error.h"

namespace attnmt::cli {

void add_config_command(CLI::App& app, const GlobalOptions&) {
  struct Options {
    std::string config;
    std::vector<std::string> overrides;
    bool minimal = false;
    bool keys = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("config", "Print the resolved config (defaults < base: < YAML < --set) and exit");
  cmd->add_option("config", o->config, "Experiment config (YAML)");
  cmd->add_option("--set", o->overrides, "Override a config key: --set train.max_steps=100 (repeatable)")->take_all();
  cmd->add_flag("--minimal", o->minimal, "Only the keys whose values differ from the defaults");
  cmd->add_flag("--keys", o->keys,
                "Print every key instead: type, default, allowed values, when it may change (train: fixed by "
                "training; load: translate/serve --set too; call: per Python translate() call too), help");
  cmd->callback([o] {
    if (o->keys) {
      if (!o->config.empty() || !o->overrides.empty() || o->minimal) {
        throw InputError("config --keys: takes no config, --set or --minimal");
      }
      static const char* const scopes[] = {"train", "load", "call"};
      for (const KeyInfo& k : config_key_table()) {
        std::printf("%s  %s = %s  [%s]%s%s\n    %s\n", k.key.c_str(), k.type.c_str(),
                    k.default_value.empty() ? "\"\"" : k.default_value.c_str(), scopes[static_cast<int>(k.scope)],
                    k.allowed.empty() ? "" : "  ", plain_text(k.allowed).c_str(), plain_text(k.help).c_str());
      }
      return;
    }
    if (o->config.empty()) throw InputError("config: a config file is required (or --keys)");
    const auto text = config_to_yaml(load_config_file(o->config, o->overrides), o->minimal);
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace attnmt::cli
