// Joey NMT 2.x RNN models (the model directory: config.yaml, a checkpoint, src_vocab.txt /
// trg_vocab.txt, the tokenizer's model) as a ToolkitModel. What Joey NMT's modules compute, and
// the attnmt form each maps to (docs/convert.md):
//   RecurrentEncoder (LSTM | GRU, bidirectional)  -> model.encoder; the source ends with </s>
//   RecurrentDecoder: the attention after the RNN step, on its top layer's state
//     luong:    q^T key_layer(h)                   -> luong_general (W_a = key_layer)
//     bahdanau: v^T tanh(query_layer q + key_layer h) -> luong_concat (no query bias)
//     att_vector_layer [q; c] (bias) + tanh         -> combine, columns to [c; q], bias, tanh
//     init_hidden bridge | last | zero              -> tanh_bridge | last | zero
//   Embeddings with scale                           -> weights times sqrt(dim), folded in
//   output_layer (no bias)                          -> the output layer with a zero bias
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <spdlog/spdlog.h>

#include "convert/checkpoint_reader.h"
#include "convert/convert.h"
#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

// A path named in the config: as given (relative to where Joey NMT ran), else beside the config,
// else its file name beside the config (a model directory that was moved). "" if none exists.
std::string find_named_file(const std::string& named, const fs::path& dir) {
  if (named.empty()) return {};
  for (const auto& candidate : {fs::path(named), dir / named, dir / fs::path(named).filename()}) {
    if (fs::is_regular_file(candidate)) return candidate.string();
  }
  return {};
}

// The checkpoint: --checkpoint, else best.ckpt, else the newest <step>.ckpt (latest.ckpt first).
std::string find_checkpoint(const ConvertOptions& options, const fs::path& dir) {
  if (!options.checkpoint.empty()) {
    if (!fs::is_regular_file(options.checkpoint)) throw InputError("--checkpoint: '" + options.checkpoint + "' is not a file");
    return options.checkpoint;
  }
  for (const char* name : {"best.ckpt", "latest.ckpt"}) {
    if (fs::is_regular_file(dir / name)) return (dir / name).string();
  }
  std::string newest;
  long long newest_step = -1;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto stem = entry.path().stem().string();
    if (entry.path().extension() != ".ckpt" || stem.empty() ||
        stem.find_first_not_of("0123456789") != std::string::npos || stem.size() > 15) {
      continue;
    }
    if (std::stoll(stem) > newest_step) {
      newest_step = std::stoll(stem);
      newest = entry.path().string();
    }
  }
  if (newest.empty()) throw InputError("'" + dir.string() + "': no Joey NMT checkpoint (best.ckpt or <step>.ckpt) in it");
  return newest;
}

// Joey NMT's Vocabulary: its specials first (unk, pad, bos, eos), then the file's tokens, each once.
std::vector<std::string> joey_vocabulary(const std::string& file, const std::vector<std::string>& specials) {
  std::vector<std::string> tokens = specials;
  std::set<std::string> seen(specials.begin(), specials.end());
  size_t line_no = 0;
  for (const auto& line : read_lines(file)) {
    ++line_no;
    if (line.empty()) throw InputError(in_quotes(file) + " line " + std::to_string(line_no) + ": an empty token");
    if (seen.insert(line).second) tokens.push_back(line);
  }
  if (line_no == 0) throw InputError(in_quotes(file) + ": an empty vocabulary file");
  return tokens;
}

struct Side {
  std::string vocab;  // the vocabulary file
  std::string spm;    // the SentencePiece model ("" = pre-tokenized)
};

