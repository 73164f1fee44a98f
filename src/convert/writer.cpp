// The common half of attnmt convert: a ToolkitModel as an attnmt model file.
#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "convert/convert.h"
#include "data/tokenizer.h"
#include "config/loader.h"
#include "data/toolkit_vocab.h"
#include "io/model_file.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/text_io.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

// A side's vocabulary in attnmt's order: the toolkit's pad, unk, bos, eos at 0..3 (a placeholder
// where it has none: OpenNMT-py's source vocabulary has no <s> </s>, Marian's none has <pad> or
// <s>), then its other tokens in its order. order[i] = the toolkit id of attnmt id i (-1 for a placeholder).
struct SideVocab {
  std::vector<std::string> tokens;
  std::vector<int64_t> order;
};

SideVocab attnmt_order(const std::vector<std::string>& toolkit, const SpecialIds& s, const std::string& side,
                       const std::string& toolkit_name) {
  const auto n = static_cast<int64_t>(toolkit.size());
  for (auto [id, what] : {std::pair{s.unk, "<unk>"}}) {
    if (id < 0 || id >= n) {
      throw InputError("the " + toolkit_name + " " + side + " vocabulary has no " + what + " token");
    }
  }
  std::set<std::string> names(toolkit.begin(), toolkit.end());
  auto placeholder = [&](std::string name) {
    while (names.count(name)) name = "<attnmt" + name.substr(1);
    names.insert(name);
    return name;
  };
  SideVocab v;
  const int64_t special[4] = {s.pad, s.unk, s.bos, s.eos};
  const char* fallback[4] = {"<pad>", "<unk>", "<s>", "</s>"};
  for (int i = 0; i < 4; ++i) {
    if (special[i] >= n) throw InputError("the " + toolkit_name + " " + side + " vocabulary's special id out of range");
    v.order.push_back(special[i]);
    v.tokens.push_back(special[i] >= 0 ? toolkit[static_cast<size_t>(special[i])] : placeholder(fallback[i]));
  }
  for (int64_t id = 0; id < n; ++id) {
    if (std::find(std::begin(special), std::end(special), id) != std::end(special)) continue;
    v.order.push_back(id);
    v.tokens.push_back(toolkit[static_cast<size_t>(id)]);
  }
  return v;
}

// Rows of `weight` (toolkit ids) in attnmt's order; placeholders get zeros.
torch::Tensor reorder_rows(const torch::Tensor& weight, const SideVocab& v, const std::string& name) {
  const auto toolkit_size = static_cast<int64_t>(std::count_if(v.order.begin(), v.order.end(), [](int64_t i) { return i >= 0; }));
  if (weight.size(0) != toolkit_size) {
    throw InputError("the weight '" + name + "' has " + std::to_string(weight.size(0)) + " rows but its vocabulary " +
                     std::to_string(toolkit_size) + " tokens");
  }
  auto padded = torch::cat({weight, torch::zeros_like(weight.slice(0, 0, 1))}, 0);  // row toolkit_size = zeros
  std::vector<int64_t> index;
  for (auto id : v.order) index.push_back(id >= 0 ? id : toolkit_size);
  return padded.index_select(0, torch::tensor(index, torch::kLong)).contiguous();
}

// The SentencePiece model of one side as a converted vocabulary; checks that the toolkit's
// tokens are its pieces (a model trained with another segmentation shares few of them).
std::shared_ptr<Tokenizer> side_tokenizer(const SideVocab& v, const std::string& spm_path, const std::string& flag,
                                          const std::string& vocab_name, double max_unknown) {
  std::string spm_bytes;
  if (!spm_path.empty()) {
    if (!fs::is_regular_file(spm_path)) throw InputError(flag + ": '" + spm_path + "' is not a file");
    spm_bytes = read_file(spm_path);
    const auto spm = Tokenizer::from_bytes(spm_bytes, "'" + spm_path + "' (" + flag + ")");
    std::set<std::string> pieces;
    for (int i = 0; i < spm.vocab_size(); ++i) pieces.insert(spm.piece(i));
    size_t missing = 0, regular = 0;
    std::string example;
    for (size_t i = 4; i < v.tokens.size(); ++i) {
      ++regular;
      if (!pieces.count(v.tokens[i])) {
        if (missing++ == 0) example = v.tokens[i];
      }
    }
    const double share = regular ? static_cast<double>(missing) / static_cast<double>(regular) : 0.0;
    if (share > max_unknown) {
      std::ostringstream msg;
      msg << flag << ": " << missing << " of the " << regular << " tokens of the " << vocab_name << " ("
          << static_cast<int>(share * 1000 + 0.5) / 10.0 << "%, e.g. '" << example << "') are not pieces of '" << spm_path
          << "': not the SentencePiece model the model was trained with (--max-unknown allows at most "
          << static_cast<int>(max_unknown * 1000 + 0.5) / 10.0 << "%)";
      throw InputError(msg.str());
    }
    if (missing > 0) {
      spdlog::info("[convert] {}: {} of the {} tokens of the {} are not pieces of {} (e.g. '{}'): they are never read",
               flag, missing, regular, vocab_name, spm_path, example);
    }
  }
  std::string bytes;
  try {
    bytes = ToolkitVocab::serialize(v.tokens, spm_bytes);
  } catch (const std::invalid_argument& e) {
    throw InputError("the " + vocab_name + ": " + e.what());
  }
  return std::make_shared<Tokenizer>(Tokenizer::from_bytes(bytes, "the " + vocab_name));
}

}  // namespace

