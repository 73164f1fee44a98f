// A Python value as a pickle describes it (pickle.h builds them): None, bool, int (64 bits), float,
// str (UTF-8), bytes, list, tuple, dict (insertion order, any hashable key), a Global (a class or
// function by module and name), an Object (a call of a class: its arguments, the state BUILD gave
// it, the items set on it) and a tensor (tensor_ref.h). Read-only handles on one loaded tree; a
// value of the wrong kind is an InputError naming the file and where the value sits
// (`['opt'].rnn_size: expected int, got str 'x'`).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pyformat/tensor_ref.h"

namespace attnmt {

enum class PyKind { None, Bool, Int, Float, String, Bytes, List, Tuple, Dict, Global, Object, Tensor };

const char* kind_name(PyKind kind);  // "None", "bool", "int", "float", "str", "bytes", "list", ...

struct PyNode;   // py_node.h
struct PyArena;  // owns every node of one pickle (cycles and deep nesting free without recursion)

// A handle on one value of a loaded pickle: cheap to copy, keeps the whole tree alive, and knows
// where it sits (its path) for messages.
class PyValue {
 public:
  PyValue() = default;                           // None
  static PyValue from_tensor(TensorRef tensor);  // for hooks that turn a call into a tensor

  PyKind kind() const;
  bool is_none() const { return kind() == PyKind::None; }
  const std::string& path() const { return path_; }  // `["model"]["w"]`; empty at the top level
  const std::string& file() const;                   // as messages name it
  // InputError "<file>: <path>: <what>".
  [[noreturn]] void fail(const std::string& what) const;

  // Scalars; each throws InputError when the kind differs.
  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;  // a float, or an int as a float
  const std::string& as_string() const;
  const std::string& as_bytes() const;
  const TensorRef& as_tensor() const;

  // List and Tuple: the items. size() also counts a Dict's entries.
  size_t size() const;
  PyValue at(size_t i) const;
  std::vector<PyValue> as_list() const;  // a list's or a tuple's items

  // Dict, and the items SETITEM(S) put on an Object (a defaultdict's), in insertion order.
  std::vector<std::pair<PyValue, PyValue>> items() const;
  bool has(std::string_view key) const;     // a str key
  PyValue get(std::string_view key) const;  // InputError if missing (naming some of the keys)
  std::vector<std::string> keys() const;    // the str keys

  // Global (a class or function by name) and Object (an instance: its class's module and name).
  bool is_global(std::string_view module, std::string_view name) const;
  bool is_instance(std::string_view module, std::string_view name) const;  // an Object of that class
  const std::string& module() const;
  const std::string& name() const;
  PyValue callable() const;  // an Object made by calling a value that is not a Global; else None
  PyValue args() const;      // an Object's arguments (a Tuple)
  PyValue kwargs() const;    // NEWOBJ_EX's keyword arguments (a Dict), else None
  PyValue state() const;     // what BUILD gave an Object (or a Dict: an OrderedDict's __dict__), else None
  std::vector<PyValue> list_items() const;  // what APPEND(S) / ADDITEMS put into an Object (a set's items)
  // An attribute: a key of the BUILD state when it is a dict (or the dicts of a (dict, slots)
  // state), as Python's default __setstate__ sets them: argparse.Namespace's options, a Vocab's itos.
  bool has_attr(std::string_view name) const;
  PyValue attr(std::string_view name) const;

 private:
  friend class Unpickler;
  friend std::string describe(const PyValue& value, int depth);
  PyValue(std::shared_ptr<const PyArena> arena, const PyNode* node, std::string path)
      : arena_(std::move(arena)), node_(node), path_(std::move(path)) {}
  PyValue child(const PyNode* node, std::string path_suffix) const;
  const PyNode& expect(PyKind kind, const char* what) const;
  const PyNode* state_dict_node(std::string_view name) const;

  std::shared_ptr<const PyArena> arena_;
  const PyNode* node_ = nullptr;  // null: None
  std::string path_;
};

// A short Python-like rendering for messages and debugging: containers show at most 8 items,
// `depth` + 1 levels of them (deeper ones as `[...12 items]`), long strings are cut.
std::string describe(const PyValue& value, int depth = 2);

}  // namespace attnmt
