// The one place that knows every attention variant by its YAML name (model.attention.type).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "attention/score.h"
#include "config/config.h"

namespace attnmt {

// InputError listing the valid names if config.type is unknown.
std::shared_ptr<Attention> make_attention(const AttentionConfig& config, int64_t query_size,
                                          int64_t memory_size);

// The score of a global variant (softmax over every source position, one score per position), for
// bench's arithmetic (bench/flops.h); nullopt for the variants whose FLOPs are not modelled.
std::optional<ScoreKind> global_score_kind(const std::string& name);

// Every registered name, in registration order.
std::vector<std::string> attention_names();

// InputError "unknown model.attention.type 'x' (valid: a, b, ...)" unless the name is registered.
void check_attention_name(const std::string& name);

// Builds, once, the attention a model of this config would get (decoder hidden size as the query,
// encoder output as the memory), so that a bad combination (unknown name, a dot score on unequal
// sizes, heads that do not divide) fails before any data is read; and refuses the keys the variant
// would ignore (coverage where it has no coverage term, coverage_loss without coverage). Training
// calls it; a model already trained with such keys still loads.
void check_attention(const ModelConfig& model);

}  // namespace attnmt