void write_converted_model(ToolkitModel m, const ConvertOptions& options) {
  const auto src = attnmt_order(m.src_tokens, m.src_specials, "source", m.toolkit);
  const auto tgt = attnmt_order(m.tgt_tokens, m.tgt_specials, "target", m.toolkit);
  // Without a <s> (Marian's), the first target input is the placeholder's zero embedding.
  if (m.tgt_specials.eos < 0) throw InputError("the " + m.toolkit + " target vocabulary has no </s> token");
  for (auto [name, side] : {std::pair{"src_embed.weight", &src}, std::pair{"tgt_embed.weight", &tgt},
                            std::pair{"out_weight", &tgt}, std::pair{"out_bias", &tgt}}) {
    auto it = m.weights.find(name);
    if (it == m.weights.end()) throw RuntimeError(std::string("convert: no weight '") + name + "' was mapped");
    it->second = reorder_rows(it->second, *side, name);
  }
  // A target placeholder is never an output: no share of the softmax (its embedding stays zero:
  // Marian's first input).
  for (size_t i = 0; i < tgt.order.size(); ++i) {
    if (tgt.order[i] < 0) m.weights["out_bias"][static_cast<int64_t>(i)] = -std::numeric_limits<float>::infinity();
  }

  Config config;
  config.model = m.model;
  config.decode = m.decode;
  const bool same_tokens = src.tokens == tgt.tokens && m.src_spm == m.tgt_spm;
  Tokenizers tokenizers;
  tokenizers.src = side_tokenizer(src, m.src_spm, m.src_spm == options.src_spm ? "--src-spm" : "the source SentencePiece model",
                                  m.toolkit + " source vocabulary", options.max_unknown);
  tokenizers.tgt = same_tokens ? tokenizers.src
                               : side_tokenizer(tgt, m.tgt_spm, m.tgt_spm == options.tgt_spm ? "--tgt-spm" : "the target SentencePiece model",
                                                m.toolkit + " target vocabulary", options.max_unknown);
  config.tokenizer.type = m.src_spm.empty() && m.tgt_spm.empty() ? TokenizerType::none : TokenizerType::sentencepiece;
  config.tokenizer.shared = same_tokens;
  config.tokenizer.vocab_size = static_cast<int>(tgt.tokens.size());
  validate_config(config);

  VocabSizes vocab;
  vocab.src = static_cast<int64_t>(src.tokens.size());
  vocab.tgt = static_cast<int64_t>(tgt.tokens.size());
  Seq2Seq model(config.model, vocab);
  {
    torch::NoGradGuard no_grad;
    std::set<std::string> used;
    for (auto& p : model->named_parameters()) {
      auto it = m.weights.find(p.key());
      if (it == m.weights.end()) throw RuntimeError("convert: the " + m.toolkit + " model gives no weight for '" + p.key() + "'");
      if (it->second.sizes() != p.value().sizes()) {
        std::ostringstream msg;
        msg << "the weight for '" << p.key() << "' has shape " << it->second.sizes() << ", the model's is "
            << p.value().sizes() << " (its options and weights disagree)";
        throw InputError(msg.str());
      }
      p.value().copy_(it->second.to(torch::kFloat));
      used.insert(p.key());
    }
    for (const auto& [name, w] : m.weights) {
      if (!used.count(name)) throw RuntimeError("convert: weight '" + name + "' was mapped but the model has no such parameter");
    }
  }
  ModelAssets assets;
  assets.tokenizers = tokenizers;
  save_checkpoint(options.output, config, model, nullptr, TrainingProgress{}, assets);
}

std::string convert_model(const ConvertOptions& options) {
  if (options.from != "opennmt-py" && options.from != "joeynmt" && options.from != "fairseq" && options.from != "marian") {
    throw InputError("--from: '" + options.from +
                     "' is not a toolkit attnmt converts (valid: opennmt-py, joeynmt, fairseq, marian)");
  }
  if (!options.data_dir.empty() && options.from != "fairseq") {
    throw InputError("--data-dir: only with --from fairseq (" + options.from + " models hold their vocabularies)");
  }
  if (!options.vocabs.empty() && options.from != "marian") {
    throw InputError("--vocabs: only with --from marian (" + options.from + " models hold their vocabularies)");
  }
  if (options.output.empty()) throw InputError("--output: required (the attnmt model file to write)");
  if (!(options.max_unknown >= 0 && options.max_unknown <= 1)) {
    throw InputError("--max-unknown: " + std::to_string(options.max_unknown) + " is not a share in [0, 1]");
  }
  std::error_code ec;
  if (fs::exists(options.source) && fs::exists(options.output) && fs::equivalent(options.source, options.output, ec)) {
    throw InputError("--output: '" + options.output + "' is the model being converted");
  }
  auto model = options.from == "opennmt-py" ? read_opennmt(options)
               : options.from == "fairseq"  ? read_fairseq(options)
               : options.from == "marian"   ? read_marian(options)
                                            : read_joeynmt(options);
  const auto toolkit = model.toolkit;
  const auto& mc = model.model;
  std::ostringstream summary;
  summary << toolkit << " model: " << (mc.encoder.bidirectional ? "bidirectional " : "") << name_of(mc.encoder.rnn) << " encoder "
          << mc.encoder.layers << "x" << mc.encoder.hidden_size << ", " << name_of(mc.decoder.rnn) << " decoder "
          << mc.decoder.layers << "x" << mc.decoder.hidden_size << ", attention " << mc.attention.type
          << ", init " << name_of(mc.decoder.init) << ", " << model.src_tokens.size() << "/" << model.tgt_tokens.size()
          << " tokens, search rules " << name_of(model.decode.search_rules) << " -> " << options.output;
  write_converted_model(std::move(model), options);
  return summary.str();
}

}  // namespace attnmt
