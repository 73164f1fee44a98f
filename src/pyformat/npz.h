// numpy's .npz files: a ZIP archive of .npy arrays, one entry per array ("name.npy"), as numpy's
// savez and Marian's model files (cnpy) write them. An .npy entry: the magic "\x93NUMPY", the
// format version (1.0: a 2-byte header length; 2.0 and 3.0: 4 bytes), then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (32, 96), } padded with spaces, then the
// elements. Little-endian and byte types only; Fortran order becomes column-major strides.
// Entries compressed by savez_compressed are refused by the ZIP reader, in words.
#pragma once
#include <map>
#include <string>

#include "pyformat/tensor_ref.h"

namespace attnmt {

struct NpzFile {
  std::map<std::string, TensorRef> arrays;  // by name, without ".npy"
};

// InputError "<path>: ..." for anything that is not a well-formed .npz: not a ZIP archive, an
// entry that is not .npy, a header that does not parse, a big-endian or object dtype, data that
// does not match the shape.
NpzFile load_npz(const std::string& path);

// The text held in a byte array (Marian's "special:model.yml": int8 or uint8, a trailing NUL dropped).
std::string npz_text(const TensorRef& array, const std::string& name);

}  // namespace attnmt
