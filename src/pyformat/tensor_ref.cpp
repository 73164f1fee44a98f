#include "pyformat/tensor_ref.h"

#include <cmath>
#include <cstring>

#include "util/error.h"

namespace attnmt {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "storages are read as little-endian, in place");

namespace {

// A view can hold more elements than its storage only by zero strides (an expanded tensor);
// copying one is refused beyond this many elements, so that a few bytes never ask for gigabytes.
constexpr int64_t kMaxBroadcastElements = int64_t{1} << 24;
constexpr size_t kMaxDims = 64;

std::string describe_storage(const TensorRef& t, const std::string& name) {
  const std::string file = t.storage ? t.storage->file : std::string();
  const std::string what = !name.empty() ? name : t.storage ? "storage '" + t.storage->key + "'" : "a tensor";
  return file.empty() ? what : file + ": " + what;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf, nan (payload kept)
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else {
    // Zero or subnormal: mantissa * 2^-24, exact in float32.
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    std::memcpy(&bits, &value, 4);
    bits |= sign;
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Calls f(element offset) for each element of `t` in row-major order.
template <typename F>
void for_each_element(const TensorRef& t, int64_t numel, F&& f) {
  if (numel == 0) return;
  if (t.is_contiguous()) {
    for (int64_t i = 0; i < numel; ++i) f(t.offset + i);
    return;
  }
  const size_t nd = t.shape.size();
  std::vector<int64_t> index(nd, 0);
  int64_t offset = t.offset;
  for (int64_t n = 0; n < numel; ++n) {
    f(offset);
    for (size_t d = nd; d-- > 0;) {
      if (++index[d] < t.shape[d]) {
        offset += t.strides[d];
        break;
      }
      offset -= t.strides[d] * (t.shape[d] - 1);
      index[d] = 0;
    }
  }
}

// The checks both copies share: a valid extent and a bounded element count.
int64_t checked_numel(const TensorRef& t, const std::string& name) {
  const std::string error = tensor_extent_error(t);
  if (!error.empty()) throw InputError(describe_storage(t, name) + ": " + error);
  const int64_t numel = t.numel();
  const int64_t storage_elements = static_cast<int64_t>(t.storage->size / dtype_size(t.dtype));
  if (numel > storage_elements && numel > kMaxBroadcastElements) {
    throw InputError(describe_storage(t, name) + ": an expanded view of " + std::to_string(numel) + " elements over " +
                     std::to_string(storage_elements) + " (more than " + std::to_string(kMaxBroadcastElements) +
                     " are not copied)");
  }
  return numel;
}

}  // namespace

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
    case DType::Int16:
      return "int16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::UInt16:
      return "uint16";
    case DType::UInt32:
      return "uint32";
    case DType::UInt64:
      return "uint64";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Complex64:
      return "complex64";
    case DType::Complex128:
      return "complex128";
  }
  return "?";
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8:
      return 1;
    case DType::Int16:
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
    case DType::UInt32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::UInt64:
    case DType::Float64:
    case DType::Complex64:
      return 8;
    case DType::Complex128:
      return 16;
  }
  return 1;
}

bool dtype_is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::Float32 || dtype == DType::Float64;
}

int64_t TensorRef::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

bool TensorRef::is_contiguous() const {
  if (shape.size() != strides.size()) return false;
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d] > 0 ? shape[d] : 1;
  }
  return strides;
}

