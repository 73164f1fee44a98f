// fairseq's LSTM models (fairseq/models/lstm.py: the architectures lstm, lstm_wiseman_iwslt_de_en,
// lstm_luong_wmt_en_de) as a ToolkitModel: the checkpoint, and the dictionaries fairseq-preprocess
// wrote (dict.SRC.txt, dict.TGT.txt in --data-dir). What fairseq's modules compute, and the
// attnmt form each maps to (docs/convert.md):
//   LSTMEncoder (nn.LSTM, uni- or bidirectional)  -> model.encoder; the source ends with </s>
//   LSTMDecoder: LSTMCells, input feeding (always, with an encoder), the attention after the step
//     AttentionLayer: h_s . input_proj(s_t)       -> luong_general (W_a = input_proj^T)
//       tanh(output_proj [c_t; s_t]), no bias     -> combine (no bias, tanh)
//     each layer from the same encoder layer's final h and c (directions concatenated), through
//     encoder_hidden_proj / encoder_cell_proj when the sizes differ -> init encoder | encoder_linear
//   additional_fc (decoder_out_embed_dim != hidden) then fc_out, or the embeddings (shared)
//                                                 -> one output layer: the product of the two
//   generation starts from </s> (fairseq has no <s> in its decoder input) -> the target <s>
//                                                    embedding is </s>'s
// Refused in one line naming the option: other architectures, adaptive softmax
// (criterion adaptive_loss), a decoder without attention (decoder_attention 0).
#include <filesystem>
#include <set>

#include "convert/checkpoint_reader.h"
#include "convert/convert.h"
#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

// fairseq's Dictionary: <s> <pad> </s> <unk> (ids 0-3), then dict.txt's words in its order
// ("word count", "#fairseq:overwrite" after the count allowing a word twice: refused here, as
// attnmt's vocabularies hold each token once).
std::vector<std::string> read_dictionary(const fs::path& file, const std::string& flag) {
  if (!fs::is_regular_file(file)) {
    throw InputError(flag + ": no fairseq dictionary '" + file.string() + "' (fairseq-preprocess writes dict.LANG.txt)");
  }
  std::vector<std::string> tokens{"<s>", "<pad>", "</s>", "<unk>"};
  std::set<std::string> seen(tokens.begin(), tokens.end());
  size_t line_no = 0;
  for (const auto& raw : read_lines(file.string())) {
    ++line_no;
    std::string line = raw;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (line.empty()) continue;
    auto space = line.rfind(' ');
    if (space == std::string::npos) {
      throw InputError(in_quotes(file.string()) + ":" + std::to_string(line_no) + ": not 'word count' (a fairseq dictionary line)");
    }
    if (line.substr(space + 1) == "#fairseq:overwrite") {
      line.resize(space);
      space = line.rfind(' ');
      if (space == std::string::npos) throw InputError(in_quotes(file.string()) + ":" + std::to_string(line_no) + ": not 'word count'");
    }
    const auto count = line.substr(space + 1);
    if (count.empty() || count.find_first_not_of("0123456789") != std::string::npos) {
      throw InputError(in_quotes(file.string()) + ":" + std::to_string(line_no) + ": '" + count + "' is not a count");
    }
    auto word = line.substr(0, space);
    if (!seen.insert(word).second) {
      throw InputError(in_quotes(file.string()) + ":" + std::to_string(line_no) + ": the word '" + word +
                       "' a second time (#fairseq:overwrite): attnmt's vocabularies hold each token once");
    }
    tokens.push_back(std::move(word));
  }
  return tokens;
}

// fairseq's utils.eval_bool of an option that may be a string ("1", "True") or a bool.
bool option_true(const ToolkitOptions& opt, const std::string& name, bool fallback) {
  try {
    return opt.boolean(name, fallback);
  } catch (const InputError&) {
    const auto s = opt.str(name, fallback ? "True" : "False");
    if (s == "1" || s == "True" || s == "true") return true;
    if (s == "0" || s == "False" || s == "false" || s.empty()) return false;
    throw InputError(opt.where() + ": option " + name + " '" + s + "' is not a boolean");
  }
}

}  // namespace