Side read_side(const ToolkitOptions& data, const std::string& name, const fs::path& dir, const std::string& flag_spm) {
  const auto side = data.section(name);
  Side s;
  const std::string default_vocab = (name == "src" ? "src_vocab.txt" : "trg_vocab.txt");
  s.vocab = find_named_file(side.str("voc_file", ""), dir);
  if (s.vocab.empty()) s.vocab = find_named_file(default_vocab, dir);
  if (s.vocab.empty()) {
    throw InputError(side.where() + ": no " + name + " vocabulary: neither " + side.key("voc_file") + " " +
                     in_quotes(side.str("voc_file", "")) + " nor " + in_quotes((dir / default_vocab).string()) + " exists");
  }
  if (side.boolean("lowercase", false)) {
    throw InputError(side.where() + ": " + side.key("lowercase") + ": true: attnmt does not lowercase its input");
  }
  if (side.boolean("normalize", false)) {
    throw InputError(side.where() + ": " + side.key("normalize") + ": true: attnmt does not normalize its input");
  }
  const auto pretokenizer = side.section("tokenizer_cfg").str("pretokenizer", "none");
  if (pretokenizer != "none") {
    throw InputError(side.where() + ": " + side.key("tokenizer_cfg.pretokenizer") + " " + pretokenizer +
                     ": attnmt has no " + pretokenizer + " pre-tokenizer (tokenize the text first, and convert with it off)");
  }
  const auto level = side.str("level", "word");
  if (level == "char") throw InputError(side.where() + ": " + side.key("level") + " char: attnmt reads subwords or words");
  if (level == "bpe") {
    const auto type = side.str("tokenizer_type", side.str("bpe_type", "subword-nmt"));
    if (type != "sentencepiece") {
      throw InputError(side.where() + ": " + side.key("tokenizer_type") + " " + type +
                       ": attnmt segments with SentencePiece only (apply " + type +
                       " to the input yourself and give pre-tokenized text)");
    }
    if (flag_spm.empty()) {
      const auto named = side.section("tokenizer_cfg").str("model_file", "");
      s.spm = find_named_file(named, dir);
      if (s.spm.empty()) {
        throw InputError(side.where() + ": the SentencePiece model " + in_quotes(named) + " of " +
                         side.key("tokenizer_cfg.model_file") + " is not there (give it with " +
                         (name == "src" ? "--src-spm" : "--tgt-spm") + ")");
      }
    }
  }
  if (!flag_spm.empty()) s.spm = flag_spm;
  return s;
}

}  // namespace

