// YAML <-> Config. The only file in attnmt that includes yaml-cpp.
//
// Every key is declared once, in kFields below, as the dotted path of its struct member; the
// parser, the writer, config_keys() and the "did you mean" suggestions all read that table, so
// a new option is one line here plus its field (and comment) in config.h.
#include "config/loader.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <variant>

#include "config/decode_rules.h"
#include "config/option_tree.h"
#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {
namespace {

// ---------------------------------------------------------------------------------------------
// The key table

using FieldRef = std::variant<int*, std::uint64_t*, double*, bool*, std::string*>;

struct Field {
  const char* key;             // dotted path, e.g. "model.encoder.hidden_size"
  FieldRef (*ref)(Config& c);  // the member it names
};

// The stringised member path *is* the key, so the two cannot drift apart.
// clang-format off
#define ATTNMT_FIELD(path) Field{#path, [](Config& c) -> FieldRef { return &c.path; }}
// clang-format on

// In the order of config.h (config_to_yaml writes them in this order).
const Field kFields[] = {
    ATTNMT_FIELD(data.train.src),
    ATTNMT_FIELD(data.train.tgt),
    ATTNMT_FIELD(data.valid.src),
    ATTNMT_FIELD(data.valid.tgt),
    ATTNMT_FIELD(data.test.src),
    ATTNMT_FIELD(data.test.tgt),
    ATTNMT_FIELD(data.max_length),
    ATTNMT_FIELD(data.cache_dir),
    ATTNMT_FIELD(data.batch_window),
    ATTNMT_FIELD(data.src_bpe_dropout),
    ATTNMT_FIELD(data.tgt_bpe_dropout),

    ATTNMT_FIELD(tokenizer.type),
    ATTNMT_FIELD(tokenizer.model_type),
    ATTNMT_FIELD(tokenizer.vocab_size),
    ATTNMT_FIELD(tokenizer.shared),
    ATTNMT_FIELD(tokenizer.character_coverage),
    ATTNMT_FIELD(tokenizer.input_sentence_size),
    ATTNMT_FIELD(tokenizer.user_defined_symbols),

    ATTNMT_FIELD(model.embedding_size),
    ATTNMT_FIELD(model.encoder.rnn),
    ATTNMT_FIELD(model.encoder.bidirectional),
    ATTNMT_FIELD(model.encoder.layers),
    ATTNMT_FIELD(model.encoder.hidden_size),
    ATTNMT_FIELD(model.encoder.dropout),
    ATTNMT_FIELD(model.encoder.word_dropout),
    ATTNMT_FIELD(model.encoder.self_attention.layers),
    ATTNMT_FIELD(model.encoder.self_attention.heads),
    ATTNMT_FIELD(model.encoder.self_attention.dropout),
    ATTNMT_FIELD(model.encoder.embedding_size),
    ATTNMT_FIELD(model.decoder.rnn),
    ATTNMT_FIELD(model.decoder.style),
    ATTNMT_FIELD(model.decoder.layers),
    ATTNMT_FIELD(model.decoder.hidden_size),
    ATTNMT_FIELD(model.decoder.input_feeding),
    ATTNMT_FIELD(model.decoder.dropout),
    ATTNMT_FIELD(model.decoder.word_dropout),
    ATTNMT_FIELD(model.decoder.self_attention),
    ATTNMT_FIELD(model.decoder.init),
    ATTNMT_FIELD(model.decoder.combine_bias),
    ATTNMT_FIELD(model.decoder.combine_tanh),
    ATTNMT_FIELD(model.attention.type),
    ATTNMT_FIELD(model.attention.hidden_size),
    ATTNMT_FIELD(model.attention.window),
    ATTNMT_FIELD(model.attention.score),
    ATTNMT_FIELD(model.attention.max_positions),
    ATTNMT_FIELD(model.attention.hard_decode),
    ATTNMT_FIELD(model.attention.score_bias_init),
    ATTNMT_FIELD(model.attention.heads),
    ATTNMT_FIELD(model.attention.dropout),
    ATTNMT_FIELD(model.attention.max_area),
    ATTNMT_FIELD(model.attention.chunk_size),
    ATTNMT_FIELD(model.attention.coverage),
    ATTNMT_FIELD(model.attention.coverage_loss),
    ATTNMT_FIELD(model.tie_embeddings),
    ATTNMT_FIELD(model.share_embeddings),
    ATTNMT_FIELD(model.source_eos),

    ATTNMT_FIELD(train.save_dir),
    ATTNMT_FIELD(train.batch_size),
    ATTNMT_FIELD(train.batch_tokens),
    ATTNMT_FIELD(train.max_steps),
    ATTNMT_FIELD(train.max_epochs),
    ATTNMT_FIELD(train.max_minutes),
    ATTNMT_FIELD(train.optimizer),
    ATTNMT_FIELD(train.learning_rate),
    ATTNMT_FIELD(train.clip_norm),
    ATTNMT_FIELD(train.label_smoothing),
    ATTNMT_FIELD(train.lr_schedule),
    ATTNMT_FIELD(train.warmup_steps),
    ATTNMT_FIELD(train.lr_decay),
    ATTNMT_FIELD(train.lr_patience),
    ATTNMT_FIELD(train.min_learning_rate),
    ATTNMT_FIELD(train.weight_decay),
    ATTNMT_FIELD(train.ema_decay),
    ATTNMT_FIELD(train.valid_every),
    ATTNMT_FIELD(train.valid_metric),
    ATTNMT_FIELD(train.valid_beam_size),
    ATTNMT_FIELD(train.patience),
    ATTNMT_FIELD(train.keep_checkpoints),
    ATTNMT_FIELD(train.report_every),
    ATTNMT_FIELD(train.precision),
    ATTNMT_FIELD(train.allow_slow_bf16),
    ATTNMT_FIELD(train.replicas),
    ATTNMT_FIELD(train.seed),

    ATTNMT_FIELD(decode.beam_size),
    ATTNMT_FIELD(decode.length_penalty),
    ATTNMT_FIELD(decode.coverage_penalty),
    ATTNMT_FIELD(decode.max_length_ratio),
    ATTNMT_FIELD(decode.batch_size),
    ATTNMT_FIELD(decode.workers),
    ATTNMT_FIELD(decode.precision),
    ATTNMT_FIELD(decode.packed_weights),
    ATTNMT_FIELD(decode.n_best),
    ATTNMT_FIELD(decode.shortlist),
    ATTNMT_FIELD(decode.shortlist_first),
    ATTNMT_FIELD(decode.shortlist_best),
    ATTNMT_FIELD(decode.min_length),
    ATTNMT_FIELD(decode.max_length),
    ATTNMT_FIELD(decode.no_repeat_ngram_size),
    ATTNMT_FIELD(decode.sampling),
    ATTNMT_FIELD(decode.temperature),
    ATTNMT_FIELD(decode.top_k),
    ATTNMT_FIELD(decode.top_p),
    ATTNMT_FIELD(decode.epsilon),
    ATTNMT_FIELD(decode.seed),
    ATTNMT_FIELD(decode.mbr),
    ATTNMT_FIELD(decode.mbr_candidates),
    ATTNMT_FIELD(decode.search_rules),
    ATTNMT_FIELD(decode.ban_unk),

    ATTNMT_FIELD(distributed.backend),
    ATTNMT_FIELD(distributed.timeout),
    ATTNMT_FIELD(distributed.bucket_mb),

    ATTNMT_FIELD(threads),
    ATTNMT_FIELD(gemm),
    ATTNMT_FIELD(device),
};

#undef ATTNMT_FIELD

// Comment lines written by config_to_yaml before a section (or top-level key).
struct KeyComment {
  const char* key;
  const char* text;
};
const KeyComment kComments[] = {
    {"data",
     "Parallel corpora, one sentence per line (plain or .gz); paths relative to the "
     "working directory"},
    {"tokenizer", "SentencePiece subword model(s), trained on data.train"},
    {"model", "Embeddings, RNN encoder and decoder, attention (see docs/config.md)"},
    {"train", "Optimisation, validation, checkpoints"},
    {"decode", "Beam search (translate, and the test set at the end of training)"},
    {"distributed", "Data-parallel training (attnmt train --nproc N | --distributed)"},
    {"threads", "Runtime"},
};

const Field* find_field(std::string_view key) {
  for (const Field& f : kFields) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

// Every proper prefix of a key ("model", "model.encoder", ...), in table order.
const std::vector<std::string>& section_keys() {
  static const std::vector<std::string> sections = [] {
    std::vector<std::string> out;
    for (const Field& f : kFields) {
      std::string_view key = f.key;
      for (size_t dot = key.find('.'); dot != std::string_view::npos;
           dot = key.find('.', dot + 1)) {
        std::string prefix(key.substr(0, dot));
        if (std::find(out.begin(), out.end(), prefix) == out.end()) out.push_back(prefix);
      }
    }
    return out;
  }();
  return sections;
}

bool is_section(std::string_view key) {
  const auto& sections = section_keys();
  return std::find(sections.begin(), sections.end(), key) != sections.end();
}

// ---------------------------------------------------------------------------------------------
// "Did you mean": closest key by edit distance

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// neighbours ("modle" -> "model" is 1) each cost 1.
size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t width = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * width);
  auto at = [&](size_t i, size_t j) -> size_t& { return d[i * width + j]; };
  for (size_t i = 0; i <= a.size(); ++i) at(i, 0) = i;
  for (size_t j = 0; j <= b.size(); ++j) at(0, j) = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(a.size(), b.size());
}

