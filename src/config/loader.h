// Reading, validating and writing the experiment configuration (see config.h).
// Precedence: struct defaults < the YAML file's `base:` chain (a config may start with
// `base: other.yaml`, relative to its own file; the base's keys apply first) < the YAML file <
// --set overrides. Unknown keys are rejected with the
// closest valid key suggested. Every error is an InputError whose message names the file, the
// key and, for YAML syntax errors, the line and column.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace attnmt {

// Loads a YAML file and applies "key.path=value" overrides (value parsed as YAML scalar/flow).
// Relative data paths are resolved against the current working directory (as users expect
// when running from the project root). Validates before returning.
Config load_config_file(const std::string& path, const std::vector<std::string>& overrides = {});

// Same from YAML text (also validated); `source_name` names it in error messages.
Config parse_config(const std::string& yaml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides = {});

// Throws InputError naming the key of the first invalid value
// ("model.encoder.dropout must be in [0, 1), got 1.5"). Does not require the data paths.
// (parse_config and load_config_file call it, prefixing the message with "'<source>': ".)
void validate_config(const Config& config);

// What `train` needs on top of validate_config: train.save_dir, data.train.src/tgt and
// data.valid.src/tgt set ("'<source_name>': missing required key 'data.train.src'"), data.test
// both or neither, and every data file set readable
// ("data.train.src: cannot read 'path': No such file or directory").
void check_training_inputs(const Config& config, const std::string& source_name);

// The fully resolved config as YAML (every key, defaults included); parse_config of the result
// gives back an equal Config. only_changed: only the keys whose values differ from the defaults
// (parse_config of that gives back an equal Config too).
std::string config_to_yaml(const Config& config, bool only_changed = false);

// The config's values of the keys that start with `prefix`, as "key=value" overrides (values as
// YAML scalars): given to parse_config, they set those keys to these values.
std::vector<std::string> config_settings(const Config& config, const std::string& prefix);

// A YAML file of some keys (nested maps, as in a config) as "key=value" settings in file order,
// for the commands that apply settings to a stored config (translate --config decode.yaml).
// Unknown keys are refused as a config's are, naming the file and line.
std::vector<std::string> settings_file(const std::string& path);

// All valid dotted keys (for help and suggestions).
std::vector<std::string> config_keys();

// When a key may still change; each scope includes the earlier ones.
enum class KeyScope {
  train,  // fixed once a model is trained: it is the model (data, tokenizer, model, train, distributed)
  load,   // also when a trained model is loaded to decode (translate/serve/plot/align/bench --set and
          // --config, the Python module's Translator(..., settings))
  call,   // also per call: the Python module's translate(..., beam_size=...)
};

// One key as config/key_table.cpp's table describes it; docs/config.md's tables show the same
// (tests/base/test_config.cpp compares them).
struct KeyInfo {
  std::string key;            // "decode.beam_size"
  std::string type;           // int | uint64 | float | bool | string
  std::string default_value;  // as a config writes it: "5", "0.6", "true", "fp32" ("" for an empty string)
  std::string allowed;        // markdown: "in [0, 1)", "`adam`, `sgd`", rules with other keys after "; "
  KeyScope scope;
  std::string help;           // one line, markdown
};

// Every key, in the order of config.h.
const std::vector<KeyInfo>& config_key_table();
const KeyInfo* find_key_info(std::string_view key);  // nullptr: no such key

// Whether `key` may change at `at`: a key's scope, or for a section (`decode` in
// --set 'decode={beam_size: 3}') every key in it. False for an unknown name.
bool may_change(std::string_view key, KeyScope at);
bool is_key_or_section(std::string_view key);
std::vector<std::string> keys_that_may_change(KeyScope at);

// Keys for a message: a section whose every key is listed as "section.*", first; then the rest,
// "decode.*, threads, gemm, device and model.attention.hard_decode".
std::string describe_keys(const std::vector<std::string>& keys);

}  // namespace attnmt
