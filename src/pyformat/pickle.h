// Python pickles (protocols 0-5; torch.save writes protocol 2) read into a tree of plain values,
// without running anything. A class or function the pickle names is a Global; calling one
// (REDUCE, NEWOBJ, NEWOBJ_EX, INST, OBJ) makes an Object that records the class, the arguments,
// the state BUILD gave it and the items SETITEM(S) / APPEND(S) put into it — so argparse.Namespace,
// defaultdict, Counter, functools.partial, torchtext's Vocab and any other class load as objects
// to read. collections.OrderedDict() becomes a Dict, and the few calls that only rebuild a plain
// value (protocol 2's bytes as _codecs.encode, set, frozenset, bytearray) become that value.
// Protocol 2's Python 2 names (__builtin__.long, copy_reg) are read as Python 3 names
// (builtins.int, copyreg), as Python's own Unpickler reads them.
//
// Every problem is an InputError naming the file and the byte of the pickle.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "pyformat/py_value.h"

namespace attnmt {

struct PickleOptions {
  std::string file;  // names the file in messages and in the values' file()
  std::string part;  // the pickle within it, if any ("archive/data.pkl")
  // PERSID / BINPERSID: the value a persistent id stands for (torch.save's storages). Without
  // it, a persistent id is an error.
  std::function<PyValue(const PyValue& pid)> persistent_load;
  // A call of a Global (REDUCE, NEWOBJ): a value to stand for it, or nullopt for the generic
  // Object (torch's _rebuild_tensor_v2 becomes a tensor this way).
  std::function<std::optional<PyValue>(const PyValue& callable, const PyValue& args)> call;
};

// Reads one pickle from the start of `bytes` (up to its STOP opcode; `end`, if given, receives
// the offset just past it).
PyValue load_pickle(std::string_view bytes, const PickleOptions& options, size_t* end = nullptr);

}  // namespace attnmt