std::string_view leaf_of(std::string_view key) {
  size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

// A typo in the full path (model.encoder.hiden_size), else a known leaf name under the wrong
// section (model.hidden_size -> model.encoder.hidden_size). Empty if nothing is close.
std::string suggest_key(const std::string& unknown) {
  std::vector<std::string> candidates = config_keys();
  const auto& sections = section_keys();
  candidates.insert(candidates.end(), sections.begin(), sections.end());

  const std::string_view leaf = leaf_of(unknown);
  const size_t threshold = std::max<size_t>(1, std::min<size_t>(3, leaf.size() / 3));

  std::string best;
  size_t best_score = threshold + 1;
  for (const auto& candidate : candidates) {
    size_t d = edit_distance(unknown, candidate);
    if (d < best_score) best_score = d, best = candidate;
  }
  if (!best.empty()) return best;

  size_t best_full = SIZE_MAX;
  best_score = threshold + 1;
  for (const auto& candidate : candidates) {
    size_t d = edit_distance(leaf, leaf_of(candidate));
    size_t full = edit_distance(unknown, candidate);
    if (d > threshold) continue;
    if (d < best_score || (d == best_score && full < best_full)) {
      best_score = d, best_full = full, best = candidate;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Where a value came from (the YAML file or one override), for error messages

// A config's first key may name the config it builds on (config inheritance).
constexpr const char* kBaseKey = "base";

struct Source {
  std::string label;  // "'cfg.yaml'" or "override 'train.max_steps=abc'"
  bool has_lines;     // YAML marks are meaningful (a file, not a one-line override)
};

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

std::string at_line(const Source& source, const YAML::Mark& mark) {
  if (!source.has_lines || mark.is_null() || mark.line < 0) return "";
  return " at line " + std::to_string(mark.line + 1);
}

std::string line_suffix(const Source& source, const YAML::Mark& mark) {
  if (!source.has_lines || mark.is_null() || mark.line < 0) return "";
  return " (line " + std::to_string(mark.line + 1) + ")";
}

[[noreturn]] void throw_unknown_key(const std::string& key, const Source& source,
                                    const YAML::Mark& mark) {
  std::string message =
      "unknown key " + in_quotes(key) + " in " + source.label + at_line(source, mark);
  if ((find_field(key) || is_section(key)) && key.find('.') != std::string::npos) {
    message += " (write nested maps, not dotted keys)";
  } else if (std::string suggestion = suggest_key(key); !suggestion.empty()) {
    message += " (did you mean " + in_quotes(suggestion) + "?)";
  }
  throw InputError(message);
}

[[noreturn]] void throw_syntax_error(const Source& source, const YAML::Exception& e) {
  std::string where;
  if (!e.mark.is_null()) {
    where = " at line " + std::to_string(e.mark.line + 1) + ", column " +
            std::to_string(e.mark.column + 1);
  }
  throw InputError(source.label + ": YAML syntax error" + where + ": " + e.msg);
}

// What a non-scalar (or empty) node is, for "expected X, got Y".
std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "an empty value";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      return in_quotes(node.Scalar());
    default:
      return "nothing";
  }
}

// ---------------------------------------------------------------------------------------------
// Scalars: strict parsing (no octal/hex, no "2.5" for an integer)

std::string format_double(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  // The shortest text that reads back exactly, in fixed notation for exponents in [-4, 16)
  // like Python's repr: 0.0003, 0.1, 1e-05.
  char buffer[400];
  auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  const char* e = std::find(buffer, result.ptr, 'e');  // "3e-04", "1e+20"
  int exponent = 0;
  std::from_chars(e + (e[1] == '+' ? 2 : 1), result.ptr, exponent);
  if (exponent >= -4 && exponent < 16) {
    result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed);
  }
  std::string text(buffer, result.ptr);
  // Keep it a YAML float to other readers too ("1" -> "1.0").
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

template <class Int>
bool parse_integer(std::string_view text, Int& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '+') return false;
  auto result = std::from_chars(text.data(), text.data() + text.size(), out, /*base=*/10);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

bool parse_double(std::string_view text, double& out) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == ".inf" || lower == "+.inf" || lower == "-.inf" || lower == ".nan") {
    out = lower == ".nan" ? std::nan("") : lower[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  // Only decimal notation: from_chars alone would also take "inf", "nan(...)".
  if (text.empty() || text.find_first_not_of("0123456789+-.eE") != std::string_view::npos) {
    return false;
  }
  if (text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '+') return false;
  auto result =
      std::from_chars(text.data(), text.data() + text.size(), out, std::chars_format::general);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

void set_field(Config& config, const Field& field, const YAML::Node& node, const Source& source,
               const YAML::Mark& mark) {
  auto fail = [&](const char* expected) {
    throw InputError(source.label + ": " + field.key + ": expected " + expected + ", got " +
                     describe(node) + line_suffix(source, mark));
  };
  FieldRef ref = field.ref(config);
  if (auto* s = std::get_if<std::string*>(&ref)) {
    if (node.IsNull()) return void(**s = "");  // "src:" / "src: ~" = not set
    if (!node.IsScalar()) fail("a string");
    **s = node.Scalar();
    return;
  }
  if (!node.IsScalar()) {
    fail(std::holds_alternative<bool*>(ref)     ? "a boolean (true/false)"
         : std::holds_alternative<double*>(ref) ? "a number"
         : std::holds_alternative<int*>(ref)    ? "an integer"
                                                : "a non-negative integer");
  }
  const std::string& text = node.Scalar();
  if (auto* b = std::get_if<bool*>(&ref)) {
    // yaml-cpp's own rule: true/false, yes/no, on/off, y/n (any of lower, Title or UPPER case).
    if (!YAML::convert<bool>::decode(node, **b)) fail("a boolean (true/false)");
  } else if (auto* d = std::get_if<double*>(&ref)) {
    if (!parse_double(text, **d)) fail("a number");
  } else if (auto* i = std::get_if<int*>(&ref)) {
    if (!parse_integer(text, **i)) fail("an integer");
  } else if (auto* u = std::get_if<std::uint64_t*>(&ref)) {
    if (!parse_integer(text, **u)) fail("a non-negative integer");
  }
}

// data.train as a list of corpora: [{src: a.de, tgt: a.en, weight: 2}, {src: ..., tgt: ...}].
void set_train_list(Config& config, const YAML::Node& list, const Source& source, const YAML::Mark& mark) {
  if (list.size() == 0) throw InputError(source.label + ": data.train: the list of corpora is empty" + line_suffix(source, mark));
  std::vector<CorpusConfig> corpora;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string where = "data.train item " + std::to_string(i + 1);
    if (!item.IsMap()) {
      throw InputError(source.label + ": " + where + ": expected a map {src, tgt, weight}, got " + describe(item) +
                       line_suffix(source, item.Mark()));
    }
    CorpusConfig corpus;
    std::set<std::string> seen;
    for (const auto& entry : item) {
      const std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "";
      const YAML::Node& value = entry.second;
      const auto at = line_suffix(source, entry.first.Mark());
      if (!seen.insert(name).second) throw InputError(source.label + ": " + where + ": duplicate key " + in_quotes(name) + at);
      if (name == "src" || name == "tgt") {
        if (!value.IsScalar() || value.Scalar().empty()) {
          throw InputError(source.label + ": " + where + ": " + name + ": expected a path, got " + describe(value) + at);
        }
        (name == "src" ? corpus.src : corpus.tgt) = value.Scalar();
      } else if (name == "weight") {
        if (!value.IsScalar() || !parse_double(value.Scalar(), corpus.weight) || !(corpus.weight > 0) ||
            !std::isfinite(corpus.weight)) {
          throw InputError(source.label + ": " + where + ": weight must be a number > 0, got " + describe(value) + at);
        }
      } else {
        throw InputError(source.label + ": " + where + ": unknown key " + in_quotes(name) +
                         " (a corpus has src, tgt and weight)" + at);
      }
    }
    for (const char* side : {"src", "tgt"}) {
      if (!seen.count(side)) {
        throw InputError(source.label + ": " + where + ": missing " + side + line_suffix(source, item.Mark()));
      }
    }
    corpora.push_back(std::move(corpus));
  }
  config.data.train = corpora.front();
  config.data.more_train.assign(corpora.begin() + 1, corpora.end());
}

// Applies the keys of `map` (the contents of section `prefix`, "" for the top level).
void apply_map(Config& config, const YAML::Node& map, const std::string& prefix,
               const Source& source) {
  std::set<std::string> seen;
  for (const auto& entry : map) {
    const YAML::Node& key_node = entry.first;
    const YAML::Node& value = entry.second;
    const YAML::Mark mark = key_node.Mark();
    const std::string where = prefix.empty() ? "the top level" : in_quotes(prefix);
    if (!key_node.IsScalar()) {
      throw InputError(source.label + ": keys in " + where + " must be names, got " +
                       describe(key_node) + line_suffix(source, mark));
    }
    const std::string& name = key_node.Scalar();
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    if (!seen.insert(name).second) {
      throw InputError(source.label + ": duplicate key " + in_quotes(key) +
                       line_suffix(source, mark));
    }
    if (name.empty() || name.find('.') != std::string::npos) throw_unknown_key(key, source, mark);
    if (prefix.empty() && name == kBaseKey) continue;  // applied first, by apply_config_text

    if (const Field* field = find_field(key)) {
      set_field(config, *field, value, source, mark);
    } else if (key == "data.train" && value.IsSequence()) {
      set_train_list(config, value, source, mark);
    } else if (is_section(key)) {
      if (value.IsNull()) continue;  // "test:" with nothing under it
      if (!value.IsMap()) {
        throw InputError(source.label + ": " + key + ": expected a map of keys, got " +
                         describe(value) + line_suffix(source, mark));
      }
      apply_map(config, value, key, source);
    } else {
      throw_unknown_key(key, source, mark);
    }
  }
}

std::string trim(std::string_view s) {
  const char* space = " \t\r\n";
  size_t begin = s.find_first_not_of(space);
  if (begin == std::string_view::npos) return "";
  size_t end = s.find_last_not_of(space);
  return std::string(s.substr(begin, end - begin + 1));
}

void apply_override(Config& config, const std::string& override_text) {
  const size_t eq = override_text.find('=');
  const std::string key = eq == std::string::npos ? "" : trim(override_text.substr(0, eq));
  if (key.empty()) {
    throw InputError("malformed override " + in_quotes(override_text) +
                     ": expected key=value, e.g. train.max_steps=100");
  }
  const Source source{"override " + in_quotes(override_text), /*has_lines=*/false};
  const Field* field = find_field(key);
  if (!field && !is_section(key)) throw_unknown_key(key, source, YAML::Mark::null_mark());

  if (find_invalid_utf8(override_text) != std::string::npos || override_text.find('\0') != std::string::npos) {
    throw InputError(source.label + ": invalid UTF-8");  // yaml-cpp may loop forever on it
  }
  YAML::Node value;
  try {
    value = YAML::Load(override_text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw_syntax_error(source, e);
  }
  if (field) {
    set_field(config, *field, value, source, YAML::Mark::null_mark());
  } else if (key == "data.train" && value.IsSequence()) {
    set_train_list(config, value, source, YAML::Mark::null_mark());
  } else if (!value.IsNull()) {
    if (!value.IsMap()) {
      throw InputError(source.label + ": " + key + ": expected a map of keys, got " +
                       describe(value));
    }
    apply_map(config, value, key, source);
  }
}

// ---------------------------------------------------------------------------------------------
// Validation helpers: "<key> must be <what>, got <value>"

[[noreturn]] void invalid(const std::string& key, const std::string& what, const std::string& got) {
  throw InputError(key + " must be " + what + ", got " + got);
}

void check_int(bool ok, const char* key, const char* what, long long value) {
  if (!ok) invalid(key, what, std::to_string(value));
}

// Written as "ok" conditions so that NaN (every comparison false) is rejected too.
void check_double(bool ok, const char* key, const char* what, double value) {
  if (!ok || std::isnan(value)) invalid(key, what, format_double(value));
}

void check_one_of(const std::string& value, const char* key,
                  std::initializer_list<const char*> allowed) {
  for (const char* a : allowed) {
    if (value == a) return;
  }
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  invalid(key, "one of {" + list + "}", in_quotes(value));
}

bool is_device(const std::string& device) {
  if (device == "cpu" || device == "cuda") return true;
  if (device.rfind("cuda:", 0) != 0 || device.size() == 5) return false;
  return device.find_first_not_of("0123456789", 5) == std::string::npos;
}

void check_readable(const std::string& key, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(key + ": cannot read " + in_quotes(path) + ": " + std::strerror(EISDIR));
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    throw InputError(key + ": cannot read " + in_quotes(path) + ": " + std::strerror(errno));
  }
  std::fclose(file);
}

// Receives a document's parse events and ignores them (parse_config counts documents with it).
struct DocumentCounter : YAML::EventHandler {
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// "key=value", the value a YAML scalar as an override's value is parsed.
std::string setting(const Field& f, Config& config) {
  YAML::Emitter value;
  value << YAML::DoublePrecision(17);
  std::visit([&](auto* p) { value << *p; }, f.ref(config));
  return std::string(f.key) + "=" + value.c_str();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const Field& f : kFields) keys.emplace_back(f.key);
  return keys;
}

std::vector<std::string> config_settings(const Config& config_in, const std::string& prefix) {
  Config config = config_in;  // the field table hands out non-const pointers
  std::vector<std::string> out;
  for (const Field& f : kFields) {
    if (std::string_view(f.key).rfind(prefix, 0) == 0) out.push_back(setting(f, config));
  }
  return out;
}

namespace {

// The YAML text's one document, a map (InputError naming the source otherwise).
YAML::Node parse_root(const std::string& yaml_text, const Source& source) {
  // A config is text: bad bytes are rejected here, by line, before the parser sees them.
  if (const auto bad = find_invalid_utf8(yaml_text); bad != std::string::npos || yaml_text.find('\0') != std::string::npos) {
    const size_t at = std::min(bad, yaml_text.find('\0'));
    const size_t line = 1 + static_cast<size_t>(std::count(yaml_text.begin(), yaml_text.begin() + at, '\n'));
    const size_t line_start = yaml_text.rfind('\n', at == 0 ? 0 : at - 1);
    const size_t column = at - (line_start == std::string::npos || at == 0 ? 0 : line_start + 1);
    throw InputError(source.label + " line " + std::to_string(line) + ": " +
                     (yaml_text[at] == '\0' ? "NUL byte" : "invalid UTF-8") + " at byte " + std::to_string(column));
  }
  // The first document, and whether there is a second. Not YAML::LoadAll: yaml-cpp 0.7's parser
  // can return empty documents forever without consuming input (",#++" -- found by
  // tools/fuzz/fuzz_config), so documents are counted with a cap.
  YAML::Node root;
  size_t documents = 0;
  try {
    root = YAML::Load(yaml_text);
    std::istringstream in(yaml_text);
    YAML::Parser parser(in);
    DocumentCounter counter;
    while (documents < 2 && parser.HandleNextDocument(counter)) ++documents;
  } catch (const YAML::Exception& e) {
    throw_syntax_error(source, e);
  }
  if (documents > 1) {
    throw InputError(source.label + ": expected one YAML document, found more (separated by '---'?)");
  }
  if (root.IsNull()) {
    throw InputError(source.label +
                     ": the config is empty (expected a map of keys such as "
                     "'data:', 'model:', 'train:')");
  }
  if (!root.IsMap()) {
    throw InputError(source.label +
                     ": the top level must be a map of keys (such as 'data:', "
                     "'model:', 'train:'), got " +
                     describe(root));
  }
  return root;
}

std::string read_config_text(const std::string& path);

// Applies a config's text to `config`: first its `base:` chain (each path relative to the file
// that names it), then its own keys. `chain`: the files being applied, outermost first.
void apply_config_text(Config& config, const std::string& yaml_text, const std::string& source_name,
                       std::vector<std::string>& chain) {
  const Source source{in_quotes(source_name), /*has_lines=*/true};
  const YAML::Node root = parse_root(yaml_text, source);
  if (const YAML::Node base = root[kBaseKey]) {
    if (!base.IsScalar() || base.Scalar().empty()) {
      throw InputError(source.label + ": base: expected the path of a config file, got " + describe(base) +
                       line_suffix(source, base.Mark()));
    }
    const auto here = std::filesystem::path(source_name).parent_path();
    const auto path = (std::filesystem::path(base.Scalar()).is_absolute() ? std::filesystem::path(base.Scalar())
                                                                          : here / base.Scalar())
                          .lexically_normal()
                          .string();
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(path, ec).string();
    if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
      std::string names;
      for (const auto& c : chain) names += c + " -> ";
      throw InputError(source.label + ": base: a cycle of configs: " + names + canonical);
    }
    chain.push_back(canonical);
    apply_config_text(config, read_config_text(path), path, chain);
    chain.pop_back();
  }
  apply_map(config, root, /*prefix=*/"", source);
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides) {
  Config config;
  std::error_code ec;
  std::vector<std::string> chain{std::filesystem::weakly_canonical(source_name, ec).string()};
  apply_config_text(config, yaml_text, source_name, chain);
  for (const auto& override_text : overrides) apply_override(config, override_text);
  try {
    validate_config(config);
  } catch (const InputError& e) {
    throw InputError(in_quotes(source_name) + ": " + e.what());
  }
  return config;
}

namespace {

std::string read_config_text(const std::string& path) {
  auto cannot_read = [&](int error) {
    throw InputError("cannot read config " + in_quotes(path) + ": " + std::strerror(error));
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) cannot_read(EISDIR);
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) cannot_read(errno);
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(file);
  const int error = errno;
  std::fclose(file);
  if (failed) cannot_read(error);
  return text;
}

}  // namespace

namespace {

// The leaves of `map` (section `prefix`) as "key=value" settings, in file order.
void collect_settings(const YAML::Node& map, const std::string& prefix, const Source& source,
                      std::vector<std::string>& out) {
  for (const auto& entry : map) {
    const YAML::Mark mark = entry.first.Mark();
    if (!entry.first.IsScalar()) {
      throw InputError(source.label + ": keys must be names, got " + describe(entry.first) + line_suffix(source, mark));
    }
    const std::string key = prefix.empty() ? entry.first.Scalar() : prefix + "." + entry.first.Scalar();
    if (find_field(key)) {
      if (!entry.second.IsScalar()) {
        throw InputError(source.label + ": " + key + ": expected a value, got " + describe(entry.second) +
                         line_suffix(source, mark));
      }
      out.push_back(key + "=" + YAML::Dump(entry.second));
    } else if (is_section(key) && entry.second.IsMap()) {
      collect_settings(entry.second, key, source, out);
    } else if (!(is_section(key) && entry.second.IsNull())) {
      throw_unknown_key(key, source, mark);
    }
  }
}

}  // namespace

std::vector<std::string> settings_file(const std::string& path) {
  const Source source{in_quotes(path), /*has_lines=*/true};
  const YAML::Node root = parse_root(read_config_text(path), source);
  if (root[kBaseKey]) throw InputError(source.label + ": base: not in a settings file (give every key)");
  std::vector<std::string> out;
  collect_settings(root, "", source, out);
  return out;
}

Config load_config_file(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_config(read_config_text(path), path, overrides);
}

void validate_config(const Config& c) {
  check_int(c.data.max_length > 0, "data.max_length", "> 0", c.data.max_length);
  check_int(c.data.batch_window >= 0, "data.batch_window", ">= 0 (0 = the whole epoch)", c.data.batch_window);

  const TokenizerConfig& tok = c.tokenizer;
  check_one_of(tok.type, "tokenizer.type", {"sentencepiece", "none"});
  check_one_of(tok.model_type, "tokenizer.model_type", {"bpe", "unigram"});
  // SentencePiece reserves <unk>, <s>, </s>, <pad>: fewer pieces leave nothing to learn.
  check_int(tok.vocab_size >= 8, "tokenizer.vocab_size", ">= 8", tok.vocab_size);
  check_double(tok.character_coverage > 0 && tok.character_coverage <= 1,
               "tokenizer.character_coverage", "in (0, 1]", tok.character_coverage);
  check_int(tok.input_sentence_size >= 0, "tokenizer.input_sentence_size", ">= 0 (0 = every line)",
            tok.input_sentence_size);
  if (!tok.user_defined_symbols.empty() && tok.type != "sentencepiece") {
    invalid("tokenizer.user_defined_symbols", "empty with tokenizer.type none (it is a SentencePiece option)",
            in_quotes(tok.user_defined_symbols));
  }
  if (tok.user_defined_symbols.find_first_of(" \t") != std::string::npos) {
    invalid("tokenizer.user_defined_symbols", "comma-separated pieces without spaces", in_quotes(tok.user_defined_symbols));
  }

  for (const auto& [key, p] : {std::pair<const char*, double>{"data.src_bpe_dropout", c.data.src_bpe_dropout},
                                {"data.tgt_bpe_dropout", c.data.tgt_bpe_dropout}}) {
    check_double(p >= 0 && p < 1, key, "in [0, 1)", p);
    if (p > 0 && (tok.type != "sentencepiece" || tok.model_type != "bpe")) {
      invalid(key, "0 unless tokenizer.type is sentencepiece and tokenizer.model_type bpe (it drops BPE merges)",
              format_double(p));
    }
  }

  const ModelConfig& m = c.model;
  check_int(m.embedding_size > 0, "model.embedding_size", "> 0", m.embedding_size);
  if (m.share_embeddings && !tok.shared) {
    // Two tokenizers give the same id to different pieces: one matrix would mix them.
    invalid("model.share_embeddings", "false unless tokenizer.shared is true (one vocabulary for both sides)", "true");
  }
  check_one_of(m.encoder.rnn, "model.encoder.rnn", {"lstm", "gru"});
  check_int(m.encoder.layers > 0, "model.encoder.layers", "> 0", m.encoder.layers);
  check_int(m.encoder.hidden_size > 0, "model.encoder.hidden_size", "> 0", m.encoder.hidden_size);
  check_double(m.encoder.dropout >= 0 && m.encoder.dropout < 1, "model.encoder.dropout",
               "in [0, 1)", m.encoder.dropout);
  check_double(m.encoder.word_dropout >= 0 && m.encoder.word_dropout < 1, "model.encoder.word_dropout",
               "in [0, 1)", m.encoder.word_dropout);
  check_double(m.decoder.word_dropout >= 0 && m.decoder.word_dropout < 1, "model.decoder.word_dropout",
               "in [0, 1)", m.decoder.word_dropout);
  const SelfAttentionConfig& sa = m.encoder.self_attention;
  check_int(sa.layers >= 0, "model.encoder.self_attention.layers", ">= 0 (0 = none)", sa.layers);
  check_int(sa.heads >= 1, "model.encoder.self_attention.heads", ">= 1", sa.heads);
  check_double(sa.dropout >= 0 && sa.dropout < 1, "model.encoder.self_attention.dropout", "in [0, 1)", sa.dropout);
  if (const int out = m.encoder.hidden_size * (m.encoder.bidirectional ? 2 : 1); sa.layers > 0 && out % sa.heads != 0) {
    invalid("model.encoder.self_attention.heads",
            "a divisor of the encoder's output size " + std::to_string(out) + " (hidden_size x directions)",
            std::to_string(sa.heads));
  }
  check_one_of(m.decoder.rnn, "model.decoder.rnn", {"lstm", "gru"});
  check_one_of(m.decoder.style, "model.decoder.style", {"luong", "bahdanau"});
  check_int(m.decoder.layers > 0, "model.decoder.layers", "> 0", m.decoder.layers);
  check_int(m.decoder.hidden_size > 0, "model.decoder.hidden_size", "> 0", m.decoder.hidden_size);
  check_double(m.decoder.dropout >= 0 && m.decoder.dropout < 1, "model.decoder.dropout",
               "in [0, 1)", m.decoder.dropout);
  check_int(m.encoder.embedding_size >= 0, "model.encoder.embedding_size", ">= 0 (0 = model.embedding_size)",
            m.encoder.embedding_size);
  check_one_of(m.decoder.init, "model.decoder.init",
               {"bridge", "encoder", "encoder_relu_bridge", "tanh_bridge", "last", "zero"});
  {
    const int encoder_out = m.encoder.hidden_size * (m.encoder.bidirectional ? 2 : 1);
    if (m.decoder.init == "encoder" || m.decoder.init == "encoder_relu_bridge") {
      // Layer l starts from encoder layer l's final state: the stacks must match in depth, width and cell.
      if (m.encoder.layers != m.decoder.layers || encoder_out != m.decoder.hidden_size ||
          m.encoder.rnn != m.decoder.rnn) {
        invalid("model.decoder.init",
                "not '" + m.decoder.init + "' unless the encoder has the decoder's layers (" +
                    std::to_string(m.decoder.layers) + "), cell (" + m.decoder.rnn + ") and output size (" +
                    std::to_string(m.decoder.hidden_size) + ")",
                m.decoder.init);
      }
    }
    if (m.decoder.init == "last" && encoder_out != m.decoder.hidden_size && encoder_out != 2 * m.decoder.hidden_size) {
      invalid("model.decoder.init",
              "not 'last' unless the encoder's output size (" + std::to_string(encoder_out) +
                  ") is the decoder's hidden size or twice it",
              "last");
    }
  }
  // The name itself is checked by the attention registry (it knows the list).
  if (m.attention.type.empty()) invalid("model.attention.type", "set (an attention name)", "''");
  check_int(m.attention.hidden_size >= 0, "model.attention.hidden_size", ">= 0 (0 = decoder size)",
            m.attention.hidden_size);
  check_int(m.attention.window >= 1, "model.attention.window", ">= 1", m.attention.window);
  check_one_of(m.attention.score, "model.attention.score", {"dot", "scaled_dot", "general", "concat"});
  check_int(m.attention.max_positions >= 1, "model.attention.max_positions", ">= 1",
            m.attention.max_positions);
  check_double(std::isfinite(m.attention.score_bias_init) && std::abs(m.attention.score_bias_init) <= 20,
               "model.attention.score_bias_init", "in [-20, 20]", m.attention.score_bias_init);
  check_int(m.attention.heads >= 1, "model.attention.heads", ">= 1", m.attention.heads);
  check_double(m.attention.dropout >= 0 && m.attention.dropout < 1, "model.attention.dropout", "in [0, 1)",
               m.attention.dropout);
  check_int(m.attention.max_area >= 1, "model.attention.max_area", ">= 1", m.attention.max_area);
  check_int(m.attention.chunk_size >= 1, "model.attention.chunk_size", ">= 1", m.attention.chunk_size);
  check_double(m.attention.coverage_loss >= 0 && std::isfinite(m.attention.coverage_loss),
               "model.attention.coverage_loss", ">= 0", m.attention.coverage_loss);

  const TrainConfig& t = c.train;
  check_int(t.batch_size > 0, "train.batch_size", "> 0", t.batch_size);
  check_int(t.batch_tokens >= 0, "train.batch_tokens", ">= 0 (0 = batch by sentences)",
            t.batch_tokens);
  check_int(t.max_steps >= 0, "train.max_steps", ">= 0 (0 = no limit)", t.max_steps);
  check_int(t.max_epochs >= 0, "train.max_epochs", ">= 0 (0 = no limit)", t.max_epochs);
  check_double(t.max_minutes >= 0 && std::isfinite(t.max_minutes), "train.max_minutes",
               ">= 0 (0 = no limit)", t.max_minutes);
  check_one_of(t.optimizer, "train.optimizer", {"adam", "sgd"});
  check_double(t.learning_rate > 0 && std::isfinite(t.learning_rate), "train.learning_rate", "> 0",
               t.learning_rate);
  check_double(t.clip_norm >= 0 && std::isfinite(t.clip_norm), "train.clip_norm", ">= 0 (0 = off)",
               t.clip_norm);
  check_double(t.label_smoothing >= 0 && t.label_smoothing < 1, "train.label_smoothing",
               "in [0, 1)", t.label_smoothing);
  check_one_of(t.lr_schedule, "train.lr_schedule", {"plateau", "constant", "inverse_sqrt", "cosine"});
  check_int(t.warmup_steps >= 0, "train.warmup_steps", ">= 0 (0 = none)", t.warmup_steps);
  if (t.lr_schedule == "inverse_sqrt" && t.warmup_steps == 0) {
    invalid("train.warmup_steps", "> 0 with train.lr_schedule: inverse_sqrt (lr * sqrt(warmup / step))", "0");
  }
  if (t.lr_schedule == "cosine" && t.max_steps == 0) {
    invalid("train.max_steps", "> 0 with train.lr_schedule: cosine (the cosine ends at it)", "0");
  }
  if (t.lr_schedule == "cosine" && t.min_learning_rate > t.learning_rate) {
    invalid("train.min_learning_rate", "<= train.learning_rate with train.lr_schedule: cosine",
            format_double(t.min_learning_rate));
  }
  check_double(t.weight_decay >= 0 && t.weight_decay < 1, "train.weight_decay", "in [0, 1)", t.weight_decay);
  check_double(t.ema_decay >= 0 && t.ema_decay < 1, "train.ema_decay", "in [0, 1)", t.ema_decay);
  check_double(t.lr_decay > 0 && t.lr_decay <= 1, "train.lr_decay", "in (0, 1]", t.lr_decay);
  check_int(t.lr_patience >= 0, "train.lr_patience", ">= 0", t.lr_patience);
  check_double(t.min_learning_rate >= 0 && std::isfinite(t.min_learning_rate),
               "train.min_learning_rate", ">= 0", t.min_learning_rate);
  check_int(t.valid_every > 0, "train.valid_every", "> 0", t.valid_every);
  check_one_of(t.valid_metric, "train.valid_metric", {"bleu", "ppl"});
  if (t.precision == "int8") {
    throw InputError("train.precision: int8 is for decoding only (decode.precision: int8, or translate --precision "
                     "int8); training takes fp32 or bf16");
  }
  check_one_of(t.precision, "train.precision", {"fp32", "bf16"});
  check_int(t.replicas >= 0, "train.replicas", ">= 0 (0 = one per thread on a CPU)", t.replicas);
  check_int(t.valid_beam_size >= 1, "train.valid_beam_size", ">= 1", t.valid_beam_size);
  check_int(t.patience >= 0, "train.patience", ">= 0 (0 = off)", t.patience);
  check_int(t.keep_checkpoints >= 1, "train.keep_checkpoints", ">= 1", t.keep_checkpoints);
  check_int(t.report_every >= 1, "train.report_every", ">= 1", t.report_every);

  const DecodeConfig& d = c.decode;
  check_int(d.workers >= 0, "decode.workers", ">= 0 (0 = one per thread on a CPU)", d.workers);
  check_one_of(d.precision, "decode.precision", {"fp32", "bf16", "int8"});
  check_int(d.beam_size >= 1, "decode.beam_size", ">= 1", d.beam_size);
  check_double(d.length_penalty >= 0 && std::isfinite(d.length_penalty), "decode.length_penalty",
               ">= 0", d.length_penalty);
  check_double(d.coverage_penalty >= 0 && std::isfinite(d.coverage_penalty),
               "decode.coverage_penalty", ">= 0", d.coverage_penalty);
  check_double(d.max_length_ratio > 0 && std::isfinite(d.max_length_ratio),
               "decode.max_length_ratio", "> 0", d.max_length_ratio);
  check_int(d.batch_size >= 1, "decode.batch_size", ">= 1", d.batch_size);
  check_int(d.shortlist_first >= 0, "decode.shortlist_first", ">= 0", d.shortlist_first);
  check_int(d.shortlist_best >= 0, "decode.shortlist_best", ">= 0", d.shortlist_best);
  if (d.sampling) {  // n_best samples, not beams
    check_int(d.n_best >= 1, "decode.n_best", ">= 1", d.n_best);
  } else {
    check_int(d.n_best >= 1 && d.n_best <= d.beam_size, "decode.n_best",
              ("in [1, decode.beam_size=" + std::to_string(d.beam_size) + "]").c_str(), d.n_best);
  }
  check_int(d.min_length >= 0, "decode.min_length", ">= 0", d.min_length);
  check_int(d.max_length >= 0, "decode.max_length", ">= 0 (0 = no cap)", d.max_length);
  if (d.max_length > 0) {
    check_int(d.min_length <= d.max_length, "decode.min_length",
              ("<= decode.max_length=" + std::to_string(d.max_length)).c_str(), d.min_length);
  }
  check_int(d.no_repeat_ngram_size >= 0, "decode.no_repeat_ngram_size", ">= 0 (0 = off)", d.no_repeat_ngram_size);
  check_double(d.temperature > 0 && std::isfinite(d.temperature), "decode.temperature", "> 0", d.temperature);
  check_int(d.top_k >= 0, "decode.top_k", ">= 0 (0 = all)", d.top_k);
  check_double(d.top_p > 0 && d.top_p <= 1, "decode.top_p", "in (0, 1]", d.top_p);
  check_double(d.epsilon >= 0 && d.epsilon < 1, "decode.epsilon", "in [0, 1) (0 = off)", d.epsilon);
  check_one_of(d.mbr, "decode.mbr", {"none", "bleu", "chrf"});
  if (d.mbr != "none") {
    if (d.sampling) {
      check_int(d.mbr_candidates >= 2, "decode.mbr_candidates", ">= 2 (the samples compared) with decode.sampling",
                d.mbr_candidates);
    } else {
      check_int(d.mbr_candidates >= 0 && d.mbr_candidates <= d.beam_size, "decode.mbr_candidates",
                ("in [0, decode.beam_size=" + std::to_string(d.beam_size) + "] (0 = the whole beam)").c_str(),
                d.mbr_candidates);
    }
    const int candidates = mbr_candidate_count(d.sampling, d.mbr_candidates, d.beam_size);
    check_int(d.n_best <= candidates, "decode.n_best",
              ("<= the hypotheses MBR compares (" + std::to_string(candidates) + ", decode.mbr_candidates)").c_str(),
              d.n_best);
  }
  check_one_of(d.search_rules, "decode.search_rules", {"attnmt", "opennmt", "joeynmt"});
  if (d.search_rules == "attnmt") {
    if (d.ban_unk) invalid("decode.ban_unk", "false with decode.search_rules: attnmt (a rule of opennmt and joeynmt)", "true");
  } else {  // what the toolkits' rules (decoding/toolkit_search.h) do not do
    const std::string with = " with decode.search_rules: " + d.search_rules;
    if (d.search_rules == "opennmt") {  // joeynmt: 0 = Joey NMT's own default (decoding/toolkit_search.h)
      check_int(d.max_length > 0, "decode.max_length", ("> 0" + with + " (the toolkit's max_length, its only length limit)").c_str(),
                d.max_length);
    }
    auto refuse = [&](bool on, const char* key, const std::string& off, const std::string& got) {
      if (on) invalid(key, off + with + " (attnmt's rules only)", got);
    };
    refuse(d.sampling, "decode.sampling", "false", "true");
    refuse(d.shortlist, "decode.shortlist", "false", "true");
    refuse(d.coverage_penalty != 0, "decode.coverage_penalty", "0", format_double(d.coverage_penalty));
    refuse(d.no_repeat_ngram_size != 0, "decode.no_repeat_ngram_size", "0", std::to_string(d.no_repeat_ngram_size));
    refuse(d.mbr != "none", "decode.mbr", "none", in_quotes(d.mbr));
  }

  const DistributedConfig& dist = c.distributed;
  check_one_of(dist.backend, "distributed.backend", {"auto", "gloo", "nccl"});
  check_double(dist.timeout > 0 && std::isfinite(dist.timeout), "distributed.timeout", "> 0 (seconds)",
               dist.timeout);
  check_double(dist.bucket_mb > 0 && std::isfinite(dist.bucket_mb), "distributed.bucket_mb", "> 0",
               dist.bucket_mb);

  check_int(c.threads >= 0, "threads", ">= 0 (0 = number of cores)", c.threads);
  check_one_of(c.gemm, "gemm", {"auto", "onednn", "blas"});
  if (!is_device(c.device)) invalid("device", "cpu, cuda or cuda:N", in_quotes(c.device));
}

void check_training_inputs(const Config& config, const std::string& source_name) {
  const std::pair<const char*, const std::string*> required[] = {
      {"train.save_dir", &config.train.save_dir}, {"data.train.src", &config.data.train.src},
      {"data.train.tgt", &config.data.train.tgt}, {"data.valid.src", &config.data.valid.src},
      {"data.valid.tgt", &config.data.valid.tgt},
  };
  for (const auto& [key, value] : required) {
    if (value->empty()) {
      throw InputError(in_quotes(source_name) + ": missing required key " + in_quotes(key));
    }
  }
  // The test set is optional, but half of it is a mistake.
  const CorpusConfig& test = config.data.test;
  if (test.src.empty() != test.tgt.empty()) {
    throw InputError(in_quotes(source_name) + ": missing required key " +
                     in_quotes(test.src.empty() ? "data.test.src" : "data.test.tgt") +
                     " (data.test needs both sides)");
  }
  const std::pair<const char*, const std::string*> files[] = {
      {"data.train.src", &config.data.train.src}, {"data.train.tgt", &config.data.train.tgt},
      {"data.valid.src", &config.data.valid.src}, {"data.valid.tgt", &config.data.valid.tgt},
      {"data.test.src", &config.data.test.src},   {"data.test.tgt", &config.data.test.tgt},
  };
  for (const auto& [key, path] : files) {
    if (!path->empty()) check_readable(key, *path);
  }
  for (size_t i = 0; i < config.data.more_train.size(); ++i) {
    const std::string item = "data.train item " + std::to_string(i + 2);
    check_readable(item + " src", config.data.more_train[i].src);
    check_readable(item + " tgt", config.data.more_train[i].tgt);
  }
}

std::string config_to_yaml(const Config& config_in, bool only_changed) {
  Config config = config_in;  // the field table hands out non-const pointers
  Config defaults;
  YAML::Emitter out;
  out << YAML::Comment(only_changed ? "attnmt configuration: the keys whose values differ from the defaults (docs/config.md)"
                                    : "attnmt configuration: every key, defaults included (docs/config.md)");
  out << YAML::BeginMap;
  std::vector<std::string> open;  // path components of the maps currently open
  // data.train in its list form: several corpora, or one with a weight
  const bool train_list = !config.data.more_train.empty() || config.data.train.weight != 1.0;
  for (const Field& field : kFields) {
    const std::string_view name = field.key;
    if (train_list && name == "data.train.tgt") continue;  // written with data.train.src, in the list
    if (!(train_list && name == "data.train.src") && only_changed && setting(field, config) == setting(field, defaults)) {
      continue;
    }
    std::vector<std::string> parts;
    std::string_view key = field.key;
    for (size_t start = 0;;) {
      size_t dot = key.find('.', start);
      parts.emplace_back(key.substr(start, dot - start));
      if (dot == std::string_view::npos) break;
      start = dot + 1;
    }
    if (train_list && name == "data.train.src") parts.pop_back();  // "data.train" holds the list
    // Close the maps this key is not in, open the ones it is.
    size_t common = 0;
    while (common < open.size() && common + 1 < parts.size() && open[common] == parts[common]) {
      ++common;
    }
    for (; open.size() > common; open.pop_back()) out << YAML::EndMap;
    std::string path;
    for (size_t i = 0; i < parts.size(); ++i) {
      path += (i ? "." : "") + parts[i];
      if (i < open.size()) continue;
      for (const KeyComment& comment : kComments) {
        if (path == comment.key) out << YAML::Newline << YAML::Comment(comment.text);
      }
      out << YAML::Key << parts[i] << YAML::Value;
      if (i + 1 < parts.size()) {
        out << YAML::BeginMap;
        open.push_back(parts[i]);
      }
    }
    FieldRef ref = field.ref(config);
    if (train_list && name == "data.train.src") {
      out << YAML::BeginSeq;
      for (const auto& corpus : training_corpora(config.data)) {
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "src" << YAML::Value << YAML::DoubleQuoted << corpus.src
            << YAML::Key << "tgt" << YAML::Value << YAML::DoubleQuoted << corpus.tgt << YAML::Key << "weight"
            << YAML::Value << format_double(corpus.weight) << YAML::EndMap;
      }
      out << YAML::EndSeq;
    } else if (auto* s = std::get_if<std::string*>(&ref)) {
      out << YAML::DoubleQuoted << **s;
    } else if (auto* b = std::get_if<bool*>(&ref)) {
      out << YAML::TrueFalseBool << **b;
    } else if (auto* d = std::get_if<double*>(&ref)) {
      out << format_double(**d);
    } else if (auto* i = std::get_if<int*>(&ref)) {
      out << **i;
    } else if (auto* u = std::get_if<std::uint64_t*>(&ref)) {
      out << **u;
    }
  }
  for (; !open.empty(); open.pop_back()) out << YAML::EndMap;
  out << YAML::EndMap;
  if (!out.good()) throw RuntimeError("cannot write the config as YAML: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}


namespace {

bool yaml_bool(const std::string& s, bool* out) {
  static const char* const truths[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char* const lies[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  for (const char* t : truths) {
    if (s == t) return *out = true, true;
  }
  for (const char* f : lies) {
    if (s == f) return *out = false, true;
  }
  return false;
}

OptionValue yaml_tree(const YAML::Node& node, int depth, const Source& source) {
  if (depth > 64) throw InputError(source.label + ": nested more than 64 levels deep");
  OptionValue v;
  switch (node.Type()) {
    case YAML::NodeType::Map:
      v.kind = OptionValue::kMap;
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          throw InputError(source.label + ": keys must be names" + line_suffix(source, entry.first.Mark()));
        }
        v.map[entry.first.Scalar()] = yaml_tree(entry.second, depth + 1, source);
      }
      return v;
    case YAML::NodeType::Sequence:
      v.kind = OptionValue::kList;
      for (const auto& item : node) v.list.push_back(yaml_tree(item, depth + 1, source));
      return v;
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      v.s = s;
      v.kind = OptionValue::kString;
      if (node.Tag() == "!") return v;  // quoted: a string whatever it looks like
      if (s == "~" || s == "null" || s == "Null" || s == "NULL") {
        v.kind = OptionValue::kNone;
      } else if (yaml_bool(s, &v.b)) {
        v.kind = OptionValue::kBool;
      } else {
        const char* begin = s.data();
        const char* end = s.data() + s.size();
        int64_t i = 0;
        if (auto r = std::from_chars(begin, end, i); r.ec == std::errc() && r.ptr == end) {
          v.kind = OptionValue::kInt;
          v.i = i;
        } else if (!s.empty() && s.find_first_of("0123456789") != std::string::npos) {
          char* stop = nullptr;
          errno = 0;
          const double d = std::strtod(s.c_str(), &stop);
          if (stop == s.c_str() + s.size() && errno == 0) {
            v.kind = OptionValue::kFloat;
            v.f = d;
          }
        }
      }
      return v;
    }
    default:
      return v;  // null
  }
}

}  // namespace

OptionValue read_yaml_tree(const std::string& path) {
  const Source source{in_quotes(path), /*has_lines=*/true};
  return yaml_tree(parse_root(read_config_text(path), source), 0, source);
}

}  // namespace attnmt