ToolkitModel read_joeynmt(const ConvertOptions& options) {
  const fs::path source(options.source);
  const fs::path config_path = fs::is_directory(source) ? source / "config.yaml" : source;
  if (!fs::is_directory(source) && config_path.extension() != ".yaml" && config_path.extension() != ".yml") {
    throw InputError(in_quotes(options.source) + ": not a Joey NMT model directory or its config.yaml");
  }
  if (!fs::is_regular_file(config_path)) {
    throw InputError(in_quotes(config_path.string()) + ": no Joey NMT config.yaml there");
  }
  const fs::path dir = config_path.parent_path().empty() ? fs::path(".") : config_path.parent_path();
  const auto tree = read_yaml_tree(config_path.string());
  if (tree.kind != OptionValue::kMap) throw InputError(in_quotes(config_path.string()) + ": not a Joey NMT config (no map of sections)");
  const ToolkitOptions cfg(tree.map, in_quotes(config_path.string()));
  const auto model_cfg = cfg.section("model");
  const auto enc = model_cfg.section("encoder");
  const auto dec = model_cfg.section("decoder");
  const std::string where = cfg.where();
  for (const auto* part : {&enc, &dec}) {
    const auto type = part->str("type", "recurrent");
    if (type == "transformer") {
      throw InputError(where + ": " + part->key("type") + " transformer: a Joey NMT Transformer; attnmt runs RNN models");
    }
    if (type != "recurrent") throw InputError(where + ": " + part->key("type") + " " + type + ": attnmt converts recurrent models");
  }
  const auto data = cfg.section("data");
  if (data.has("special_symbols")) {
    const auto sp = data.section("special_symbols");
    if (sp.has("sep_token") || (sp.has("lang_tags"))) {
      throw InputError(where + ": data.special_symbols: sep_token / lang_tags (multilingual Joey NMT models) are not converted");
    }
  }
  const auto sp = data.section("special_symbols");
  const std::vector<std::string> specials = {sp.str("unk_token", "<unk>"), sp.str("pad_token", "<pad>"),
                                             sp.str("bos_token", "<s>"), sp.str("eos_token", "</s>")};
  const auto src = read_side(data, "src", dir, options.src_spm);
  const auto trg = read_side(data, "trg", dir, options.tgt_spm);
  const auto checkpoint = find_checkpoint(options, dir);

  ToolkitModel m;
  m.toolkit = "Joey NMT 2.x";
  m.src_tokens = joey_vocabulary(src.vocab, specials);
  m.tgt_tokens = joey_vocabulary(trg.vocab, specials);
  m.src_specials = {1, 0, 2, 3};  // pad, unk, bos, eos: Joey NMT's order (unk, pad, bos, eos first)
  m.tgt_specials = m.src_specials;
  m.src_spm = src.spm;
  m.tgt_spm = trg.spm;

  auto rnn = [&](const ToolkitOptions& part) {
    const auto type = part.str("rnn_type", "gru");
    if (type != "gru" && type != "lstm") throw InputError(where + ": " + part.key("rnn_type") + " " + type + ": not lstm or gru");
    return type == "lstm" ? RnnType::lstm : RnnType::gru;
  };
  const int64_t src_emb = enc.section("embeddings").integer("embedding_dim", 0);
  const int64_t tgt_emb = dec.section("embeddings").integer("embedding_dim", 0);
  const bool bidirectional = enc.boolean("bidirectional", true);
  const int64_t enc_hidden = enc.integer("hidden_size", 1);
  const int64_t dec_hidden = dec.integer("hidden_size", 0);
  const bool input_feeding = dec.boolean("input_feeding", true);
  const auto attention = dec.str("attention", "bahdanau");
  const auto init = dec.str("init_hidden", "bridge");
  if (attention != "bahdanau" && attention != "luong") {
    throw InputError(where + ": " + dec.key("attention") + " " + attention + ": not bahdanau or luong");
  }
  if (init != "bridge" && init != "last" && init != "zero") {
    throw InputError(where + ": " + dec.key("init_hidden") + " " + init + ": not bridge, last or zero");
  }
  if (dec.str("activation", "tanh") != "tanh") {
    throw InputError(where + ": " + dec.key("activation") + " " + dec.str("activation", "") +
                     ": attnmt's bridge is a tanh");
  }

  ModelConfig& mc = m.model;
  mc.embedding_size = static_cast<int>(tgt_emb);
  mc.encoder.embedding_size = src_emb == tgt_emb ? 0 : static_cast<int>(src_emb);
  mc.encoder.rnn = rnn(enc);
  mc.encoder.bidirectional = bidirectional;
  mc.encoder.layers = static_cast<int>(enc.integer("num_layers", 1));
  mc.encoder.hidden_size = static_cast<int>(enc_hidden);
  mc.encoder.dropout = 0.0;
  mc.decoder.rnn = rnn(dec);
  mc.decoder.style = DecoderStyle::luong;  // Joey NMT attends after the RNN step, with either score
  mc.decoder.layers = static_cast<int>(dec.integer("num_layers", 1));
  mc.decoder.hidden_size = static_cast<int>(dec_hidden);
  mc.decoder.input_feeding = input_feeding;
  mc.decoder.dropout = 0.0;
  mc.decoder.init = init == "bridge" ? DecoderInit::tanh_bridge : init == "last" ? DecoderInit::last : DecoderInit::zero;
  mc.decoder.combine_bias = true;
  mc.decoder.combine_tanh = true;
  mc.attention.type = attention == "luong" ? "luong_general" : "luong_concat";
  mc.attention.hidden_size = attention == "bahdanau" ? static_cast<int>(dec_hidden) : 0;
  mc.source_eos = true;

  // The testing section's decoding, under Joey NMT's own search rules.
  const auto testing = cfg.section("testing");
  m.decode.search_rules = SearchRules::joeynmt;
  m.decode.beam_size = static_cast<int>(testing.integer("beam_size", 1));
  m.decode.n_best = static_cast<int>(testing.integer("n_best", 1));
  const double alpha = testing.number("beam_alpha", testing.number("alpha", -1));
  m.decode.length_penalty = alpha > 0 ? alpha : 0.0;
  m.decode.min_length = static_cast<int>(testing.integer("min_output_length", 1));
  const int64_t max_output = testing.integer("max_output_length", -1);
  if (max_output > 0) {
    m.decode.max_length = static_cast<int>(max_output);
  } else {
    m.decode.max_length = 0;  // Joey NMT's default: 1.5 x the source (decode.search_rules joeynmt)
  }
  m.decode.ban_unk = !testing.boolean("generate_unk", true);
  for (const char* key : {"repetition_penalty", "no_repeat_ngram_size"}) {
    if (testing.number(key, -1) > 0) {
      spdlog::warn("[convert] {}: testing.{} is not carried over (decode with attnmt's own settings instead)", where, key);
    }
  }

  auto state = read_state_dict(checkpoint, "model_state");
  std::set<std::string> used;
  auto take = [&](const std::string& name) {
    auto it = state.find(name);
    if (it == state.end()) {
      throw InputError(in_quotes(checkpoint) + ": no weight '" + name + "' (the config and the checkpoint disagree)");
    }
    used.insert(name);
    return it->second;
  };
  auto& out = m.weights;
  const bool scale_src = enc.section("embeddings").boolean("scale", false);
  const bool scale_tgt = dec.section("embeddings").boolean("scale", false);
  out["src_embed.weight"] = take("src_embed.lut.weight") * (scale_src ? std::sqrt(static_cast<double>(src_emb)) : 1.0);
  out["tgt_embed.weight"] = take("trg_embed.lut.weight") * (scale_tgt ? std::sqrt(static_cast<double>(tgt_emb)) : 1.0);
  const int64_t directions = bidirectional ? 2 : 1;
  for (int64_t l = 0; l < mc.encoder.layers; ++l) {
    for (int64_t d = 0; d < directions; ++d) {
      for (const std::string p : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}) {
        out["encoder." + std::string(d ? "bwd_" : "fwd_") + std::to_string(l) + "." + p + "_l0"] =
            take("encoder.rnn." + p + "_l" + std::to_string(l) + (d ? "_reverse" : ""));
      }
    }
  }
  for (int64_t l = 0; l < mc.decoder.layers; ++l) {
    const auto n = std::to_string(l);
    auto w_ih = take("decoder.rnn.weight_ih_l" + n);
    if (l == 0) {
      out["decoder.rnn.w_static"] = w_ih.slice(1, 0, tgt_emb).contiguous();  // [E y_{t-1}; h~_{t-1}]
      if (input_feeding) out["decoder.rnn.w_dynamic"] = w_ih.slice(1, tgt_emb).contiguous();
    } else {
      out["decoder.rnn.w_ih_" + n] = w_ih;
    }
    out["decoder.rnn.b_ih_" + n] = take("decoder.rnn.bias_ih_l" + n);
    out["decoder.rnn.w_hh_" + n] = take("decoder.rnn.weight_hh_l" + n);
    out["decoder.rnn.b_hh_" + n] = take("decoder.rnn.bias_hh_l" + n);
  }
  if (attention == "luong") {
    out["decoder.attention.w_a.weight"] = take("decoder.attention.key_layer.weight");
  } else {
    out["decoder.attention.w_a.weight"] = take("decoder.attention.query_layer.weight");
    out["decoder.attention.w_a.bias"] = torch::zeros({dec_hidden});
    out["decoder.attention.u_a.weight"] = take("decoder.attention.key_layer.weight");
    out["decoder.attention.v_a"] = take("decoder.attention.energy_layer.weight").reshape({-1});
  }
  // att_vector_layer reads [q_t; c_t]; attnmt's combine [c_t; q_t].
  auto combine = take("decoder.att_vector_layer.weight");
  out["decoder.combine.weight"] = torch::cat({combine.slice(1, dec_hidden), combine.slice(1, 0, dec_hidden)}, 1).contiguous();
  out["decoder.combine.bias"] = take("decoder.att_vector_layer.bias");
  if (init == "bridge") {
    out["decoder.bridge_h.weight"] = take("decoder.bridge_layer.weight");
    out["decoder.bridge_h.bias"] = take("decoder.bridge_layer.bias");
  }
  out["out_weight"] = take("decoder.output_layer.weight");
  out["out_bias"] = torch::zeros({out["out_weight"].size(0)});
  for (const auto& [name, w] : state) {
    if (!used.count(name)) {
      throw InputError(in_quotes(checkpoint) + ": weight '" + name + "' belongs to a module attnmt does not compute");
    }
  }
  return m;
}

}  // namespace attnmt
