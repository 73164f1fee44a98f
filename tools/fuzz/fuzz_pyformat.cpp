// libFuzzer target: the readers of Python's files (src/pyformat/) on arbitrary bytes, each the way
// `attnmt convert` uses them: a torch.save checkpoint (zip or legacy) with every tensor copied out,
// a bare pickle, a safetensors file. Bad input must be an InputError; anything else escaping
// (another exception, a sanitizer report, a signal) counts as a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "pyformat/pickle.h"
#include "pyformat/safetensors.h"
#include "pyformat/torch_file.h"
#include "util/error.h"

namespace {

void copy_tensors(const attnmt::PyValue& v, int depth) {
  if (depth > 32) return;
  switch (v.kind()) {
    case attnmt::PyKind::Tensor: {
      const attnmt::TensorRef& t = v.as_tensor();
      if (attnmt::dtype_is_floating(t.dtype)) {
        attnmt::to_float32_contiguous(t);
      } else if (t.dtype != attnmt::DType::Complex64 && t.dtype != attnmt::DType::Complex128) {
        attnmt::to_int64_contiguous(t);
      }
      break;
    }
    case attnmt::PyKind::List:
    case attnmt::PyKind::Tuple:
      for (const auto& item : v.as_list()) copy_tensors(item, depth + 1);
      break;
    case attnmt::PyKind::Dict:
    case attnmt::PyKind::Object:
      for (const auto& kv : v.items()) copy_tensors(kv.second, depth + 1);
      if (v.kind() == attnmt::PyKind::Object) copy_tensors(v.args(), depth + 1);
      copy_tensors(v.state(), depth + 1);
      break;
    default:
      break;
  }
  (void)attnmt::describe(v, 2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    copy_tensors(attnmt::load_torch_bytes(bytes, "fuzz.pt").object, 0);
  } catch (const attnmt::InputError&) {
  }
  try {
    attnmt::PickleOptions options;
    options.file = "fuzz.pkl";
    copy_tensors(attnmt::load_pickle(bytes, options), 0);
  } catch (const attnmt::InputError&) {
  }
  try {
    for (const auto& [name, t] : attnmt::load_safetensors_bytes(bytes, "fuzz.safetensors").tensors) {
      attnmt::to_float32_contiguous(t, name);
    }
  } catch (const attnmt::InputError&) {
  }
  return 0;
}
