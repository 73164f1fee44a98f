#include "config/option_tree.h"

#include <cmath>

#include "util/error.h"

namespace attnmt {

const OptionValue* ToolkitOptions::find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() || it->second.kind == OptionValue::kNone ? nullptr : &it->second;
}

bool ToolkitOptions::has(const std::string& name) const { return find(name) != nullptr; }

void ToolkitOptions::wrong(const std::string& name, const std::string& expected) const {
  throw InputError(where_ + ": option '" + key(name) + "' is not " + expected);
}

std::string ToolkitOptions::str(const std::string& name, const std::string& fallback) const {
  const auto* v = find(name);
  if (!v) return fallback;
  if (v->kind != OptionValue::kString) wrong(name, "a string");
  return v->s;
}

int64_t ToolkitOptions::integer(const std::string& name, int64_t fallback) const {
  const auto* v = find(name);
  if (!v) return fallback;
  if (v->kind == OptionValue::kInt) return v->i;
  if (v->kind == OptionValue::kBool) return v->b ? 1 : 0;
  if (v->kind == OptionValue::kFloat && std::floor(v->f) == v->f && std::abs(v->f) < 1e15) return static_cast<int64_t>(v->f);
  wrong(name, "an integer");
}

double ToolkitOptions::number(const std::string& name, double fallback) const {
  const auto* v = find(name);
  if (!v) return fallback;
  if (v->kind == OptionValue::kFloat) return v->f;
  if (v->kind == OptionValue::kInt) return static_cast<double>(v->i);
  wrong(name, "a number");
}

bool ToolkitOptions::boolean(const std::string& name, bool fallback) const {
  const auto* v = find(name);
  if (!v) return fallback;
  if (v->kind == OptionValue::kBool) return v->b;
  if (v->kind == OptionValue::kInt) return v->i != 0;
  wrong(name, "true or false");
}

ToolkitOptions ToolkitOptions::section(const std::string& name) const {
  const auto* v = find(name);
  if (!v) return ToolkitOptions({}, where_, key(name));
  if (v->kind != OptionValue::kMap) wrong(name, "a section (a map of options)");
  return ToolkitOptions(v->map, where_, key(name));
}

}  // namespace attnmt