ToolkitModel read_fairseq(const ConvertOptions& options) {
  const std::string where = in_quotes(options.source);
  if (options.data_dir.empty()) {
    throw InputError("--data-dir: required with --from fairseq (the directory with fairseq's dict.SRC.txt and dict.TGT.txt)");
  }
  if (!fs::is_directory(options.data_dir)) throw InputError("--data-dir: '" + options.data_dir + "' is not a directory");
  auto ckpt = read_fairseq_checkpoint(options.source);
  const auto& opt = ckpt.model;
  ToolkitModel m;
  m.toolkit = "fairseq";

  // --- what the model is, and what attnmt cannot compute
  const auto arch = opt.str("arch", opt.str("_name", ""));
  if (arch != "lstm" && arch != "lstm_wiseman_iwslt_de_en" && arch != "lstm_luong_wmt_en_de") {
    throw InputError(where + ": a fairseq '" + arch +
                     "' model (arch): attnmt converts fairseq's lstm architectures (lstm, lstm_wiseman_iwslt_de_en, "
                     "lstm_luong_wmt_en_de)");
  }
  if (ckpt.criterion == "adaptive_loss" || ckpt.weights.count("decoder.adaptive_softmax.head.weight")) {
    throw InputError(where + ": adaptive softmax (criterion adaptive_loss, adaptive_softmax_cutoff): attnmt's output layer "
                     "is one softmax over the vocabulary");
  }
  if (!option_true(opt, "decoder_attention", true)) {
    throw InputError(where + ": decoder_attention 0: attnmt's decoders always attend");
  }
  const int64_t enc_emb = opt.integer("encoder_embed_dim", 512), dec_emb = opt.integer("decoder_embed_dim", 512);
  const int64_t enc_hidden = opt.integer("encoder_hidden_size", enc_emb);
  const int64_t dec_hidden = opt.integer("decoder_hidden_size", dec_emb);
  const int64_t enc_layers = opt.integer("encoder_layers", 1), dec_layers = opt.integer("decoder_layers", 1);
  const bool bidirectional = option_true(opt, "encoder_bidirectional", false);
  const int64_t enc_out = enc_hidden * (bidirectional ? 2 : 1);
  if (enc_layers != dec_layers) {
    throw InputError(where + ": encoder_layers " + std::to_string(enc_layers) + " and decoder_layers " +
                     std::to_string(dec_layers) + " (fairseq itself requires them equal)");
  }

  // --- dictionaries: the task's languages, fairseq-preprocess's file names
  const auto src_lang = ckpt.task.str("source_lang", ""), tgt_lang = ckpt.task.str("target_lang", "");
  if (src_lang.empty() || tgt_lang.empty()) {
    throw InputError(where + ": its task names no source_lang / target_lang (the dictionaries' names)");
  }
  m.src_tokens = read_dictionary(fs::path(options.data_dir) / ("dict." + src_lang + ".txt"), "--data-dir");
  m.tgt_tokens = read_dictionary(fs::path(options.data_dir) / ("dict." + tgt_lang + ".txt"), "--data-dir");
  m.src_specials = {1, 3, 0, 2};  // pad, unk, bos, eos
  m.tgt_specials = {1, 3, 0, 2};
  m.src_spm = options.src_spm;
  m.tgt_spm = options.tgt_spm;

  ModelConfig& mc = m.model;
  mc.embedding_size = static_cast<int>(dec_emb);
  mc.encoder.embedding_size = enc_emb == dec_emb ? 0 : static_cast<int>(enc_emb);
  mc.encoder.rnn = RnnType::lstm;
  mc.encoder.bidirectional = bidirectional;
  mc.encoder.layers = static_cast<int>(enc_layers);
  mc.encoder.hidden_size = static_cast<int>(enc_hidden);
  mc.encoder.dropout = 0.0;
  mc.decoder.rnn = RnnType::lstm;
  mc.decoder.style = DecoderStyle::luong;
  mc.decoder.layers = static_cast<int>(dec_layers);
  mc.decoder.hidden_size = static_cast<int>(dec_hidden);
  mc.decoder.input_feeding = true;
  mc.decoder.dropout = 0.0;
  mc.decoder.init = enc_out == dec_hidden ? DecoderInit::encoder : DecoderInit::encoder_linear;
  mc.decoder.combine_bias = false;
  mc.decoder.combine_tanh = true;
  mc.attention.type = "luong_general";
  mc.attention.hidden_size = 0;
  mc.source_eos = true;

  // fairseq-generate's defaults (fairseq/dataclass/configs.py GenerationConfig): beam 5, nbest 1,
  // lenpen 1, unkpen 0, min_len 1, max_len_a 0, max_len_b 200.
  m.decode.beam_size = 5;
  m.decode.n_best = 1;
  m.decode.length_penalty = 1.0;
  m.decode.coverage_penalty = 0.0;
  m.decode.min_length = 1;
  m.decode.max_length = 200;
  m.decode.max_length_ratio = 0.0;
  m.decode.unk_penalty = 0.0;
  m.decode.search_rules = SearchRules::fairseq;

  // --- weights
  auto& w = ckpt.weights;
  std::set<std::string> used;
  auto take = [&](const std::string& name) {
    auto it = w.find(name);
    if (it == w.end()) throw InputError(where + ": no weight '" + name + "' (the options and the weights disagree)");
    used.insert(name);
    return it->second;
  };
  auto& out = m.weights;
  out["src_embed.weight"] = take("encoder.embed_tokens.weight");
  auto tgt_embed = take("decoder.embed_tokens.weight");
  for (int64_t l = 0; l < enc_layers; ++l) {
    for (int64_t d = 0; d < (bidirectional ? 2 : 1); ++d) {
      const auto suffix = "_l" + std::to_string(l) + (d ? "_reverse" : "");
      const auto to = std::string("encoder.") + (d ? "bwd_" : "fwd_") + std::to_string(l) + ".";
      for (const char* p : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}) {
        out[to + p + "_l0"] = take(std::string("encoder.lstm.") + p + suffix);
      }
    }
  }
  for (int64_t l = 0; l < dec_layers; ++l) {
    const auto n = std::to_string(l);
    const auto prefix = "decoder.layers." + n + ".";
    auto w_ih = take(prefix + "weight_ih");
    if (l == 0) {
      out["decoder.rnn.w_static"] = w_ih.slice(1, 0, dec_emb).contiguous();  // cat(x, input_feed)
      out["decoder.rnn.w_dynamic"] = w_ih.slice(1, dec_emb).contiguous();
    } else {
      out["decoder.rnn.w_ih_" + n] = w_ih;
    }
    out["decoder.rnn.b_ih_" + n] = take(prefix + "bias_ih");
    out["decoder.rnn.w_hh_" + n] = take(prefix + "weight_hh");
    out["decoder.rnn.b_hh_" + n] = take(prefix + "bias_hh");
  }
  if (mc.decoder.init == DecoderInit::encoder_linear) {
    out["decoder.linear_bridge_h.weight"] = take("decoder.encoder_hidden_proj.weight");
    out["decoder.linear_bridge_h.bias"] = take("decoder.encoder_hidden_proj.bias");
    out["decoder.linear_bridge_c.weight"] = take("decoder.encoder_cell_proj.weight");
    out["decoder.linear_bridge_c.bias"] = take("decoder.encoder_cell_proj.bias");
  }
  out["decoder.attention.w_a.weight"] = take("decoder.attention.input_proj.weight").t().contiguous();
  out["decoder.combine.weight"] = take("decoder.attention.output_proj.weight");  // [c_t; s_t], as attnmt's
  // The output layer: fc_out, or (share_decoder_input_output_embed, share_all_embeddings) the
  // target embeddings without a bias; after additional_fc when decoder_out_embed_dim differs from
  // the hidden size. Two affine maps with nothing between them are one: W_out (W_fc x + b_fc) + b_out.
  const bool shared_output = !w.count("decoder.fc_out.weight");
  auto out_weight = shared_output ? tgt_embed : take("decoder.fc_out.weight");
  auto out_bias = shared_output ? torch::zeros({out_weight.size(0)}) : take("decoder.fc_out.bias");
  if (w.count("decoder.additional_fc.weight")) {
    const auto fc_w = take("decoder.additional_fc.weight").to(torch::kDouble);
    const auto fc_b = take("decoder.additional_fc.bias").to(torch::kDouble);
    const auto o_w = out_weight.to(torch::kDouble);
    out_bias = (torch::mv(o_w, fc_b) + out_bias.to(torch::kDouble)).to(torch::kFloat);
    out_weight = torch::mm(o_w, fc_w).to(torch::kFloat);
  }
  out["out_weight"] = out_weight.contiguous();
  out["out_bias"] = out_bias.contiguous();
  // fairseq starts every translation from </s> (SequenceGenerator: tokens[:, 0] = eos); attnmt
  // from <s>, whose embedding is therefore </s>'s (fairseq never reads <s> in its decoder).
  tgt_embed = tgt_embed.clone();
  tgt_embed[0].copy_(tgt_embed[2]);
  out["tgt_embed.weight"] = tgt_embed;

  std::string unknown;
  size_t count = 0;
  for (const auto& [name, t] : w) {
    const bool version = name.size() >= 8 && name.compare(name.size() - 8, 8, ".version") == 0;  // fairseq's bookkeeping
    if (used.count(name) || version) continue;
    if (count++ < 4) unknown += (unknown.empty() ? "" : ", ") + name;
  }
  if (count > 0) {
    throw InputError(where + ": " + std::to_string(count) + " weight(s) of modules attnmt does not compute (" + unknown +
                     (count > 4 ? ", ..." : "") + ")");
  }
  const auto rows = [&](const char* name) { return out[name].size(0); };
  if (rows("src_embed.weight") != static_cast<int64_t>(m.src_tokens.size()) ||
      rows("tgt_embed.weight") != static_cast<int64_t>(m.tgt_tokens.size())) {
    throw InputError("--data-dir: the dictionaries dict." + src_lang + ".txt / dict." + tgt_lang + ".txt have " +
                     std::to_string(m.src_tokens.size()) + " / " + std::to_string(m.tgt_tokens.size()) +
                     " entries with fairseq's 4 specials, the model's embeddings " + std::to_string(rows("src_embed.weight")) +
                     " / " + std::to_string(rows("tgt_embed.weight")) + " rows: not the dictionaries it was trained with");
  }
  return m;
}

}  // namespace attnmt
