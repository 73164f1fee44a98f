#include "convert/checkpoint_reader.h"

#include <cctype>
#include <filesystem>

#include "pyformat/pickle.h"
#include "pyformat/safetensors.h"
#include "pyformat/torch_file.h"
#include "util/error.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

torch::Tensor to_torch(const TensorRef& t, const std::string& name) {
  auto values = to_float32_contiguous(t, name);
  return torch::from_blob(values.data(), t.shape, torch::kFloat).clone();
}

OptionValue option_value(const PyValue& v, int depth = 0) {
  OptionValue out;
  switch (v.kind()) {
    case PyKind::Bool:
      out.kind = OptionValue::kBool;
      out.b = v.as_bool();
      break;
    case PyKind::Int:
      out.kind = OptionValue::kInt;
      out.i = v.as_int();
      break;
    case PyKind::Float:
      out.kind = OptionValue::kFloat;
      out.f = v.as_float();
      break;
    case PyKind::String:
      out.kind = OptionValue::kString;
      out.s = v.as_string();
      break;
    case PyKind::List:
    case PyKind::Tuple:
      out.kind = OptionValue::kList;
      if (depth < 8) {
        for (const auto& item : v.as_list()) out.list.push_back(option_value(item, depth + 1));
      }
      break;
    default:
      break;  // None, and what an option never is (objects, tensors): as if unset
  }
  return out;
}

// An argparse.Namespace (or a plain dict) of options.
ToolkitOptions namespace_options(const PyValue& opt, const std::string& where) {
  std::map<std::string, OptionValue> values;
  const PyValue dict = opt.kind() == PyKind::Dict ? opt : opt.state();
  if (dict.kind() != PyKind::Dict) opt.fail("not an options namespace (" + describe(opt, 1) + ")");
  for (const auto& [key, value] : dict.items()) {
    if (key.kind() == PyKind::String) values[key.as_string()] = option_value(value);
  }
  return ToolkitOptions(std::move(values), where);
}

std::vector<std::string> string_list(const PyValue& list) {
  std::vector<std::string> out;
  for (const auto& item : list.as_list()) out.push_back(item.as_string());
  return out;
}

int64_t index_of(const std::vector<std::string>& tokens, const std::string& token) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == token) return static_cast<int64_t>(i);
  }
  return -1;
}

SpecialIds specials_of(const std::vector<std::string>& tokens, const std::string& pad, const std::string& unk,
                       const std::string& bos, const std::string& eos) {
  SpecialIds s;
  s.pad = index_of(tokens, pad);
  s.unk = index_of(tokens, unk);
  s.bos = bos.empty() ? -1 : index_of(tokens, bos);
  s.eos = eos.empty() ? -1 : index_of(tokens, eos);
  return s;
}

// A torchtext Field's vocabulary and special tokens (OpenNMT-py 2.x).
void read_field(const PyValue& field, std::vector<std::string>& tokens, SpecialIds& specials) {
  tokens = string_list(field.attr("vocab").attr("itos"));
  auto token = [&](const char* name, const char* fallback) {
    if (!field.has_attr(name)) return std::string(fallback);
    const auto v = field.attr(name);
    return v.is_none() ? std::string() : v.as_string();
  };
  specials = specials_of(tokens, token("pad_token", "<blank>"), token("unk_token", "<unk>"),
                         token("init_token", ""), token("eos_token", ""));
}

void add_state_dict(const PyValue& dict, const std::string& prefix, std::map<std::string, torch::Tensor>& out) {
  if (dict.kind() != PyKind::Dict) dict.fail("not a state dict (" + describe(dict, 1) + ")");
  for (const auto& [key, value] : dict.items()) {
    if (key.kind() != PyKind::String || value.kind() != PyKind::Tensor) continue;
    out[prefix + key.as_string()] = to_torch(value.as_tensor(), prefix + key.as_string());
  }
}

}  // namespace

