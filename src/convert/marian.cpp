// Marian's RNN models (`--type s2s`, src/models/s2s.h of marian-dev) as a ToolkitModel: the .npz
// (its options in the array "special:model.yml") and the two vocabularies given with --vocabs
// (Marian's .yml: piece -> id, </s> and <unk> among them). What Marian computes, and the attnmt
// form each maps to (docs/convert.md):
//   encoder_Wemb, enc-type bidirectional (a stack per direction), GRU cells -> model.encoder (GRU,
//     bidirectional, separate_directions);
//     Marian's cell: r, z = sigmoid(x W + s U + b), h~ = tanh(x Wx + r (s Ux) + bx) -> PyTorch's
//     GRU with b_ih = [b; bx], b_hh = 0; the source ends with </s>
//   the decoder's conditional GRU: cell1 (E y_{t-1}), the attention v^T tanh(W_comb_att s' +
//     Wc_att h + b_att), cell2 (the context; a "final" cell: bx inside r, b_hh = [0; bx]), cells
//     3.. (transitions, no input: b_ih = [b; 0])    -> style conditional, transitions
//   ff_state: tanh(W mean(h) + b)                   -> init mean_bridge
//   ff_logit_l1: tanh(E y W0 + s W1 + c W2 + b0 + b1 + b2) at dim-emb -> combine [s; c; E y], its
//     bias the sum, combine_size dim-emb; ff_logit_l2 (its W, or Wt as Marian >= 1.10 saves it; or
//     decoder_Wemb, tied) -> the output layer
//   dec-depth > 1: the decoder's layers 2.. (decoder_l<i>_cell1) -> the ordinary stack above
//   the first target input is a zero vector        -> the <s> row of the target embeddings
//     (Marian's vocabularies have no <s>: a placeholder, zero, and never an output)
// Refused in one line naming the option: other model types, LSTM and Nematus cells, layer
// normalisation, skip connections, other encoder types, deep transition cells in the encoder or
// the decoder's upper layers, factored vocabularies, several sources.
#include <filesystem>
#include <set>

#include "convert/convert.h"
#include "config/option_tree.h"
#include "pyformat/npz.h"
#include "util/error.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

// A Marian .yml vocabulary: each piece's id, ids 0..n-1 each once.
std::vector<std::string> read_vocabulary(const std::string& path) {
  if (!fs::is_regular_file(path)) throw InputError("--vocabs: '" + path + "' is not a file");
  const auto ext = fs::path(path).extension().string();
  if (ext == ".spm") {
    throw InputError("--vocabs: '" + path +
                     "' is a SentencePiece vocabulary: attnmt converts Marian models with .yml vocabularies (give "
                     "the SentencePiece model as --src-spm / --tgt-spm with the .yml ones)");
  }
  const auto tree = read_yaml_tree(path);
  if (tree.kind != OptionValue::kMap || tree.map.empty()) {
    throw InputError("--vocabs: '" + path + "' is not a Marian vocabulary (a YAML map of piece: id)");
  }
  std::vector<std::string> tokens(tree.map.size());
  std::vector<char> seen(tree.map.size(), 0);
  for (const auto& [piece, id] : tree.map) {
    if (id.kind != OptionValue::kInt || id.i < 0 || id.i >= static_cast<int64_t>(tokens.size()) || seen[static_cast<size_t>(id.i)]) {
      throw InputError("--vocabs: '" + path + "': the id of '" + piece + "' is not one of 0.." +
                       std::to_string(tokens.size() - 1) + " given once");
    }
    tokens[static_cast<size_t>(id.i)] = piece;
    seen[static_cast<size_t>(id.i)] = 1;
  }
  return tokens;
}

SpecialIds marian_specials(const std::vector<std::string>& tokens, const std::string& path) {
  SpecialIds s;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == "</s>") s.eos = static_cast<int64_t>(i);
    if (tokens[i] == "<unk>") s.unk = static_cast<int64_t>(i);
  }
  if (s.eos < 0 || s.unk < 0) throw InputError("--vocabs: '" + path + "' has no </s> or no <unk> (Marian's vocabularies have both)");
  return s;  // no <pad> (Marian pads with </s>, masked) and no <s>
}

