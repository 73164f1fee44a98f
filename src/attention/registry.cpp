#include "attention/registry.h"

#include <functional>
#include <utility>

#include "attention/area.h"
#include "attention/forced_forward.h"
#include "attention/forward.h"
#include "attention/global.h"
#include "attention/hard.h"
#include "attention/key_value.h"
#include "attention/local_m.h"
#include "attention/local_p.h"
#include "attention/luong_location.h"
#include "attention/monotonic.h"
#include "attention/multi_head.h"
#include "attention/static_attention.h"
#include "util/error.h"

namespace attnmt {

namespace {

using Factory = std::function<std::shared_ptr<Attention>(const AttentionConfig&, int64_t query_size,
                                                         int64_t memory_size)>;

template <class T>
Factory make() {
  return [](const AttentionConfig& c, int64_t q, int64_t m) { return std::make_shared<T>(c, q, m); };
}

Factory global(ScoreKind kind) {
  return [kind](const AttentionConfig& c, int64_t q, int64_t m) {
    return std::make_shared<GlobalAttention>(kind, c, q, m);
  };
}

// Adding a variant = one file + one line here.
const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> entries = {
      {"bahdanau", global(ScoreKind::kConcat)},
      {"luong_dot", global(ScoreKind::kDot)},
      {"luong_general", global(ScoreKind::kGeneral)},
      {"luong_concat", global(ScoreKind::kConcat)},
      {"luong_location", make<LuongLocationAttention>()},
      {"local_m", make<LocalMAttention>()},
      {"local_p", make<LocalPAttention>()},
      {"forced_forward", make<ForcedForwardAttention>()},
      {"monotonic", make<MonotonicAttention>()},
      {"scaled_dot", global(ScoreKind::kScaledDot)},
      {"multi_head", make<MultiHeadAttention>()},
      {"key_value", make<KeyValueAttention>()},
      {"static", make<StaticAttention>()},
      {"area", make<AreaAttention>()},
      {"hard", make<HardAttention>()},
      {"forward", make<ForwardAttention>()},
  };
  return entries;
}

}  // namespace

std::vector<std::string> attention_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

void check_attention_name(const std::string& name) {
  for (const auto& [known, factory] : registry()) {
    if (known == name) return;
  }
  std::string valid;
  for (const auto& n : attention_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw InputError("unknown model.attention.type '" + name + "' (valid: " + valid + ")");
}

std::shared_ptr<Attention> make_attention(const AttentionConfig& config, int64_t query_size,
                                          int64_t memory_size) {
  check_attention_name(config.type);
  for (const auto& [name, factory] : registry()) {
    if (name == config.type) return factory(config, query_size, memory_size);
  }
  return nullptr;  // unreachable: check_attention_name threw
}

void check_attention(const ModelConfig& model) {
  const int64_t memory_size = model.encoder.hidden_size * (model.encoder.bidirectional ? 2 : 1);
  make_attention(model.attention, model.decoder.hidden_size, memory_size);
}

}  // namespace attnmt
