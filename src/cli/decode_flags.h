// The flags of the commands that decode a trained model (translate, plot, align, bench): each one
// an alias of a config key, collected as "key=value" settings for load_model (io/model_file.h),
// so that their values are parsed and validated by the config loader, as `train --set` is.
#pragma once
#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/loader.h"

namespace attnmt::cli {

// A flag of a decode-time key: its name is the key's last part ("decode.beam_size" -> --beam-size),
// its help the key table's (config/loader.h), with `extra` after it where a command says more.
struct DecodeFlag {
  const char* key;              // "decode.beam_size": a key of scope load or call
  const char* extra = nullptr;  // "a request may ask for another"
};

// Markdown (`code`, [text](link)) as a terminal shows it: the code's text, the link's text.
inline std::string plain_text(const std::string& markdown) {
  std::string out;
  for (size_t i = 0; i < markdown.size(); ++i) {
    const size_t close = markdown[i] == '[' ? markdown.find("](", i) : std::string::npos;
    const size_t end = close == std::string::npos ? close : markdown.find(')', close);
    if (end != std::string::npos) {
      out += markdown.substr(i + 1, close - i - 1);
      i = end;
    } else if (markdown.compare(i, 2, "**") == 0) {
      ++i;  // bold
    } else if (markdown[i] != '`') {
      out += markdown[i];
    }
  }
  return out;
}

inline std::string flag_name(const std::string& key) {
  std::string name = "--" + key.substr(key.rfind('.') + 1);
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

// Adds `--config FILE`, `--set key=value` (repeatable) and the given flags to `cmd`. The settings
// are the file's keys in file order, then --set's in command-line order, then the flags in the
// order given (so a flag wins over --set, and --set over the file).
inline std::shared_ptr<std::vector<std::string>> add_decode_flags(CLI::App* cmd, const std::vector<DecodeFlag>& flags) {
  auto sets = std::make_shared<std::vector<std::string>>();
  auto given = std::make_shared<std::vector<std::string>>();
  auto file = std::make_shared<std::string>();
  const std::string keys = describe_keys(keys_that_may_change(KeyScope::load));
  cmd->add_option("--config", *file,
                  "A YAML file of decode-time keys (decode:, threads, ...), applied before --set and the flags");
  cmd->add_option("--set", *given,
                  "Set a decode-time config key of the model: --set decode.beam_size=10 (repeatable; " + keys + ")");
  for (const auto& f : flags) {
    const std::string key = f.key;
    const KeyInfo* info = find_key_info(key);
    if (!info || info->scope < KeyScope::load) throw std::logic_error("not a decode-time key: " + key);
    std::string help = plain_text(info->help);
    if (f.extra) help += std::string(" (") + f.extra + ")";
    if (!info->allowed.empty()) help += "; " + plain_text(info->allowed);
    if (info->type == "bool") help += "; true | false";
    cmd->add_option_function<std::string>(
        flag_name(key), [sets, key](const std::string& value) { sets->push_back(key + "=" + value); },
        help + " (= --set " + key + "=...)");
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
