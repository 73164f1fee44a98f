// The content-based score functions e_{t,i} = score(q_t, h_i) of docs/attention.md, shared
// by every variant that takes its score as a choice (global, local-m/p, forced-forward):
//   dot         q^T h_i                                   (Luong et al., 2015, 3.1)
//   scaled_dot  q^T h_i / sqrt(d)                         (Vaswani et al., 2017, 3.2.1)
//   general     q^T W_a h_i                               (Luong et al., 2015, 3.1)
//   concat      v_a^T tanh(W_a q + U_a h_i [+ w_c cov_i]) (Bahdanau et al., 2015, A.1.2;
//               the coverage term is See et al., 2017, eq. 11)
// The part that depends on h_i alone (W_a h_i, U_a h_i) is computed once per batch by keys().
// Parameters are registered on the owning attention module under the formulas' names (w_a, u_a,
// v_a, w_c), so a checkpoint's parameter names say which formula they belong to.
#pragma once
#include <torch/torch.h>

#include <string>

#include "attention/attention.h"
#include "config/config.h"

namespace attnmt {

enum class ScoreKind { kDot, kScaledDot, kGeneral, kConcat };

// "dot" | "scaled_dot" | "general" | "concat"; InputError naming `key` otherwise.
ScoreKind parse_score_kind(const std::string& name, const std::string& key);

class ScoreFunction {
 public:
  ScoreFunction() = default;
  // hidden_size: the tanh layer of concat (ignored otherwise). coverage: add the w_c term (concat
  // only). variant: the attention's name, for error messages (dot needs query_size == memory_size).
  ScoreFunction(torch::nn::Module& owner, ScoreKind kind, int64_t query_size, int64_t memory_size,
                int64_t hidden_size, bool coverage, const std::string& variant);

  // memory [B, S, Dm] -> keys [B, S, K]; once per batch.
  torch::Tensor keys(const torch::Tensor& memory);
  // query [N, Dq], keys [N / group, S, K] (row n reads keys row n / group: AttentionMemory::group),
  // coverage [N, S] (only with coverage) -> e_t [N, S], unmasked. mask (optional, the memory's
  // [N / group, S]): dot scores after a row's last attended position may be left 0 (to be masked).
  torch::Tensor operator()(const torch::Tensor& query, const torch::Tensor& keys,
                           const torch::Tensor& coverage = {}, int64_t group = 1, const torch::Tensor& mask = {});

 private:
  ScoreKind kind_ = ScoreKind::kDot;
  double scale_ = 1.0;
  torch::nn::Linear w_a_{nullptr};  // general: Dm -> Dq (no bias); concat: Dq -> A (with bias)
  torch::nn::Linear u_a_{nullptr};  // concat: Dm -> A, no bias
  torch::Tensor v_a_;               // concat: [A]
  torch::Tensor w_c_;               // concat with coverage: [A]
};

// The base of the variants built on a score function: owns it and projects the keys once per
// batch in prepare() (keys from the encoder states, or from what key_source() picks of them).
class ScoredAttention : public Attention {
 public:
  AttentionMemory prepare(const torch::Tensor& memory, const torch::Tensor& mask) override;

 protected:
  // The score model.attention.score names (local_m, local_p, forced_forward, area, hard, ...).
  ScoredAttention(const AttentionConfig& config, int64_t query_size, int64_t memory_size,
                  int64_t key_source_size = 0);
  // A fixed score (the global variants), with or without the coverage term.
  ScoredAttention(ScoreKind kind, const AttentionConfig& config, int64_t query_size, int64_t memory_size);
  // What the keys are computed from: the encoder states [B, S, Dm] unless a variant says otherwise.
  virtual torch::Tensor key_source(const torch::Tensor& memory) { return memory; }

  ScoreFunction score_;
};

// q_t against keys [N / group, S, D] -> [N, S]: sum_d keys[n / group, i, d] * query[n, d]. When
// decoding on the CPU, a loop (inference_products.h), which with the memory's mask leaves the
// scores after a row's last attended position 0, for the caller to mask.
torch::Tensor dot_scores(const torch::Tensor& query, const torch::Tensor& keys, int64_t group = 1,
                         const torch::Tensor& mask = {});

// Size A of an additive (concat) tanh layer: model.attention.hidden_size, or the query size.
int64_t additive_hidden_size(int64_t configured, int64_t query_size);

}  // namespace attnmt
