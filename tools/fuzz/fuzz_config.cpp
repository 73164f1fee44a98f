// libFuzzer target: the YAML experiment-config loader (parse + validate + overrides) on arbitrary
// bytes. Bad input must be an InputError (one clear line for the user); any other exception
// escapes to libFuzzer and counts as a crash, like a sanitizer report or a signal.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/loader.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The first line, if it looks like one, is also tried as a --set override.
  const auto nl = text.find('\n');
  std::vector<std::string> overrides;
  if (nl != std::string::npos && text.find('=') < nl) overrides.push_back(text.substr(0, nl));
  try {
    attnmt::Config c = attnmt::parse_config(text, "fuzz.yaml", overrides);
    attnmt::parse_config(attnmt::config_to_yaml(c), "round-trip");  // what we write, we read
  } catch (const attnmt::InputError&) {
  }
  return 0;
}