OpenNMTCheckpoint read_opennmt_checkpoint(const std::string& path) {
  fs::path pt(path), weights_file;
  if (pt.extension() == ".safetensors") {
    weights_file = pt;
    pt.replace_extension("");  // model.safetensors -> model.pt; a shard model.00.safetensors too
    if (const auto shard = pt.extension().string();
        shard.size() == 3 && std::isdigit(static_cast<unsigned char>(shard[1])) && std::isdigit(static_cast<unsigned char>(shard[2]))) {
      pt.replace_extension("");
      weights_file.clear();  // every shard
    }
    pt.replace_extension(".pt");
    if (!fs::is_regular_file(pt)) {
      throw InputError("'" + path + "': an OpenNMT-py 3.x weights file needs its checkpoint '" + pt.string() +
                       "' beside it (its vocabulary and options)");
    }
  }
  if (!fs::is_regular_file(pt)) throw InputError("'" + pt.string() + "': no such file");
  const auto root = load_torch_file(pt.string()).object;
  const std::string where = "'" + pt.string() + "'";
  if (root.kind() != PyKind::Dict || !root.has("vocab") || !root.has("opt")) {
    std::string hint;
    if (root.kind() == PyKind::Dict && root.has("model_state")) hint = " (a Joey NMT checkpoint? convert its directory with --from joeynmt)";
    throw InputError(where + ": not an OpenNMT-py checkpoint: it has no 'opt' and 'vocab'" + hint);
  }
  OpenNMTCheckpoint c;
  c.opt = namespace_options(root.get("opt"), where);
  const auto vocab = root.get("vocab");
  if (vocab.kind() == PyKind::Dict && vocab.has("src") &&
      (vocab.get("src").kind() == PyKind::List || vocab.get("src").kind() == PyKind::Tuple)) {
    // 3.x: plain token lists; the specials are OpenNMT-py's default tokens.
    c.version = "OpenNMT-py 3.x";
    c.major_version = 3;
    c.src_tokens = string_list(vocab.get("src"));
    c.tgt_tokens = string_list(vocab.get("tgt"));
    if (vocab.has("src_feats") && vocab.get("src_feats").kind() == PyKind::List) {
      c.source_features = static_cast<int>(vocab.get("src_feats").size());
    }
    if (vocab.has("data_task") && vocab.get("data_task").kind() == PyKind::String &&
        vocab.get("data_task").as_string() != "seq2seq") {
      throw InputError(where + ": an OpenNMT-py '" + vocab.get("data_task").as_string() +
                       "' model: attnmt converts sequence-to-sequence models");
    }
    c.src_specials = specials_of(c.src_tokens, "<blank>", "<unk>", "", "");
    c.tgt_specials = specials_of(c.tgt_tokens, "<blank>", "<unk>", "<s>", "</s>");
  } else if (vocab.kind() == PyKind::Dict && vocab.has("src") && vocab.has("tgt")) {
    // 2.x: torchtext fields; each side a TextMultiField whose first field holds the tokens.
    c.version = "OpenNMT-py 2.x";
    auto side = [&](const char* name, std::vector<std::string>& tokens, SpecialIds& specials) {
      const auto multi = vocab.get(name);
      const auto fields = multi.attr("fields").as_list();
      if (fields.empty()) multi.fail("a field without sub-fields");
      read_field(fields.front().at(1), tokens, specials);
      return static_cast<int>(fields.size()) - 1;
    };
    c.source_features = side("src", c.src_tokens, c.src_specials);
    side("tgt", c.tgt_tokens, c.tgt_specials);
  } else if (vocab.kind() == PyKind::List) {
    // 1.x: a list of (side, torchtext Vocab) pairs.
    c.version = "OpenNMT-py 1.x";
    c.major_version = 1;
    for (const auto& pair : vocab.as_list()) {
      const auto name = pair.at(0).as_string();
      if (name == "src") c.src_tokens = string_list(pair.at(1).attr("itos"));
      if (name == "tgt") c.tgt_tokens = string_list(pair.at(1).attr("itos"));
      if (name.rfind("src_feat", 0) == 0) ++c.source_features;
    }
    c.src_specials = specials_of(c.src_tokens, "<blank>", "<unk>", "", "");
    c.tgt_specials = specials_of(c.tgt_tokens, "<blank>", "<unk>", "<s>", "</s>");
  } else {
    vocab.fail("not a vocabulary OpenNMT-py writes (" + describe(vocab, 1) + ")");
  }
  if (c.src_tokens.empty() || c.tgt_tokens.empty()) throw InputError(where + ": an empty vocabulary");

  c.root = root;
  c.pt_file = pt.string();
  c.weights_file = weights_file.string();
  return c;
}

