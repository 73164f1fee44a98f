// The config key table, shared by config/'s files: key_table.cpp (the table and what reads it),
// yaml_io.cpp (YAML in and out, the only user of yaml-cpp) and validate.cpp (the checks).
//
// Every key is declared once, in key_table.cpp's table: the dotted path of its struct member (its
// type and default are the member's, in config.h), when it may change, the values it takes and its
// help line. The parser, the writer, validate_config, config_keys(), config_key_table() (the
// decode-time checks, the Python module, the CLI's help and docs/config.md's test) and the "did
// you mean" suggestions all read it, so a new option is one entry there plus its field in config.h.
// Outside config/ the table is read through config/loader.h.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "config/config.h"
#include "config/loader.h"
#include "util/error.h"  // in_quotes

namespace attnmt::config_table {

// A member of one of util/choices.h's enums, read and set as its index among the enum's names.
struct ChoiceAccess {
  const std::string_view* names;  // Choice<E>::names
  size_t count;
  size_t (*get)(const void* member);
  void (*set)(void* member, size_t index);
};
template <class E>
inline constexpr ChoiceAccess kChoiceAccess{
    Choice<E>::names.data(), Choice<E>::names.size(),
    [](const void* m) { return static_cast<size_t>(*static_cast<const E*>(m)); },
    [](void* m, size_t i) { *static_cast<E*>(m) = static_cast<E>(i); }};
struct ChoiceRef {
  void* member;
  const ChoiceAccess* access;
  std::string_view name() const { return access->names[access->get(member)]; }
};
struct ConstChoiceRef {
  const void* member;
  const ChoiceAccess* access;
  std::string_view name() const { return access->names[access->get(member)]; }
};

using FieldRef = std::variant<int*, std::uint64_t*, double*, bool*, std::string*, ChoiceRef>;
using ConstFieldRef =
    std::variant<const int*, const std::uint64_t*, const double*, const bool*, const std::string*, ConstChoiceRef>;

// A member as a FieldRef (the key table's entries are made of these).
template <class T>
FieldRef field_ref(T* member) {
  if constexpr (std::is_enum_v<T>) {
    return ChoiceRef{member, &kChoiceAccess<T>};
  } else {
    return member;
  }
}
template <class T>
ConstFieldRef const_field_ref(const T* member) {
  if constexpr (std::is_enum_v<T>) {
    return ConstChoiceRef{member, &kChoiceAccess<T>};
  } else {
    return member;
  }
}

// The values a key takes on its own: validate_config checks numbers against them, the YAML reader
// a choice's name (a key of an enum type takes its enum's names), the "Allowed" column of
// docs/config.md shows them. Rules between keys are validate.cpp's table (checked after these)
// and the entry's `also` says them in words. Every number must be finite.
struct Rule {
  enum Kind { kAny, kAtLeast, kAbove, kHalfOpen, kOpenClosed, kClosed, kChoice } kind = kAny;
  double lo = 0, hi = 0;
  const std::string_view* choices = nullptr;  // kChoice: the names (an enum's Choice<E>::names)
  size_t choice_count = 0;
  const char* note = nullptr;     // what a special value means, "0 = off": shown in parentheses
};
struct Field {
  const char* key;             // dotted path, e.g. "model.encoder.hidden_size"
  FieldRef (*ref)(Config& c);  // the member it names (its type and default: config.h), to set
  ConstFieldRef (*cref)(const Config& c);  // the same, to read
  KeyScope scope;              // when it may still change
  Rule rule;
  const char* help;            // one line, markdown: the CLI's help and docs/config.md's "Meaning" start with it
  const char* also = nullptr;  // rules with other keys, in words
};

// The table, in the order of config.h (config_to_yaml writes the keys in this order).
struct FieldRange {
  const Field* first;
  const Field* last;
  const Field* begin() const { return first; }
  const Field* end() const { return last; }
};
FieldRange fields();

const Field* find_field(std::string_view key);  // nullptr: no such key
// Every proper prefix of a key ("model", "model.encoder", ...), in table order.
const std::vector<std::string>& section_keys();
bool is_section(std::string_view key);
// A typo in the full path (model.encoder.hiden_size), else a known leaf name under the wrong
// section (model.hidden_size -> model.encoder.hidden_size). Empty if nothing is close.
std::string suggest_key(const std::string& unknown);

// The shortest text that reads back exactly (Python's repr style), a YAML float: 0.0003, 1.0, .inf.
std::string format_double(double value);
std::vector<std::string> choices_of(const Rule& rule);
// "in [0, 1) (0 = off)", "one of {adam, sgd}"; markdown: the choices as "`adam`, `sgd`".
std::string rule_text(const Rule& rule, bool markdown);
// Whether a number keeps the rule (finite, within its bounds).
bool within(const Rule& rule, double v);

// Why a choice key refuses `name`: "<key> must be one of {...}, got '<name>'" (or a hint for a
// name that belongs elsewhere, as int8 for train.precision). validate.cpp.
std::string choice_refusal(const Field& field, const std::string& name);

// "key=value", the value written as a YAML scalar, as an override reads it back (yaml_io.cpp).
std::string setting(const Field& f, const Config& config);

}  // namespace attnmt::config_table
