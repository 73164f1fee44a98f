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

// What a variant does beyond its formula: the keys it reads and the decodings it allows. The CLI,
// the server, the config checks and docs/attention.md's table ask this, not the variant's name.
struct AttentionTraits {
  // Global variants (a softmax over every source position): their score, for bench's arithmetic
  // (bench/flops.h); nullopt for the variants whose FLOPs are not modelled.
  std::optional<ScoreKind> global_score;
  bool coverage = false;     // the additive score's coverage term (model.attention.coverage)
  bool dropout = false;      // weights that model.attention.dropout drops (its heads')
  bool hard_decode = false;  // decodes with a hard alignment (model.attention.hard_decode)
  // With hard_decode, it never reads a state right of where it stops: it can decode a stream
  // (decoding/streaming.h: `translate --streaming`, serve's POST /v1/stream).
  bool streams = false;
  // Its monotonic head's expected latency can be trained down (model.attention.latency_loss).
  bool latency = false;
};

// InputError listing the valid names if config.type is unknown, or if config.coverage is set on a
// variant without a coverage term.
std::shared_ptr<Attention> make_attention(const AttentionConfig& config, int64_t query_size,
                                          int64_t memory_size);

// InputError listing the valid names if the name is unknown.
const AttentionTraits& attention_traits(const std::string& name);

// The registered names whose traits have `trait` set, "a, b, c" (for messages and docs).
std::string attention_names_with(bool AttentionTraits::*trait);

// Whether streaming decoding can run a model of this attention: a variant that streams, decoding
// hard (model.attention.hard_decode).
bool attention_streams(const AttentionConfig& config);

// attention_traits(name).global_score.
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
