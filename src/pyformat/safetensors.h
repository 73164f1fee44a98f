// safetensors files (Hugging Face's format): an 8-byte little-endian header length, a JSON header
// {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ..., "__metadata__":
// {"key": "value"}}, then the tensors' bytes (offsets relative to the end of the header).
#pragma once
#include <map>
#include <string>

#include "pyformat/tensor_ref.h"

namespace attnmt {

struct SafetensorsFile {
  std::map<std::string, TensorRef> tensors;     // contiguous, each on its own span of the file
  std::map<std::string, std::string> metadata;  // "__metadata__", if any
};

// InputError "<path>: ..." for anything that is not a well-formed safetensors file: a header
// beyond the file (or beyond 100 MB, the format's limit), bad JSON, an unknown dtype, offsets
// outside the data or not matching the shape.
SafetensorsFile load_safetensors(const std::string& path);

// The same for a file already in memory; `name` stands for the file in messages.
SafetensorsFile load_safetensors_bytes(std::string bytes, const std::string& name);

}  // namespace attnmt
