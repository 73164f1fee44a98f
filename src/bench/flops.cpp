#include "bench/flops.h"

#include <algorithm>

#include "attention/registry.h"
#include "util/error.h"

namespace attnmt {

namespace {

int64_t gate_count(RnnType rnn) { return rnn == RnnType::lstm ? 4 : 3; }

}  // namespace

ModelArithmetic model_arithmetic(const ModelConfig& model, int64_t target_vocab, int64_t batch, double src_len,
                                 double tgt_len) {
  const auto& enc = model.encoder;
  const auto& dec = model.decoder;
  const auto& att = model.attention;
  const int64_t B = batch, E = model.embedding_size;
  const int64_t He = enc.hidden_size, Hd = dec.hidden_size;
  const int64_t dirs = enc.bidirectional ? 2 : 1;
  const int64_t M = He * dirs;  // encoder output (attention memory) size
  const int64_t Ge = gate_count(enc.rnn) * He, Gd = gate_count(dec.rnn) * Hd;
  const int64_t S = static_cast<int64_t>(src_len + 0.5), T = static_cast<int64_t>(tgt_len + 0.5);
  const double steps_src = src_len, steps_tgt = tgt_len;
  std::vector<GemmShape> g;
  // rows: m with the mean lengths unrounded (what the FLOPs count); m is rounded for the timing.
  auto add = [&](std::string name, bool batched, int64_t m, int64_t k, int64_t n, double calls, double rows) {
    g.push_back({std::move(name), batched, m, k, n, calls, rows});
  };
  const double BS = static_cast<double>(B) * src_len, BT = static_cast<double>(B) * tgt_len, Bd = static_cast<double>(B);

  // Encoder: per layer and direction, the input projection of all steps in one product (LibTorch's
  // LSTM/GRU on padded input) and one recurrent product per step.
  for (int64_t l = 0; l < enc.layers; ++l) {
    const int64_t in = l == 0 ? E : (enc.separate_directions && enc.bidirectional ? He : M);
    add("encoder.input_projection", false, B * S, in, Ge, static_cast<double>(dirs), BS);
    add("encoder.recurrent", false, B, He, Ge, static_cast<double>(dirs) * steps_src, Bd);
  }

  // Attention (global variants, attention/registry.h): keys once per batch, then per step scores
  // and context.
  const auto score = global_score_kind(att.type);
  if (!score) {
    std::string modelled;
    for (const auto& name : attention_names()) {
      if (global_score_kind(name)) modelled += (modelled.empty() ? "" : ", ") + name;
    }
    throw InputError("bench: the arithmetic of model.attention.type '" + att.type + "' is not modelled (" + modelled +
                     " are)");
  }
  const int64_t A = att.hidden_size > 0 ? att.hidden_size : Hd;
  if (*score == ScoreKind::kGeneral) {
    add("attention.keys", false, B * S, M, Hd, 1, BS);
    add("attention.scores", true, 1, Hd, S, steps_tgt * src_len / std::max<int64_t>(S, 1), 1);
  } else if (*score == ScoreKind::kDot || *score == ScoreKind::kScaledDot) {
    add("attention.scores", true, 1, M, S, steps_tgt * src_len / std::max<int64_t>(S, 1), 1);
  } else {
    add("attention.keys", false, B * S, M, A, 1, BS);
    add("attention.query", false, B, Hd, A, steps_tgt, Bd);
    add("attention.scores", true, S, A, 1, steps_tgt, src_len);  // v_a^T tanh(.) over the S positions
  }
  add("attention.context", true, 1, S, M, steps_tgt * src_len / std::max<int64_t>(S, 1), 1);

  // Decoder stack: layer 0's static input (target embeddings) for all steps in one product; its
  // dynamic input (input feeding h~, or Bahdanau's context) and every recurrent / upper-layer
  // input product once per step.
  // The conditional style: RNN_2's input is c_t, and RNN_2 and the transitions add recurrent products.
  const bool luong = dec.style == DecoderStyle::luong;
  const bool conditional = dec.style == DecoderStyle::conditional;
  const int64_t C = dec.combine_size > 0 ? dec.combine_size : Hd;
  const int64_t dynamic = luong ? (dec.input_feeding ? C : 0) : M;
  add("decoder.embedding_projection", false, B * T, E, Gd, 1, BT);
  if (dynamic > 0) add(conditional ? "decoder.context_input" : "decoder.dynamic_input", false, B, dynamic, Gd, steps_tgt, Bd);
  const int64_t recurrent = dec.layers + (conditional ? 1 + dec.transitions : 0);
  add("decoder.recurrent", false, B, Hd, Gd, static_cast<double>(recurrent) * steps_tgt, Bd);
  if (dec.layers > 1) add("decoder.layer_input", false, B, Hd, Gd, static_cast<double>(dec.layers - 1) * steps_tgt, Bd);
  add("decoder.combine", false, B, luong ? M + Hd : Hd + M + E, C, steps_tgt, Bd);
  add("decoder.output", false, B * T, C, target_vocab, 1, BT);

  ModelArithmetic out;
  for (const auto& s : g) {
    out.forward_flops_per_batch += s.flops() * s.calls_per_batch * (s.batched ? static_cast<double>(B) : 1.0);
  }
  out.gemms = std::move(g);
  out.train_flops_per_target_token = 3.0 * out.forward_flops_per_batch / (static_cast<double>(B) * tgt_len);
  return out;
}

}  // namespace attnmt
