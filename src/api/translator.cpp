// The public attnmt::Translator (include/attnmt/translator.h) over DecodeSession (session.h):
// its options as the program's "key=value" settings, and its results as the public types.
#include <attnmt/translator.h>

#include <functional>
#include <map>
#include <new>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "api/session.h"
#include "config/loader.h"

namespace attnmt {

namespace {

// A DecodeOptions field as the "decode.<name>=value" setting the config loader reads.
using FieldSetting = std::function<std::optional<std::string>(const DecodeOptions&)>;

template <typename T>
std::optional<std::string> as_setting(const std::optional<T>& value) {
  if (!value) return std::nullopt;
  if constexpr (std::is_same_v<T, bool>) {
    return *value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return *value;
  } else if constexpr (std::is_floating_point_v<T>) {
    std::ostringstream s;
    s.precision(17);  // the value itself, not a rounded one
    s << *value;
    return s.str();
  } else {
    return std::to_string(*value);
  }
}

struct Field {
  const char* type;  // the key table's type, checked against it below
  FieldSetting setting;
};

#define ATTNMT_API_FIELD(name, type) \
  {"decode." #name, {type, [](const DecodeOptions& o) { return as_setting(o.name); }}}

// DecodeOptions' fields, by key. The key table (config/key_table.cpp) is the list: fields() refuses
// to run while a per-call key has no field here or a field no longer is one, so that the struct
// cannot fall behind the program's keys unnoticed (tests/api run it).
const std::map<std::string, Field>& fields() {
  static const std::map<std::string, Field> table = [] {
    std::map<std::string, Field> f{
        ATTNMT_API_FIELD(beam_size, "int"),          ATTNMT_API_FIELD(n_best, "int"),
        ATTNMT_API_FIELD(length_penalty, "float"),   ATTNMT_API_FIELD(coverage_penalty, "float"),
        ATTNMT_API_FIELD(max_length_ratio, "float"), ATTNMT_API_FIELD(batch_size, "int"),
        ATTNMT_API_FIELD(min_length, "int"),         ATTNMT_API_FIELD(max_length, "int"),
        ATTNMT_API_FIELD(no_repeat_ngram_size, "int"), ATTNMT_API_FIELD(sampling, "bool"),
        ATTNMT_API_FIELD(temperature, "float"),      ATTNMT_API_FIELD(top_k, "int"),
        ATTNMT_API_FIELD(top_p, "float"),            ATTNMT_API_FIELD(epsilon, "float"),
        ATTNMT_API_FIELD(seed, "uint64"),            ATTNMT_API_FIELD(mbr, "string"),
        ATTNMT_API_FIELD(mbr_candidates, "int"),     ATTNMT_API_FIELD(search_rules, "string"),
        ATTNMT_API_FIELD(ban_unk, "bool"),           ATTNMT_API_FIELD(unk_penalty, "float"),
        ATTNMT_API_FIELD(word_penalty, "float"),
    };
    const auto keys = keys_that_may_change(KeyScope::call);
    for (const auto& key : keys) {
      const auto found = f.find(key);
      if (found == f.end()) throw std::logic_error("attnmt::DecodeOptions has no field for the per-call key " + key);
      if (find_key_info(key)->type != found->second.type) {
        throw std::logic_error("attnmt::DecodeOptions: " + key + " is a " + find_key_info(key)->type + " in the key table");
      }
    }
    if (f.size() != keys.size()) throw std::logic_error("attnmt::DecodeOptions has a field for a key that is not per-call");
    return f;
  }();
  return table;
}

#undef ATTNMT_API_FIELD

// Errors that are not attnmt's (LibTorch's, the standard library's) as attnmt::RuntimeError, so
// that a caller catches one type; their first line only, as the program prints them.
template <typename F>
auto api_call(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::logic_error&) {
    throw;  // a bug of attnmt's: not the caller's to handle
  } catch (const std::bad_alloc&) {
    throw RuntimeError("out of memory");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw RuntimeError(what.substr(0, what.find('\n')));
  }
}

}  // namespace

struct Translator::Impl {
  std::unique_ptr<DecodeSession> session;
};

Translator::Translator(const std::string& model, const TranslatorOptions& options) : impl_(std::make_unique<Impl>()) {
  api_call([&] {
    fields();
    std::vector<std::string> sets{"threads=" + std::to_string(options.threads)};
    if (!options.precision.empty()) sets.push_back("decode.precision=" + options.precision);
    for (const auto& [key, value] : options.settings) sets.push_back(key + "=" + value);
    impl_->session = std::make_unique<DecodeSession>(model, options.checkpoint, options.device, sets);
  });
}

Translator::~Translator() = default;
Translator::Translator(Translator&&) noexcept = default;
Translator& Translator::operator=(Translator&&) noexcept = default;

const std::string& Translator::model_path() const { return impl_->session->model_path(); }

std::vector<std::vector<TranslationHypothesis>> Translator::translate(const std::vector<std::string>& sentences,
                                                                      const DecodeOptions& options,
                                                                      const TranslationGuides& guides) const {
  return api_call([&] {
    std::vector<std::string> sets;
    for (const auto& [key, field] : fields()) {
      if (auto value = field.setting(options)) sets.push_back(key + "=" + *value);
    }
    auto results = impl_->session->translate(sentences, sets, options.return_attention, guides.prefixes, guides.constraints);
    std::vector<std::vector<TranslationHypothesis>> out;
    out.reserve(results.size());
    for (auto& nbest : results) {
      auto& hyps = out.emplace_back();
      for (auto& t : nbest) {
        TranslationHypothesis h;
        h.text = std::move(t.text);
        h.score = t.score;
        h.log_prob = t.log_prob;
        h.tokens = std::move(t.tgt_pieces);
        h.source_tokens = std::move(t.src_pieces);
        h.finished = h.tokens.empty() || h.tokens.back() == "</s>";  // an empty line: nothing to cut
        h.constraints_met = t.constraints_met;
        h.attention = std::move(t.attention);
        hyps.push_back(std::move(h));
      }
    }
    return out;
  });
}

}  // namespace attnmt
