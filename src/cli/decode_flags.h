// The flags of the commands that decode a trained model (translate, plot, align, bench): each one
// an alias of a config key, collected as "key=value" settings for load_model (io/model_file.h),
// so that their values are parsed and validated by the config loader, as `train --set` is.
#pragma once
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "config/loader.h"

namespace attnmt::cli {

struct DecodeFlag {
  const char* flag;  // "--beam-size"
  const char* key;   // "decode.beam_size"
  const char* help;
};

// Adds `--config FILE`, `--set key=value` (repeatable) and the given flags to `cmd`. The settings
// are the file's keys in file order, then --set's in command-line order, then the flags in the
// order given (so a flag wins over --set, and --set over the file).
inline std::shared_ptr<std::vector<std::string>> add_decode_flags(CLI::App* cmd, const std::vector<DecodeFlag>& flags) {
  auto sets = std::make_shared<std::vector<std::string>>();
  auto given = std::make_shared<std::vector<std::string>>();
  auto file = std::make_shared<std::string>();
  cmd->add_option("--config", *file,
                  "A YAML file of decode-time keys (decode:, threads, ...), applied before --set and the flags");
  cmd->add_option("--set", *given,
                  "Set a decode-time config key of the model: --set decode.beam_size=10 (repeatable; decode.*, "
                  "threads, gemm, device, model.attention.hard_decode)");
  for (const auto& f : flags) {
    const std::string key = f.key;
    cmd->add_option_function<std::string>(
        f.flag, [sets, key](const std::string& value) { sets->push_back(key + "=" + value); },
        std::string(f.help) + " (= --set " + key + "=...)");
  }
  // --set first: CLI11 runs option callbacks in the order the options were added.
  cmd->preparse_callback([sets, given, file](size_t) {
    sets->clear();
    given->clear();
    file->clear();
  });
  cmd->parse_complete_callback([sets, given, file] {
    sets->insert(sets->begin(), given->begin(), given->end());
    if (!file->empty()) {
      const auto from_file = settings_file(*file);
      sets->insert(sets->begin(), from_file.begin(), from_file.end());
    }
  });
  return sets;
}

}  // namespace attnmt::cli
