// What the public Translator (include/attnmt/translator.h, translator.cpp) runs on: a model loaded
// for decoding and translate_lines, as `attnmt translate` runs them, in the library's own types.
// The public types are named apart from the library's (TranslationHypothesis, not search_types.h's
// Hypothesis): the same name twice in namespace attnmt would be two definitions of one type, which
// the linker silently merges (their std::vector members among them).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "decoding/translation.h"

namespace attnmt {

class DecodeSession {
 public:
  // load_model's arguments (io/model_file.h); `settings` as `translate --set` takes them.
  DecodeSession(const std::string& model, const std::string& checkpoint, const std::string& device,
                const std::vector<std::string>& settings);
  ~DecodeSession();

  // translate_lines (decoding/translator.h) with the model's decode settings, `call_settings`
  // ("decode.key=value", checked by the config loader as `--set` is) applied; prefixes and
  // constraints each empty or one per line. Safe to call from several threads at once.
  std::vector<std::vector<Translation>> translate(const std::vector<std::string>& lines,
                                                  const std::vector<std::string>& call_settings, bool return_attention,
                                                  const std::vector<std::string>& prefixes,
                                                  const std::vector<std::vector<std::string>>& constraints) const;

  const std::string& model_path() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace attnmt
