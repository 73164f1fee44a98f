// OpenNMT-py RNN checkpoints (2.x: vocabularies as torchtext fields; 3.x: as plain lists, the
// weights in the .pt or in a .safetensors beside it) as a ToolkitModel. What OpenNMT-py's modules
// compute, and the attnmt form each maps to (docs/convert.md has the table):
//   RNNEncoder (rnn | brnn, LSTM | GRU)  -> model.encoder (hidden_size = rnn_size / directions)
//   InputFeedRNNDecoder / StdRNNDecoder   -> luong decoder with / without input feeding
//   GlobalAttention dot | general | mlp   -> luong_dot | luong_general (W_a = linear_in^T) |
//                                           luong_concat; linear_out -> combine (mlp: bias, no tanh)
//   the decoder's start: the encoder's per-layer final states (init: encoder), through the
//   bridge when it has one (init: encoder_relu_bridge); the source without </s> (source_eos false)
//   generator Linear + LogSoftmax         -> the output layer
// Coverage attention (coverage_attn) shapes only OpenNMT-py's training loss: its decoder does not
// feed the coverage to the attention, so it is read and dropped.
#include <filesystem>
#include <set>

#include "convert/checkpoint_reader.h"
#include "convert/convert.h"
#include "util/error.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

struct Weights {
  std::map<std::string, torch::Tensor> tensors;  // OpenNMT-py's names
  std::set<std::string> used;
  std::string where;

  bool has(const std::string& name) const { return tensors.count(name) > 0; }
  torch::Tensor take(const std::string& name) {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw InputError(where + ": no weight '" + name + "' (the options and the weights disagree)");
    used.insert(name);
    return it->second;
  }
  // Weights no mapping took: a module attnmt does not know (InputError naming them).
  void check_all_used(const std::set<std::string>& ignored) const {
    std::string unknown;
    size_t count = 0;
    for (const auto& [name, w] : tensors) {
      if (used.count(name) || ignored.count(name)) continue;
      if (count++ < 4) unknown += (unknown.empty() ? "" : ", ") + name;
    }
    if (count > 0) {
      throw InputError(where + ": " + std::to_string(count) + " weight(s) of modules attnmt does not compute (" + unknown +
                       (count > 4 ? ", ..." : "") + ")");
    }
  }
};

void refuse(const std::string& where, const std::string& what) { throw InputError(where + ": " + what); }

}  // namespace

