// The one place that knows every attention variant by its YAML name (model.attention.type).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "config/config.h"

namespace attnmt {

// InputError listing the valid names if config.type is unknown.
std::shared_ptr<Attention> make_attention(const AttentionConfig& config, int64_t query_size,
                                          int64_t memory_size);

// Every registered name, in registration order.
std::vector<std::string> attention_names();

// InputError "unknown model.attention.type 'x' (valid: a, b, ...)" unless the name is registered.
void check_attention_name(const std::string& name);

}  // namespace attnmt
