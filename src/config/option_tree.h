// A source toolkit's model options as plain values, whether they come from a checkpoint's pickled
// argparse.Namespace (OpenNMT-py) or a YAML file (Joey NMT), with typed lookups that name the
// file and the option when a value has the wrong type (attnmt convert reads them; read_yaml_tree
// is in config/yaml_io.cpp, the one file that includes yaml-cpp).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnmt {

struct OptionValue {
  enum Kind { kNone, kBool, kInt, kFloat, kString, kList, kMap } kind = kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<OptionValue> list;
  std::map<std::string, OptionValue> map;
};

class ToolkitOptions {
 public:
  ToolkitOptions() = default;
  // `where`: e.g. "'model.pt' (its options)"; `prefix`: the section's dotted path for messages.
  ToolkitOptions(std::map<std::string, OptionValue> values, std::string where, std::string prefix = "")
      : values_(std::move(values)), where_(std::move(where)), prefix_(std::move(prefix)) {}

  bool has(const std::string& name) const;  // set and not None
  std::string str(const std::string& name, const std::string& fallback) const;
  int64_t integer(const std::string& name, int64_t fallback) const;
  double number(const std::string& name, double fallback) const;
  // Python's truth of ints too (OpenNMT-py's input_feed is 0/1); YAML's true/false/True/False.
  bool boolean(const std::string& name, bool fallback) const;
  // A nested map (YAML section), empty when absent.
  ToolkitOptions section(const std::string& name) const;
  const std::string& where() const { return where_; }
  std::string key(const std::string& name) const { return prefix_.empty() ? name : prefix_ + "." + name; }

 private:
  const OptionValue* find(const std::string& name) const;
  [[noreturn]] void wrong(const std::string& name, const std::string& expected) const;
  std::map<std::string, OptionValue> values_;
  std::string where_, prefix_;
};

// A YAML file as an OptionValue tree: maps, lists, and scalars typed as YAML 1.1 reads them
// (null/~, true/false/True/False/yes/no, integers, floats, else strings; quoted ones stay strings).
// InputError naming the file (and line) when it cannot be read or parsed.
OptionValue read_yaml_tree(const std::string& path);
// The same for YAML text held elsewhere (Marian's model.yml inside its .npz); `where` names it.
OptionValue read_yaml_text(const std::string& text, const std::string& where);

}  // namespace attnmt
