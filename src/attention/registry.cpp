#include "attention/registry.h"

#include <functional>
#include <utility>

#include "attention/area.h"
#include "attention/chunkwise.h"
#include "attention/forced_forward.h"
#include "attention/forward.h"
#include "attention/global.h"
#include "attention/hard.h"
#include "attention/key_value.h"
#include "attention/local_m.h"
#include "attention/local_p.h"
#include "attention/luong_location.h"
#include "attention/milk.h"
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

struct Entry {
  std::string name;
  Factory factory;
  AttentionTraits traits;
};

// The coverage vector enters the additive (concat) score of the global variants alone.
Entry global_entry(std::string name, ScoreKind kind) {
  AttentionTraits traits;
  traits.global_score = kind;
  traits.coverage = kind == ScoreKind::kConcat;
  return {std::move(name), global(kind), traits};
}

AttentionTraits with(bool AttentionTraits::*a, bool AttentionTraits::*b = nullptr,
                     bool AttentionTraits::*c = nullptr) {
  AttentionTraits traits;
  traits.*a = true;
  if (b) traits.*b = true;
  if (c) traits.*c = true;
  return traits;
}

// Adding a variant = one file + one line here (with what it supports: AttentionTraits).
const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      global_entry("bahdanau", ScoreKind::kConcat),
      global_entry("luong_dot", ScoreKind::kDot),
      global_entry("luong_general", ScoreKind::kGeneral),
      global_entry("luong_concat", ScoreKind::kConcat),
      {"luong_location", make<LuongLocationAttention>(), {}},
      {"local_m", make<LocalMAttention>(), {}},
      {"local_p", make<LocalPAttention>(), {}},
      {"forced_forward", make<ForcedForwardAttention>(), {}},
      {"monotonic", make<MonotonicAttention>(), with(&AttentionTraits::hard_decode, &AttentionTraits::streams)},
      global_entry("scaled_dot", ScoreKind::kScaledDot),
      {"multi_head", make<MultiHeadAttention>(), with(&AttentionTraits::dropout)},
      {"key_value", make<KeyValueAttention>(), {}},
      {"static", make<StaticAttention>(), {}},
      {"area", make<AreaAttention>(), {}},
      {"hard", make<HardAttention>(), {}},
      {"forward", make<ForwardAttention>(), {}},
      {"chunkwise", make<ChunkwiseAttention>(), with(&AttentionTraits::hard_decode, &AttentionTraits::streams)},
      {"milk", make<MilkAttention>(),
       with(&AttentionTraits::hard_decode, &AttentionTraits::streams, &AttentionTraits::latency)},
  };
  return entries;
}

const Entry& entry(const std::string& name) {
  for (const auto& e : registry()) {
    if (e.name == name) return e;
  }
  std::string valid;
  for (const auto& n : attention_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw InputError("unknown model.attention.type '" + name + "' (valid: " + valid + ")");
}

}  // namespace

std::vector<std::string> attention_names() {
  std::vector<std::string> names;
  for (const auto& e : registry()) names.push_back(e.name);
  return names;
}

void check_attention_name(const std::string& name) { entry(name); }

const AttentionTraits& attention_traits(const std::string& name) { return entry(name).traits; }

std::optional<ScoreKind> global_score_kind(const std::string& name) { return entry(name).traits.global_score; }

std::string attention_names_with(bool AttentionTraits::*trait) {
  std::string names;
  for (const auto& e : registry()) {
    if (e.traits.*trait) names += (names.empty() ? "" : ", ") + e.name;
  }
  return names;
}

namespace {

// "the variant that uses it: a" / "the variants that use it: a, b", for a refused key.
std::string users_of(bool AttentionTraits::*trait) {
  const auto names = attention_names_with(trait);
  return (names.find(',') == std::string::npos ? "the variant that uses it: " : "the variants that use it: ") + names;
}

}  // namespace

bool attention_streams(const AttentionConfig& config) {
  return attention_traits(config.type).streams && config.hard_decode;
}

std::shared_ptr<Attention> make_attention(const AttentionConfig& config, int64_t query_size,
                                          int64_t memory_size) {
  const auto& e = entry(config.type);
  if (config.coverage && !e.traits.coverage) {
    throw InputError("model.attention.coverage: '" + config.type + "' has no coverage term (" +
                     users_of(&AttentionTraits::coverage) + ")");
  }
  return e.factory(config, query_size, memory_size);
}

void check_attention(const ModelConfig& model) {
  const auto& a = model.attention;
  if (a.coverage_loss > 0 && !a.coverage) {
    throw InputError("model.attention.coverage_loss (" + std::to_string(a.coverage_loss) +
                     ") needs model.attention.coverage: true (it penalises the coverage vector)");
  }
  // Elsewhere the key would change nothing.
  if (a.latency_loss > 0 && !attention_traits(a.type).latency) {
    throw InputError("model.attention.latency_loss: '" + a.type + "' has no monotonic head whose latency it trains (" +
                     users_of(&AttentionTraits::latency) + ")");
  }
  if (a.dropout > 0 && !attention_traits(a.type).dropout) {
    throw InputError("model.attention.dropout: '" + a.type + "' has no heads' weights to drop (" +
                     users_of(&AttentionTraits::dropout) + ")");
  }
  const int64_t memory_size = model.encoder.hidden_size * (model.encoder.bidirectional ? 2 : 1);
  make_attention(model.attention, model.decoder.hidden_size, memory_size);
}

}  // namespace attnmt
