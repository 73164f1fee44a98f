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
  std::optional<ScoreKind> global_score;  // global variants: their score (bench's FLOP counts)
};

Entry global_entry(std::string name, ScoreKind kind) { return {std::move(name), global(kind), kind}; }

// Adding a variant = one file + one line here.
const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      global_entry("bahdanau", ScoreKind::kConcat),
      global_entry("luong_dot", ScoreKind::kDot),
      global_entry("luong_general", ScoreKind::kGeneral),
      global_entry("luong_concat", ScoreKind::kConcat),
      {"luong_location", make<LuongLocationAttention>(), std::nullopt},
      {"local_m", make<LocalMAttention>(), std::nullopt},
      {"local_p", make<LocalPAttention>(), std::nullopt},
      {"forced_forward", make<ForcedForwardAttention>(), std::nullopt},
      {"monotonic", make<MonotonicAttention>(), std::nullopt},
      global_entry("scaled_dot", ScoreKind::kScaledDot),
      {"multi_head", make<MultiHeadAttention>(), std::nullopt},
      {"key_value", make<KeyValueAttention>(), std::nullopt},
      {"static", make<StaticAttention>(), std::nullopt},
      {"area", make<AreaAttention>(), std::nullopt},
      {"hard", make<HardAttention>(), std::nullopt},
      {"forward", make<ForwardAttention>(), std::nullopt},
      {"chunkwise", make<ChunkwiseAttention>(), std::nullopt},
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

std::optional<ScoreKind> global_score_kind(const std::string& name) { return entry(name).global_score; }

std::shared_ptr<Attention> make_attention(const AttentionConfig& config, int64_t query_size,
                                          int64_t memory_size) {
  return entry(config.type).factory(config, query_size, memory_size);
}

void check_attention(const ModelConfig& model) {
  const auto& a = model.attention;
  if (a.coverage_loss > 0 && !a.coverage) {
    throw InputError("model.attention.coverage_loss (" + std::to_string(a.coverage_loss) +
                     ") needs model.attention.coverage: true (it penalises the coverage vector)");
  }
  // The coverage vector enters the additive (concat) score of the global variants alone.
  if (a.coverage && entry(a.type).global_score != ScoreKind::kConcat) {
    std::string with;
    for (const auto& e : registry()) {
      if (e.global_score == ScoreKind::kConcat) with += (with.empty() ? "" : ", ") + e.name;
    }
    throw InputError("model.attention.coverage: '" + a.type + "' has no coverage term (the variants that use it: " +
                     with + ")");
  }
  // The one variant whose weights are dropped; elsewhere the key would change nothing.
  if (a.dropout > 0 && a.type != "multi_head") {
    throw InputError("model.attention.dropout: '" + a.type +
                     "' has no heads' weights to drop (the variant that uses it: multi_head)");
  }
  const int64_t memory_size = model.encoder.hidden_size * (model.encoder.bidirectional ? 2 : 1);
  make_attention(model.attention, model.decoder.hidden_size, memory_size);
}

}  // namespace attnmt