void read_opennmt_weights(OpenNMTCheckpoint& c) {
  const auto& root = c.root;
  const fs::path pt(c.pt_file);
  const std::string where = "'" + c.pt_file + "'";
  if (root.has("model") && !root.get("model").is_none()) add_state_dict(root.get("model"), "", c.weights);
  if (root.has("generator") && !root.get("generator").is_none()) add_state_dict(root.get("generator"), "generator.", c.weights);
  if (!c.weights.empty()) return;
  // 3.x saved with safetensors: the weights are in <name>.safetensors beside the checkpoint, or
  // in shards <name>.00.safetensors, <name>.01.safetensors, ...
  std::vector<fs::path> files;
  if (!c.weights_file.empty()) {
    files.push_back(c.weights_file);
  } else if (fs::path one = fs::path(pt).replace_extension(".safetensors"); fs::is_regular_file(one)) {
    files.push_back(one);
  } else {
    for (int shard = 0; shard < 1000; ++shard) {
      const auto name = pt.stem().string() + "." + (shard < 10 ? "0" : "") + std::to_string(shard) + ".safetensors";
      const auto file = pt.parent_path() / name;
      if (!fs::is_regular_file(file)) break;
      files.push_back(file);
    }
  }
  if (files.empty()) {
    throw InputError(where + ": the checkpoint holds no weights, and there is no '" +
                     fs::path(pt).replace_extension(".safetensors").string() + "' (or .00.safetensors) beside it");
  }
  for (const auto& file : files) {
    for (const auto& [name, tensor] : load_safetensors(file.string()).tensors) c.weights[name] = to_torch(tensor, name);
  }
}

FairseqCheckpoint read_fairseq_checkpoint(const std::string& path) {
  if (!fs::is_regular_file(path)) throw InputError("'" + path + "': no such file");
  const auto root = load_torch_file(path).object;
  const std::string where = "'" + path + "'";
  const bool has_cfg = root.kind() == PyKind::Dict && root.has("cfg") && !root.get("cfg").is_none();
  const bool has_args = root.kind() == PyKind::Dict && root.has("args") && !root.get("args").is_none();
  if (root.kind() != PyKind::Dict || !root.has("model") || (!has_cfg && !has_args)) {
    std::string hint;
    if (root.kind() == PyKind::Dict && root.has("opt") && root.has("vocab")) hint = " (an OpenNMT-py checkpoint? use --from opennmt-py)";
    if (root.kind() == PyKind::Dict && root.has("model_state")) hint = " (a Joey NMT checkpoint? use --from joeynmt)";
    throw InputError(where + ": not a fairseq checkpoint: it has no 'model' with 'cfg' or 'args'" + hint);
  }
  FairseqCheckpoint c;
  if (has_cfg) {
    const auto cfg = root.get("cfg");
    if (cfg.kind() != PyKind::Dict || !cfg.has("model") || cfg.get("model").is_none()) {
      throw InputError(where + ": its 'cfg' has no 'model' (a fairseq checkpoint without its model's options)");
    }
    c.model = namespace_options(cfg.get("model"), where);
    c.task = cfg.has("task") && !cfg.get("task").is_none() ? namespace_options(cfg.get("task"), where) : c.model;
    if (cfg.has("criterion") && !cfg.get("criterion").is_none()) {
      c.criterion = namespace_options(cfg.get("criterion"), where).str("_name", "");
    }
    if (c.criterion.empty()) c.criterion = c.model.str("criterion", "");
  } else {
    c.model = namespace_options(root.get("args"), where);
    c.task = c.model;
    c.criterion = c.model.str("criterion", "");
  }
  add_state_dict(root.get("model"), "", c.weights);
  return c;
}

std::map<std::string, torch::Tensor> read_state_dict(const std::string& path, const std::string& key) {
  if (!fs::is_regular_file(path)) throw InputError("'" + path + "': no such file");
  const auto root = load_torch_file(path).object;
  if (root.kind() != PyKind::Dict || !root.has(key)) {
    throw InputError("'" + path + "': not a checkpoint with a '" + key + "' (" + describe(root, 1) + ")");
  }
  std::map<std::string, torch::Tensor> out;
  add_state_dict(root.get(key), "", out);
  return out;
}

}  // namespace attnmt