std::string tensor_extent_error(const TensorRef& t) {
  if (!t.storage) return "a tensor without a storage";
  if (t.shape.size() != t.strides.size()) {
    return std::to_string(t.shape.size()) + " sizes but " + std::to_string(t.strides.size()) + " strides";
  }
  if (t.shape.size() > kMaxDims) return std::to_string(t.shape.size()) + " dimensions";
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] < 0) return "size " + std::to_string(t.shape[d]) + " in dimension " + std::to_string(d);
    if (t.strides[d] < 0) return "stride " + std::to_string(t.strides[d]) + " in dimension " + std::to_string(d);
  }
  if (t.offset < 0) return "storage offset " + std::to_string(t.offset);
  const int64_t numel = t.numel();
  if (numel < 0) return "more elements than 64 bits count";
  if (numel == 0) return {};
  // The last element's offset; every other lies between it and `offset` (strides are >= 0).
  int64_t last = t.offset;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    int64_t step;
    if (__builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &step) || __builtin_add_overflow(last, step, &last)) {
      return "element offsets beyond 64 bits";
    }
  }
  const uint64_t storage_elements = t.storage->size / dtype_size(t.dtype);
  if (static_cast<uint64_t>(last) >= storage_elements) {
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    return "shape [" + shape + "] at offset " + std::to_string(t.offset) + " reaches element " + std::to_string(last) +
           ", beyond storage '" + t.storage->key + "' (" + std::to_string(storage_elements) + " " +
           dtype_name(t.dtype) + " elements)";
  }
  return {};
}

std::vector<float> to_float32_contiguous(const TensorRef& t, const std::string& name) {
  if (!dtype_is_floating(t.dtype)) {
    throw InputError(describe_storage(t, name) + ": a " + dtype_name(t.dtype) +
                     " tensor, not a floating-point one (float32, float16, bfloat16 or float64)");
  }
  const int64_t numel = checked_numel(t, name);
  std::vector<float> out;
  out.reserve(static_cast<size_t>(numel));
  const uint8_t* base = t.storage->data;
  switch (t.dtype) {
    case DType::Float32:
      for_each_element(t, numel, [&](int64_t i) { out.push_back(load<float>(base + 4 * i)); });
      break;
    case DType::Float16:
      for_each_element(t, numel, [&](int64_t i) { out.push_back(half_to_float(load<uint16_t>(base + 2 * i))); });
      break;
    case DType::BFloat16:
      for_each_element(t, numel, [&](int64_t i) { out.push_back(bfloat16_to_float(load<uint16_t>(base + 2 * i))); });
      break;
    case DType::Float64:
      for_each_element(t, numel, [&](int64_t i) { out.push_back(static_cast<float>(load<double>(base + 8 * i))); });
      break;
    default:
      break;
  }
  return out;
}

std::vector<int64_t> to_int64_contiguous(const TensorRef& t, const std::string& name) {
  if (dtype_is_floating(t.dtype) || t.dtype == DType::Complex64 || t.dtype == DType::Complex128) {
    throw InputError(describe_storage(t, name) + ": a " + dtype_name(t.dtype) + " tensor, not an integer one");
  }
  const int64_t numel = checked_numel(t, name);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(numel));
  const uint8_t* p = t.storage->data;
  auto each = [&](auto read) { for_each_element(t, numel, [&](int64_t i) { out.push_back(read(i)); }); };
  switch (t.dtype) {
    case DType::Bool:
      each([&](int64_t i) -> int64_t { return p[i] != 0; });
      break;
    case DType::UInt8:
      each([&](int64_t i) -> int64_t { return p[i]; });
      break;
    case DType::Int8:
      each([&](int64_t i) -> int64_t { return load<int8_t>(p + i); });
      break;
    case DType::Int16:
      each([&](int64_t i) -> int64_t { return load<int16_t>(p + 2 * i); });
      break;
    case DType::UInt16:
      each([&](int64_t i) -> int64_t { return load<uint16_t>(p + 2 * i); });
      break;
    case DType::Int32:
      each([&](int64_t i) -> int64_t { return load<int32_t>(p + 4 * i); });
      break;
    case DType::UInt32:
      each([&](int64_t i) -> int64_t { return load<uint32_t>(p + 4 * i); });
      break;
    case DType::Int64:
      each([&](int64_t i) -> int64_t { return load<int64_t>(p + 8 * i); });
      break;
    case DType::UInt64:
      each([&](int64_t i) -> int64_t {
        const uint64_t v = load<uint64_t>(p + 8 * i);
        if (v > static_cast<uint64_t>(INT64_MAX)) {
          throw InputError(describe_storage(t, name) + ": uint64 value " + std::to_string(v) + " beyond int64");
        }
        return static_cast<int64_t>(v);
      });
      break;
    default:
      break;
  }
  return out;
}

}  // namespace attnmt
