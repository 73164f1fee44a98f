#include "pyformat/safetensors.h"

#include <nlohmann/json.hpp>

#include "pyformat/file_bytes.h"
#include "util/error.h"

namespace attnmt {

namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // as the safetensors library limits it

DType parse_dtype(const std::string& code, const std::string& where) {
  static const std::pair<const char*, DType> kCodes[] = {
      {"BOOL", DType::Bool},   {"U8", DType::UInt8},      {"I8", DType::Int8},       {"I16", DType::Int16},
      {"U16", DType::UInt16},  {"I32", DType::Int32},     {"U32", DType::UInt32},    {"I64", DType::Int64},
      {"U64", DType::UInt64},  {"F16", DType::Float16},   {"BF16", DType::BFloat16}, {"F32", DType::Float32},
      {"F64", DType::Float64}, {"C64", DType::Complex64},
  };
  for (const auto& [name, dtype] : kCodes) {
    if (code == name) return dtype;
  }
  throw InputError(where + ": dtype '" + code +
                   "' is not supported (BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64, C64)");
}

uint64_t as_count(const nlohmann::json& j, const std::string& where, const char* what) {
  if (!j.is_number_unsigned()) throw InputError(where + ": " + what + " " + j.dump() + " is not a count");
  return j.get<uint64_t>();
}

SafetensorsFile load(const std::shared_ptr<const FileBytes>& file) {
  const std::string& path = file->path;
  const std::string& bytes = file->bytes;
  if (bytes.size() < 8)
    throw InputError(path + ": not a safetensors file (" + std::to_string(bytes.size()) + " bytes)");
  uint64_t header_size = 0;
  for (int k = 7; k >= 0; --k) header_size = (header_size << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(k)]);
  if (header_size > kMaxHeader || header_size > bytes.size() - 8) {
    throw InputError(path + ": not a safetensors file (a header of " + std::to_string(header_size) +
                     " bytes in a file of " + std::to_string(bytes.size()) + ")");
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header_size));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not a safetensors file (its header is not JSON: " + e.what() + ")");
  }
  if (!header.is_object()) throw InputError(path + ": not a safetensors file (its header is not a JSON object)");
  const size_t data_start = 8 + static_cast<size_t>(header_size);
  const uint64_t data_size = bytes.size() - data_start;

  SafetensorsFile out;
  for (const auto& [name, entry] : header.items()) {
    const std::string where = path + ": tensor '" + name + "'";
    if (name == "__metadata__") {
      if (!entry.is_object()) throw InputError(path + ": __metadata__ is not a JSON object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) throw InputError(path + ": __metadata__ '" + key + "' is not a string");
        out.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() || !entry.contains("shape") ||
        !entry["shape"].is_array() || !entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2) {
      throw InputError(where + ": expected {\"dtype\": str, \"shape\": [...], \"data_offsets\": [begin, end]}");
    }
    TensorRef t;
    t.dtype = parse_dtype(entry["dtype"].get<std::string>(), where);
    uint64_t numel = 1;
    for (const auto& d : entry["shape"]) {
      const uint64_t size = as_count(d, where, "size");
      if (size > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, size, &numel)) {
        throw InputError(where + ": shape " + entry["shape"].dump() + " beyond 64 bits");
      }
      t.shape.push_back(static_cast<int64_t>(size));
    }
    t.strides = contiguous_strides(t.shape);
    const uint64_t begin = as_count(entry["data_offsets"][0], where, "offset");
    const uint64_t end = as_count(entry["data_offsets"][1], where, "offset");
    if (begin > end || end > data_size) {
      throw InputError(where + ": data offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                       "] outside the data (" + std::to_string(data_size) + " bytes)");
    }
    uint64_t expected;
    if (__builtin_mul_overflow(numel, dtype_size(t.dtype), &expected) || expected != end - begin) {
      throw InputError(where + ": shape " + entry["shape"].dump() + " of " + dtype_name(t.dtype) + " needs " +
                       std::to_string(numel) + " elements, its data offsets hold " + std::to_string(end - begin) +
                       " bytes");
    }
    auto storage = std::make_shared<Storage>();
    storage->file = path;
    storage->key = name;
    storage->data = reinterpret_cast<const uint8_t*>(bytes.data()) + data_start + begin;
    storage->size = static_cast<size_t>(end - begin);
    storage->owner = file;
    t.storage = std::move(storage);
    out.tensors.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace

SafetensorsFile load_safetensors(const std::string& path) { return load(read_file_bytes(path)); }

SafetensorsFile load_safetensors_bytes(std::string bytes, const std::string& name) {
  auto file = std::make_shared<FileBytes>();
  file->path = name;
  file->bytes = std::move(bytes);
  return load(file);
}

}  // namespace attnmt