torch::Tensor to_tensor(const TensorRef& ref, const std::string& name) {
  auto values = to_float32_contiguous(ref, name);
  return torch::from_blob(values.data(), ref.shape, torch::kFloat).clone();
}

}  // namespace

ToolkitModel read_marian(const ConvertOptions& options) {
  const std::string where = in_quotes(options.source);
  if (options.vocabs.size() != 2) {
    throw InputError("--vocabs: required with --from marian, two files: the source and the target vocabulary (its --vocabs)");
  }
  if (!fs::is_regular_file(options.source)) throw InputError(where + ": not a file");
  auto npz = load_npz(options.source);
  auto yml = npz.arrays.find("special:model.yml");
  if (yml == npz.arrays.end()) {
    throw InputError(where + ": no 'special:model.yml' (not a Marian model file, or one saved without its options)");
  }
  const auto tree = read_yaml_text(npz_text(yml->second, "special:model.yml"), where + " (special:model.yml)");
  if (tree.kind != OptionValue::kMap) throw InputError(where + ": special:model.yml is not a YAML map");
  const ToolkitOptions opt(tree.map, where + " (special:model.yml)");

  // --- what the model is, and what attnmt cannot compute
  const auto type = opt.str("type", "");
  if (type != "s2s") {
    throw InputError(where + ": a Marian '" + type + "' model (type): attnmt converts Marian's RNN type s2s");
  }
  auto refuse = [&](const std::string& what) { throw InputError(where + ": " + what); };
  for (const char* cell : {"enc-cell", "dec-cell"}) {
    const auto c = opt.str(cell, "gru");
    if (c != "gru") refuse(std::string(cell) + " " + c + ": attnmt maps Marian's gru cells");
  }
  if (opt.boolean("layer-normalization", false)) refuse("layer-normalization: attnmt's recurrent cells have none");
  if (opt.boolean("skip", false)) refuse("skip: attnmt's stacks have no skip connections");
  if (opt.boolean("right-left", false)) refuse("right-left: a right-to-left model");
  if (opt.str("enc-type", "bidirectional") != "bidirectional") {
    refuse("enc-type " + opt.str("enc-type", "") + ": attnmt maps enc-type bidirectional");
  }
  const int64_t enc_depth = opt.integer("enc-depth", 1);
  if (enc_depth < 1) refuse("enc-depth " + std::to_string(enc_depth));
  if (opt.integer("enc-cell-depth", 1) != 1) refuse("enc-cell-depth > 1: deep transition cells in the encoder");
  if (opt.integer("dec-cell-high-depth", 1) != 1) refuse("dec-cell-high-depth > 1: deep transition cells above the first layer");
  const int64_t base_depth = opt.integer("dec-cell-base-depth", 2);
  if (base_depth < 2) refuse("dec-cell-base-depth " + std::to_string(base_depth) + ": the conditional GRU has two cells");
  if (opt.integer("lemma-dim-emb", 0) != 0 || (opt.has("factors-combine") && opt.str("factors-combine", "sum") != "sum")) {
    refuse("factored vocabularies (lemma-dim-emb, factors-combine)");
  }
  if (opt.str("original-type", "s2s") != "s2s") refuse("original-type " + opt.str("original-type", "") + ": Nematus' cells");

  const int64_t E = opt.integer("dim-emb", 512), H = opt.integer("dim-rnn", 1024);
  const int64_t dec_depth = opt.integer("dec-depth", 1);
  const bool tied = opt.boolean("tied-embeddings", false);
  const bool tied_src = opt.boolean("tied-embeddings-src", false), tied_all = opt.boolean("tied-embeddings-all", false);

  ToolkitModel m;
  m.toolkit = "Marian";
  m.src_tokens = read_vocabulary(options.vocabs[0]);
  m.tgt_tokens = read_vocabulary(options.vocabs[1]);
  m.src_specials = marian_specials(m.src_tokens, options.vocabs[0]);
  m.tgt_specials = marian_specials(m.tgt_tokens, options.vocabs[1]);
  m.src_spm = options.src_spm;
  m.tgt_spm = options.tgt_spm;

  ModelConfig& mc = m.model;
  mc.embedding_size = static_cast<int>(E);
  mc.encoder.rnn = RnnType::gru;
  mc.encoder.bidirectional = true;
  mc.encoder.layers = static_cast<int>(enc_depth);
  mc.encoder.separate_directions = true;  // two stacks, concatenated at the top
  mc.encoder.hidden_size = static_cast<int>(H);
  mc.encoder.dropout = 0.0;
  mc.decoder.rnn = RnnType::gru;
  mc.decoder.style = DecoderStyle::conditional;
  mc.decoder.layers = static_cast<int>(dec_depth);
  mc.decoder.hidden_size = static_cast<int>(H);
  mc.decoder.transitions = static_cast<int>(base_depth - 2);
  mc.decoder.dropout = 0.0;
  mc.decoder.init = DecoderInit::mean_bridge;
  mc.decoder.combine_bias = true;
  mc.decoder.combine_tanh = true;
  mc.decoder.combine_size = static_cast<int>(E);
  mc.attention.type = "luong_concat";
  mc.attention.hidden_size = static_cast<int>(2 * H);
  mc.source_eos = true;
  // Tied matrices are copied: the output layer, and each side's embeddings, as separate weights.
  const bool tie_output = tied || tied_all;

  // marian-decoder's defaults (src/common/config_parser.cpp): beam 12, normalize 0, word-penalty 0,
  // max-length-factor 3, n-best off, <unk> suppressed unless --allow-unk.
  m.decode.beam_size = 12;
  m.decode.n_best = 1;
  m.decode.length_penalty = 0.0;
  m.decode.word_penalty = 0.0;
  m.decode.coverage_penalty = 0.0;
  m.decode.min_length = 0;
  m.decode.max_length = 0;
  m.decode.max_length_ratio = 3.0;
  m.decode.ban_unk = true;
  m.decode.search_rules = SearchRules::marian;

  // --- weights
  std::set<std::string> used{"special:model.yml"};
  auto take = [&](const std::string& name) {
    auto it = npz.arrays.find(name);
    if (it == npz.arrays.end()) throw InputError(where + ": no array '" + name + "' (the options and the weights disagree)");
    used.insert(name);
    return to_tensor(it->second, name);
  };
  auto row = [](const torch::Tensor& b) { return b.reshape({-1}); };
  // A Marian GRU (x [W Wx] + s [U Ux] + [b bx]) as PyTorch's: weight_ih [3H, in], weight_hh [3H, H],
  // bias_ih, bias_hh; `final` cells keep bx inside r (on the recurrent side). No W for a transition.
  struct Gru {
    torch::Tensor w_ih, w_hh, b_ih, b_hh;
  };
  auto gru = [&](const std::string& prefix, bool has_input, bool final) {
    Gru g;
    if (has_input) g.w_ih = torch::cat({take(prefix + "_W"), take(prefix + "_Wx")}, 1).t().contiguous();
    g.w_hh = torch::cat({take(prefix + "_U"), take(prefix + "_Ux")}, 1).t().contiguous();
    const auto b = row(take(prefix + "_b")), bx = row(take(prefix + "_bx"));
    const auto zeros = torch::zeros_like(bx);
    g.b_ih = final ? torch::cat({b, zeros}) : torch::cat({b, bx});
    g.b_hh = final ? torch::cat({torch::zeros_like(b), bx}) : torch::zeros({3 * bx.size(0)});
    return g;
  };
  auto& out = m.weights;
  const std::string src_emb = tied_all || tied_src ? "Wemb" : "encoder_Wemb";
  const std::string tgt_emb = tied_all || tied_src ? "Wemb" : "decoder_Wemb";
  out["src_embed.weight"] = take(src_emb).clone();
  auto tgt_embed = take(tgt_emb);
  for (int64_t l = 0; l < enc_depth; ++l) {
    // Marian's layer i: encoder_bi (i = 1), encoder_bi_l<i>_cell1 above; encoder_bi_r... backward.
    const auto suffix = l == 0 ? std::string() : "_l" + std::to_string(l + 1) + "_cell1";
    for (const auto& [dir, prefix] : {std::pair{"fwd_", "encoder_bi"}, std::pair{"bwd_", "encoder_bi_r"}}) {
      const auto g = gru(prefix + suffix, true, false);
      const auto to = std::string("encoder.") + dir + std::to_string(l) + ".";
      out[to + "weight_ih_l0"] = g.w_ih;
      out[to + "weight_hh_l0"] = g.w_hh;
      out[to + "bias_ih_l0"] = g.b_ih;
      out[to + "bias_hh_l0"] = g.b_hh;
    }
  }
  auto stack = [&](const std::string& to, const Gru& g, const std::string& layer, bool first) {
    out[to + (first ? "w_static" : "w_ih_" + layer)] = g.w_ih;
    out[to + "b_ih_" + layer] = g.b_ih;
    out[to + "w_hh_" + layer] = g.w_hh;
    out[to + "b_hh_" + layer] = g.b_hh;
  };
  stack("decoder.rnn.", gru("decoder_cell1", true, false), "0", true);
  stack("decoder.second.", gru("decoder_cell2", true, true), "0", true);
  for (int64_t k = 3; k <= base_depth; ++k) {
    const auto g = gru("decoder_cell" + std::to_string(k), false, true);
    const auto n = std::to_string(k - 3);
    out["decoder.transition_w_hh_" + n] = g.w_hh;
    out["decoder.transition_b_ih_" + n] = g.b_ih;
    out["decoder.transition_b_hh_" + n] = g.b_hh;
  }
  for (int64_t l = 2; l <= dec_depth; ++l) {
    stack("decoder.above.", gru("decoder_l" + std::to_string(l) + "_cell1", true, false), std::to_string(l - 2), l == 2);
  }
  out["decoder.attention.w_a.weight"] = take("decoder_W_comb_att").t().contiguous();
  out["decoder.attention.w_a.bias"] = row(take("decoder_b_att"));
  out["decoder.attention.u_a.weight"] = take("decoder_Wc_att").t().contiguous();
  out["decoder.attention.v_a"] = row(take("decoder_U_att"));
  out["decoder.mean_bridge.weight"] = take("decoder_ff_state_W").t().contiguous();
  out["decoder.mean_bridge.bias"] = row(take("decoder_ff_state_b"));
  // ff_logit_l1's inputs are (E y_{t-1}, s_t, c_t), W0 W1 W2; attnmt's combine reads [s_t; c_t; E y_{t-1}].
  out["decoder.combine.weight"] =
      torch::cat({take("decoder_ff_logit_l1_W1"), take("decoder_ff_logit_l1_W2"), take("decoder_ff_logit_l1_W0")}, 0)
          .t()
          .contiguous();
  out["decoder.combine.bias"] =
      row(take("decoder_ff_logit_l1_b0")) + row(take("decoder_ff_logit_l1_b1")) + row(take("decoder_ff_logit_l1_b2"));
  // Marian >= 1.10 saves the output layer transposed, as decoder_ff_logit_l2_Wt [V, E].
  out["out_weight"] = tie_output                                     ? tgt_embed.clone()
                      : npz.arrays.count("decoder_ff_logit_l2_Wt") ? take("decoder_ff_logit_l2_Wt")
                                                                     : take("decoder_ff_logit_l2_W").t().contiguous();
  out["out_bias"] = opt.boolean("output-omit-bias", false) ? torch::zeros({tgt_embed.size(0)})
                                                           : row(take("decoder_ff_logit_l2_b"));
  out["tgt_embed.weight"] = tgt_embed;

  std::string unknown;
  size_t count = 0;
  for (const auto& [name, array] : npz.arrays) {
    if (used.count(name) || name.rfind("special:", 0) == 0) continue;
    if (count++ < 4) unknown += (unknown.empty() ? "" : ", ") + name;
  }
  if (count > 0) {
    throw InputError(where + ": " + std::to_string(count) + " array(s) of modules attnmt does not compute (" + unknown +
                     (count > 4 ? ", ..." : "") + ")");
  }
  const auto rows = [&](const char* name) { return out[name].size(0); };
  if (rows("src_embed.weight") != static_cast<int64_t>(m.src_tokens.size()) ||
      rows("tgt_embed.weight") != static_cast<int64_t>(m.tgt_tokens.size())) {
    throw InputError("--vocabs: the vocabularies have " + std::to_string(m.src_tokens.size()) + " / " +
                     std::to_string(m.tgt_tokens.size()) + " entries, the model's embeddings " +
                     std::to_string(rows("src_embed.weight")) + " / " + std::to_string(rows("tgt_embed.weight")) +
                     " rows: not the vocabularies it was trained with");
  }
  return m;
}

}  // namespace attnmt
