#include "api/session.h"

#include <spdlog/spdlog.h>

#include <map>
#include <mutex>

#include "config/loader.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/translator.h"
#include "io/model_file.h"
#include "runtime/compute.h"
#include "util/error.h"
#include "util/logging.h"

namespace attnmt {

struct DecodeSession::State {
  LoadedModel loaded;
  std::unique_ptr<Seq2SeqStepModel> step;
  TranslateOptions defaults;
  std::mutex mutex;                                // guards `options`
  std::map<std::string, TranslateOptions> options;  // per distinct set of call settings

  TranslateOptions options_for(const std::vector<std::string>& sets) {
    if (sets.empty()) return defaults;
    std::string signature;
    for (const auto& s : sets) signature += s + '\n';
    std::lock_guard<std::mutex> lock(mutex);
    auto found = options.find(signature);
    if (found != options.end()) return found->second;
    // The program's parsing, validation and message (`translate --set` names the model's stored config).
    const Config config = parse_config(config_to_yaml(loaded.config), loaded.checkpoint + " (stored config)", sets);
    return options.emplace(signature, translate_options(config.decode)).first->second;
  }
};

DecodeSession::DecodeSession(const std::string& model, const std::string& checkpoint, const std::string& device,
                             const std::vector<std::string>& settings)
    : state_(std::make_unique<State>()) {
  // The program's logger (stderr), quieter: a library says only what went wrong, warnings
  // included (a line cut at its maximum length, an unmet constraint).
  static std::once_flag logging;
  std::call_once(logging, [] {
    setup_logging(false);
    spdlog::default_logger()->set_level(spdlog::level::warn);
  });
  auto& s = *state_;
  s.loaded = load_model(model, checkpoint, device, settings);
  configure_compute(s.loaded.config.threads, s.loaded.config.gemm);
  s.step = make_step_model(s.loaded.model, s.loaded.config.decode, s.loaded.lexicon);
  s.defaults = translate_options(s.loaded.config.decode);
}

DecodeSession::~DecodeSession() = default;

const std::string& DecodeSession::model_path() const { return state_->loaded.checkpoint; }

std::vector<std::vector<Translation>> DecodeSession::translate(const std::vector<std::string>& lines,
                                                               const std::vector<std::string>& call_settings,
                                                               bool return_attention,
                                                               const std::vector<std::string>& prefixes,
                                                               const std::vector<std::vector<std::string>>& constraints) const {
  TranslateOptions call = state_->options_for(call_settings);
  call.search.return_attention = return_attention;
  call.return_pieces = true;
  // What `translate --prefix / --constraints` refuse, in their words.
  const auto& dc = state_->loaded.config.decode;
  const std::pair<const char*, size_t> given[] = {{"prefixes", prefixes.size()}, {"constraints", constraints.size()}};
  for (const auto& [name, size] : given) {
    if (size == 0) continue;
    if (size != lines.size()) {
      throw InputError(std::string(name) + ": " + std::to_string(size) + " entries, the input has " +
                       std::to_string(lines.size()));
    }
    if (dc.shortlist) throw InputError(std::string(name) + ": not with decode.shortlist (its tokens may be outside the shortlist)");
    if (dc.search_rules != SearchRules::attnmt) {
      throw InputError(std::string(name) + ": not with decode.search_rules " + name_string(dc.search_rules) +
                       " (attnmt's rules only)");
    }
  }
  LineGuides guides;
  guides.prefixes = prefixes;
  guides.constraints = constraints;
  return translate_lines(*state_->step, state_->loaded.tokenizers, lines, call, guides);
}

}  // namespace attnmt
