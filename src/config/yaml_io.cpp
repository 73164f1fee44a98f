// YAML <-> Config: reading configs (with `base:` chains and key=value overrides), writing them,
// settings files and the option trees of other toolkits' YAML. The only file in attnmt that
// includes yaml-cpp; the keys are config/key_table.h's.
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
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <variant>

#include "config/key_table.h"
#include "config/option_tree.h"
#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {

using namespace config_table;

namespace {

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

// A config's first key may name the config it builds on (config inheritance).
constexpr const char* kBaseKey = "base";

struct Source {
  std::string label;  // "'cfg.yaml'" or "override 'train.max_steps=abc'"
  bool has_lines;     // YAML marks are meaningful (a file, not a one-line override)
};

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
  if (auto* c = std::get_if<ChoiceRef>(&ref)) {
    if (!node.IsNull() && !node.IsScalar()) fail(choices_text(c->access->names, c->access->count).c_str());
    const std::string name = node.IsNull() ? "" : node.Scalar();
    for (size_t i = 0; i < c->access->count; ++i) {
      if (c->access->names[i] == name) return c->access->set(c->member, i);
    }
    throw InputError(source.label + ": " + choice_refusal(field, name) + line_suffix(source, mark));
  }
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

}  // namespace

std::string config_table::setting(const Field& f, const Config& config) {
  YAML::Emitter value;
  value << YAML::DoublePrecision(17);
  const ConstFieldRef ref = f.cref(config);
  if (auto* c = std::get_if<ConstChoiceRef>(&ref)) {
    value << std::string(c->name());
  } else {
    std::visit([&](auto p) {
      if constexpr (std::is_pointer_v<decltype(p)>) value << *p;
    }, ref);
  }
  return std::string(f.key) + "=" + value.c_str();
}

std::vector<std::string> config_settings(const Config& config, const std::string& prefix) {
  std::vector<std::string> out;
  for (const Field& f : fields()) {
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

std::string config_to_yaml(const Config& config, bool only_changed) {
  Config defaults;
  YAML::Emitter out;
  out << YAML::Comment(only_changed ? "attnmt configuration: the keys whose values differ from the defaults (docs/config.md)"
                                    : "attnmt configuration: every key, defaults included (docs/config.md)");
  out << YAML::BeginMap;
  std::vector<std::string> open;  // path components of the maps currently open
  // data.train in its list form: several corpora, or one with a weight
  const bool train_list = !config.data.more_train.empty() || config.data.train.weight != 1.0;
  for (const Field& field : fields()) {
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
    const ConstFieldRef ref = field.cref(config);
    if (train_list && name == "data.train.src") {
      out << YAML::BeginSeq;
      for (const auto& corpus : training_corpora(config.data)) {
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "src" << YAML::Value << YAML::DoubleQuoted << corpus.src
            << YAML::Key << "tgt" << YAML::Value << YAML::DoubleQuoted << corpus.tgt << YAML::Key << "weight"
            << YAML::Value << format_double(corpus.weight) << YAML::EndMap;
      }
      out << YAML::EndSeq;
    } else if (auto* s = std::get_if<const std::string*>(&ref)) {
      out << YAML::DoubleQuoted << **s;
    } else if (auto* c = std::get_if<ConstChoiceRef>(&ref)) {
      out << YAML::DoubleQuoted << std::string(c->name());
    } else if (auto* b = std::get_if<const bool*>(&ref)) {
      out << YAML::TrueFalseBool << **b;
    } else if (auto* d = std::get_if<const double*>(&ref)) {
      out << format_double(**d);
    } else if (auto* i = std::get_if<const int*>(&ref)) {
      out << **i;
    } else if (auto* u = std::get_if<const std::uint64_t*>(&ref)) {
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

OptionValue read_yaml_text(const std::string& text, const std::string& where) {
  const Source source{where, /*has_lines=*/true};
  return yaml_tree(parse_root(text, source), 0, source);
}

}  // namespace attnmt
