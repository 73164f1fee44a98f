// The nodes behind PyValue (py_value.h), for the pickle interpreter that builds them; nothing
// outside src/pyformat/ includes this. Nodes refer to each other by plain pointers and live as
// long as their arena, so a cyclic or deeply nested pickle frees in one flat pass.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pyformat/py_value.h"

namespace attnmt {

// A dict's hashable keys -> their entry numbers: open addressing over (hash, entry) slots.
class PyKeyIndex {
 public:
  // The entry number of the key `equal` accepts among those of hash `hash`, or -1.
  template <typename Equal>
  int64_t find(uint64_t hash, Equal&& equal) const {
    if (slots_.empty()) return -1;
    const uint32_t h = fold(hash);
    for (size_t at = h & mask();; at = (at + 1) & mask()) {
      const uint64_t slot = slots_[at];
      if (slot == 0) return -1;
      if (static_cast<uint32_t>(slot >> 32) == h && equal(static_cast<size_t>((slot & 0xffffffffu) - 1))) {
        return static_cast<int64_t>((slot & 0xffffffffu) - 1);
      }
    }
  }

  void insert(uint64_t hash, size_t entry) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    place(static_cast<uint64_t>(fold(hash)) << 32 | (entry + 1));
    ++used_;
  }

 private:
  static uint32_t fold(uint64_t h) { return static_cast<uint32_t>(h ^ (h >> 32)); }
  size_t mask() const { return slots_.size() - 1; }

  void place(uint64_t slot) {
    size_t at = static_cast<uint32_t>(slot >> 32) & mask();
    while (slots_[at] != 0) at = (at + 1) & mask();
    slots_[at] = slot;
  }

  void grow() {
    std::vector<uint64_t> old(std::max<size_t>(16, 2 * slots_.size()), 0);
    old.swap(slots_);
    for (uint64_t slot : old) {
      if (slot) place(slot);
    }
  }

  std::vector<uint64_t> slots_;  // the hash's folded 32 bits << 32 | (entry number + 1); 0: empty
  size_t used_ = 0;
};

// What only some kinds need, kept out of the common node (a pickle of a million strings stays small).
struct PyExtra {
  std::string module, name;    // Global; Object: its class
  PyNode* callable = nullptr;  // Object made by calling a non-Global
  PyNode* args = nullptr;      // Object: a Tuple
  PyNode* kwargs = nullptr;    // Object from NEWOBJ_EX: a Dict
  PyNode* state = nullptr;     // Object, Dict: what BUILD gave it
  std::shared_ptr<const TensorRef> tensor;
};

struct PyNode {
  PyKind kind = PyKind::None;
  int64_t i = 0;                      // Bool, Int
  double f = 0;                       // Float
  std::string text;                   // String (UTF-8), Bytes
  std::vector<PyNode*> items;         // List, Tuple; Object: what APPEND(S) / ADDITEMS put into it
  std::vector<PyNode*> entries;       // Dict; Object: what SETITEM(S) put into it (key, value, key, ...)
  std::unique_ptr<PyKeyIndex> index;  // the entries' hashable keys
  std::unique_ptr<PyExtra> extra;
};

struct PyArena {
  std::string file;
  std::deque<PyNode> nodes;
  std::vector<std::shared_ptr<const PyArena>> adopted;  // arenas of the hooks' values
};

// A Dict's (or an Object's SETITEM'd) value for a str key; null if absent.
const PyNode* py_dict_find(const PyNode* dict, std::string_view key);
// Sets a key as Python does: an equal key keeps its place and its first spelling, the value is replaced.
void py_dict_set(PyNode* dict, PyNode* key, PyNode* value);

}  // namespace attnmt
