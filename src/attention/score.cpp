#include "attention/score.h"

#include <cmath>
#include <stdexcept>

#include "attention/inference_products.h"
#include "util/error.h"

namespace attnmt {

ScoreKind parse_score_kind(const std::string& name, const std::string& key) {
  if (name == "dot") return ScoreKind::kDot;
  if (name == "scaled_dot") return ScoreKind::kScaledDot;
  if (name == "general") return ScoreKind::kGeneral;
  if (name == "concat") return ScoreKind::kConcat;
  throw InputError(key + ": unknown score '" + name + "' (valid: dot, scaled_dot, general, concat)");
}

int64_t additive_hidden_size(int64_t configured, int64_t query_size) {
  return configured > 0 ? configured : query_size;
}

ScoreFunction::ScoreFunction(torch::nn::Module& owner, ScoreKind kind, int64_t query_size,
                             int64_t memory_size, int64_t hidden_size, bool coverage,
                             const std::string& variant)
    : kind_(kind) {
  // Which variants have the term is the registry's rule (attention/registry.cpp), checked on the
  // config before any variant is built.
  if (coverage && kind != ScoreKind::kConcat) throw std::logic_error("ScoreFunction: coverage without the concat score");
  switch (kind) {
    case ScoreKind::kDot:
    case ScoreKind::kScaledDot:
      if (query_size != memory_size) {
        throw InputError("model.attention.type: " + variant + " needs the decoder hidden size (" +
                         std::to_string(query_size) + ") to equal the encoder output size (" +
                         std::to_string(memory_size) + "); use a general score or change the sizes");
      }
      if (kind == ScoreKind::kScaledDot) scale_ = 1.0 / std::sqrt(static_cast<double>(query_size));
      break;
    case ScoreKind::kGeneral:
      w_a_ = owner.register_module(
          "w_a", torch::nn::Linear(torch::nn::LinearOptions(memory_size, query_size).bias(false)));
      break;
    case ScoreKind::kConcat: {
      w_a_ = owner.register_module("w_a", torch::nn::Linear(query_size, hidden_size));
      u_a_ = owner.register_module(
          "u_a", torch::nn::Linear(torch::nn::LinearOptions(memory_size, hidden_size).bias(false)));
      const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
      v_a_ = owner.register_parameter("v_a", torch::empty({hidden_size}).uniform_(-bound, bound));
      if (coverage) {
        w_c_ = owner.register_parameter("w_c", torch::empty({hidden_size}).uniform_(-bound, bound));
      }
      break;
    }
  }
}

torch::Tensor ScoreFunction::keys(const torch::Tensor& memory) {
  switch (kind_) {
    case ScoreKind::kGeneral:
      return w_a_(memory);  // [B, S, Dq]: W_a h_i
    case ScoreKind::kConcat:
      return u_a_(memory);  // [B, S, A]: U_a h_i
    default:
      return memory;
  }
}

torch::Tensor ScoreFunction::operator()(const torch::Tensor& query, const torch::Tensor& keys,
                                        const torch::Tensor& coverage, int64_t group, const torch::Tensor& mask) {
  if (kind_ != ScoreKind::kConcat) {
    auto e = dot_scores(query, keys, group, mask);
    return scale_ == 1.0 ? e : e * scale_;
  }
  auto wq = w_a_(query);                                           // [N, A]
  auto pre = group == 1 ? keys + wq.unsqueeze(1)                   // [N, S, A]
                        : (keys.unsqueeze(1) + wq.view({-1, group, 1, wq.size(1)})).flatten(0, 1);
  if (w_c_.defined()) pre = pre + coverage.unsqueeze(2) * w_c_;    // + w_c cov_{t,i}
  return torch::matmul(torch::tanh(pre), v_a_);                    // [B, S]
}

ScoredAttention::ScoredAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size,
                                 int64_t key_source_size)
    : Attention(query_size, memory_size) {
  score_ = ScoreFunction(*this, parse_score_kind(config.score, "model.attention.score"), query_size,
                         key_source_size > 0 ? key_source_size : memory_size,
                         additive_hidden_size(config.hidden_size, query_size), /*coverage=*/false, config.type);
}

ScoredAttention::ScoredAttention(ScoreKind kind, const AttentionConfig& config, int64_t query_size,
                                 int64_t memory_size)
    : Attention(query_size, memory_size) {
  score_ = ScoreFunction(*this, kind, query_size, memory_size, additive_hidden_size(config.hidden_size, query_size),
                         config.coverage, config.type);
}

AttentionMemory ScoredAttention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  auto m = Attention::prepare(memory, mask);
  m.keys = score_.keys(key_source(memory));  // once per batch
  return m;
}

torch::Tensor dot_scores(const torch::Tensor& query, const torch::Tensor& keys, int64_t group,
                         const torch::Tensor& mask) {
  if (inference_products_apply(query, keys)) return inference_dot_scores(query, keys, group, mask);
  // [B, S, D] * [B, 1, D] summed over D. Not bmm: LibTorch's CPU bmm (and its backward) loops
  // over the batch with one small GEMM per sentence, several times slower at these sizes.
  if (group == 1) return (keys * query.unsqueeze(1)).sum(2);
  // [B, 1, S, D] * [B, G, 1, D] summed over D -> [B * G, S]
  return (keys.unsqueeze(1) * query.view({-1, group, 1, query.size(1)})).sum(3).flatten(0, 1);
}

}  // namespace attnmt
