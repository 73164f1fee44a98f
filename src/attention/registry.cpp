#include "attention/registry.h"

#include <functional>
#include <utility>

#include "attention/bahdanau.h"
#include "attention/luong_dot.h"
#include "attention/luong_general.h"
#include "util/error.h"

namespace attnmt {

namespace {

using Factory = std::function<std::shared_ptr<Attention>(const AttentionConfig&, int64_t query_size,
                                                         int64_t memory_size)>;

int64_t additive_size(const AttentionConfig& config, int64_t query_size) {
  return config.hidden_size > 0 ? config.hidden_size : query_size;
}

// Adding a variant = one file + one line here.
const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> entries = {
      {"bahdanau",
       [](const AttentionConfig& c, int64_t q, int64_t m) {
         return std::make_shared<AdditiveAttention>(q, m, additive_size(c, q));
       }},
      {"luong_dot",
       [](const AttentionConfig&, int64_t q, int64_t m) {
         return std::make_shared<LuongDotAttention>(q, m);
       }},
      {"luong_general",
       [](const AttentionConfig&, int64_t q, int64_t m) {
         return std::make_shared<LuongGeneralAttention>(q, m);
       }},
      {"luong_concat",
       [](const AttentionConfig& c, int64_t q, int64_t m) {
         return std::make_shared<AdditiveAttention>(q, m, additive_size(c, q));
       }},
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

}  // namespace attnmt