ToolkitModel read_opennmt(const ConvertOptions& options) {
  auto ckpt = read_opennmt_checkpoint(options.source);
  const auto& opt = ckpt.opt;
  const std::string where = in_quotes(options.source);
  ToolkitModel m;
  m.toolkit = ckpt.version;

  // --- what the model is, and what attnmt cannot compute
  const auto model_type = opt.str("model_type", "text");
  if (model_type != "text") refuse(where, "an OpenNMT-py '" + model_type + "' model: attnmt translates text");
  const auto encoder_type = opt.str("encoder_type", "rnn");
  const auto decoder_type = opt.str("decoder_type", "rnn");
  for (const auto& type : {encoder_type, decoder_type}) {
    if (type == "transformer" || type == "transformer_lm") {
      refuse(where, "an OpenNMT-py Transformer: attnmt runs RNN models (CTranslate2 serves OpenNMT-py Transformers)");
    }
  }
  if (encoder_type != "rnn" && encoder_type != "brnn") {
    refuse(where, "an OpenNMT-py '" + encoder_type + "' encoder: attnmt converts rnn and brnn encoders only");
  }
  if (decoder_type != "rnn") refuse(where, "an OpenNMT-py '" + decoder_type + "' decoder: attnmt converts rnn decoders only");
  const auto rnn_type = opt.str("rnn_type", "LSTM");
  if (rnn_type != "LSTM" && rnn_type != "GRU") {
    refuse(where, "rnn_type " + rnn_type + ": attnmt computes LSTM and GRU cells (not " + rnn_type + ")");
  }
  if (opt.boolean("copy_attn", false)) refuse(where, "copy attention (copy_attn): attnmt has no copy mechanism");
  if (opt.has("context_gate") && !opt.str("context_gate", "").empty()) {
    refuse(where, "a context gate (context_gate " + opt.str("context_gate", "") + "): attnmt has none");
  }
  const auto attention = opt.str("global_attention", "general");
  if (attention == "none") refuse(where, "global_attention none: attnmt's decoders always attend");
  if (attention != "dot" && attention != "general" && attention != "mlp") {
    refuse(where, "global_attention " + attention + ": attnmt converts dot, general and mlp");
  }
  for (const char* key : {"global_attention_function", "generator_function"}) {
    const auto f = opt.str(key, "softmax");
    if (f != "softmax") refuse(where, std::string(key) + " " + f + ": attnmt normalises with softmax only");
  }
  if (opt.boolean("position_encoding", false)) {
    refuse(where, "position_encoding: attnmt's RNN encoder has no sinusoidal position encoding");
  }
  if (ckpt.source_features > 0) refuse(where, "source word features: attnmt reads one token stream");

  // --- sizes (2.x: layers / rnn_size / word_vec_size override the per-side options when set)
  const bool bidirectional = encoder_type == "brnn" || opt.boolean("brnn", false);
  int64_t enc_layers = opt.integer("enc_layers", 2), dec_layers = opt.integer("dec_layers", 2);
  if (opt.integer("layers", -1) > 0) enc_layers = dec_layers = opt.integer("layers", -1);
  int64_t enc_size = opt.integer("enc_rnn_size", opt.integer("enc_hid_size", 500));
  int64_t dec_size = opt.integer("dec_rnn_size", opt.integer("dec_hid_size", 500));
  const int64_t rnn_size = opt.integer("rnn_size", opt.integer("hidden_size", -1));
  if (rnn_size > 0) enc_size = dec_size = rnn_size;
  int64_t src_emb = opt.integer("src_word_vec_size", 500), tgt_emb = opt.integer("tgt_word_vec_size", 500);
  if (opt.integer("word_vec_size", -1) > 0) src_emb = tgt_emb = opt.integer("word_vec_size", -1);
  const int64_t directions = bidirectional ? 2 : 1;
  if (enc_size % directions != 0) refuse(where, "a brnn encoder of odd size " + std::to_string(enc_size));
  const bool input_feed = opt.integer("input_feed", 1) != 0;
  const bool bridge = opt.boolean("bridge", false);

  ModelConfig& mc = m.model;
  mc.embedding_size = static_cast<int>(tgt_emb);
  mc.encoder.embedding_size = src_emb == tgt_emb ? 0 : static_cast<int>(src_emb);
  mc.encoder.rnn = rnn_type == "LSTM" ? RnnType::lstm : RnnType::gru;
  mc.encoder.bidirectional = bidirectional;
  mc.encoder.layers = static_cast<int>(enc_layers);
  mc.encoder.hidden_size = static_cast<int>(enc_size / directions);
  mc.encoder.dropout = 0.0;
  mc.decoder.rnn = mc.encoder.rnn;
  mc.decoder.style = DecoderStyle::luong;
  mc.decoder.layers = static_cast<int>(dec_layers);
  mc.decoder.hidden_size = static_cast<int>(dec_size);
  mc.decoder.input_feeding = input_feed;
  mc.decoder.dropout = 0.0;
  mc.decoder.init = bridge ? DecoderInit::encoder_relu_bridge : DecoderInit::encoder;
  mc.decoder.combine_bias = attention == "mlp";
  mc.decoder.combine_tanh = attention != "mlp";
  mc.attention.type = attention == "dot" ? "luong_dot" : attention == "general" ? "luong_general" : "luong_concat";
  mc.attention.hidden_size = attention == "mlp" ? static_cast<int>(dec_size) : 0;
  mc.source_eos = false;
  if (enc_layers != dec_layers || enc_size != dec_size) {
    refuse(where, "an encoder of " + std::to_string(enc_layers) + "x" + std::to_string(enc_size) + " and a decoder of " +
                      std::to_string(dec_layers) + "x" + std::to_string(dec_size) +
                      ": OpenNMT-py starts each decoder layer from the same encoder layer's state, so they must match");
  }

  // The translate.py defaults of the version that wrote it, and that version's search rules.
  // 2.x: beam 5, no length penalty, at most 100 tokens. 3.x (onmt/opts.py of v3.5.1): beam 5,
  // length_penalty avg with alpha 1 (score / length), at most min(250, 1.25 x source + 5) tokens.
  const bool v3 = ckpt.major_version >= 3;
  m.decode.beam_size = 5;
  m.decode.n_best = 1;
  m.decode.length_penalty = v3 ? 1.0 : 0.0;
  m.decode.coverage_penalty = 0.0;
  m.decode.min_length = 0;
  m.decode.max_length = v3 ? 250 : 100;
  if (v3) m.decode.max_length_ratio = 1.25;
  m.decode.search_rules = v3 ? SearchRules::opennmt3 : SearchRules::opennmt;

  m.src_tokens = ckpt.src_tokens;
  m.tgt_tokens = ckpt.tgt_tokens;
  m.src_specials = ckpt.src_specials;
  m.tgt_specials = ckpt.tgt_specials;
  m.src_spm = options.src_spm;
  m.tgt_spm = options.tgt_spm;

  // --- weights
  read_opennmt_weights(ckpt);
  Weights w{std::move(ckpt.weights), {}, where};
  auto& out = m.weights;
  out["src_embed.weight"] = w.take("encoder.embeddings.make_embedding.emb_luts.0.weight");
  out["tgt_embed.weight"] = w.take("decoder.embeddings.make_embedding.emb_luts.0.weight");
  for (int64_t l = 0; l < enc_layers; ++l) {
    for (int64_t d = 0; d < directions; ++d) {
      const auto from = "encoder.rnn.%s_l" + std::to_string(l) + (d ? "_reverse" : "");
      const auto to = std::string("encoder.") + (d ? "bwd_" : "fwd_") + std::to_string(l) + ".%s_l0";
      for (const char* p : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}) {
        auto name = [&](std::string pattern) { return pattern.replace(pattern.find("%s"), 2, p); };
        out[name(to)] = w.take(name(from));
      }
    }
  }
  for (int64_t l = 0; l < dec_layers; ++l) {
    // InputFeedRNNDecoder: a stack of cells; StdRNNDecoder: one multi-layer nn.LSTM / nn.GRU.
    auto name = [&](const std::string& p) {
      return input_feed ? "decoder.rnn.layers." + std::to_string(l) + "." + p
                        : "decoder.rnn." + p + "_l" + std::to_string(l);
    };
    const auto n = std::to_string(l);
    auto w_ih = w.take(name("weight_ih"));
    if (l == 0) {
      out["decoder.rnn.w_static"] = w_ih.slice(1, 0, tgt_emb).contiguous();  // [E y_{t-1}; h~_{t-1}]
      if (input_feed) out["decoder.rnn.w_dynamic"] = w_ih.slice(1, tgt_emb).contiguous();
    } else {
      out["decoder.rnn.w_ih_" + n] = w_ih;
    }
    out["decoder.rnn.b_ih_" + n] = w.take(name("bias_ih"));
    out["decoder.rnn.w_hh_" + n] = w.take(name("weight_hh"));
    out["decoder.rnn.b_hh_" + n] = w.take(name("bias_hh"));
  }
  if (attention == "general") {
    out["decoder.attention.w_a.weight"] = w.take("decoder.attn.linear_in.weight").t().contiguous();
  } else if (attention == "mlp") {
    out["decoder.attention.w_a.weight"] = w.take("decoder.attn.linear_query.weight");
    out["decoder.attention.w_a.bias"] = w.take("decoder.attn.linear_query.bias");
    out["decoder.attention.u_a.weight"] = w.take("decoder.attn.linear_context.weight");
    out["decoder.attention.v_a"] = w.take("decoder.attn.v.weight").reshape({-1});
  }
  out["decoder.combine.weight"] = w.take("decoder.attn.linear_out.weight");  // [c_t; s_t], as attnmt's
  if (attention == "mlp") out["decoder.combine.bias"] = w.take("decoder.attn.linear_out.bias");
  if (bridge) {
    out["decoder.relu_bridge_h.weight"] = w.take("encoder.bridge.0.weight");
    out["decoder.relu_bridge_h.bias"] = w.take("encoder.bridge.0.bias");
    if (rnn_type == "LSTM") {
      out["decoder.relu_bridge_c.weight"] = w.take("encoder.bridge.1.weight");
      out["decoder.relu_bridge_c.bias"] = w.take("encoder.bridge.1.bias");
    }
  }
  // The generator: 2.x Sequential(Linear, Cast, LogSoftmax); 3.x a Linear. Tied to the target
  // embeddings (share_decoder_embeddings), it is stored under its own name all the same.
  const std::string gen = w.has("generator.0.weight") ? "generator.0." : "generator.";
  out["out_weight"] = w.has(gen + "weight") ? w.take(gen + "weight") : out["tgt_embed.weight"];
  out["out_bias"] = w.has(gen + "bias") ? w.take(gen + "bias") : torch::zeros({out["out_weight"].size(0)});
  w.check_all_used({"decoder.attn.linear_cover.weight"});
  return m;
}

}  // namespace attnmt
