#include "pyformat/npz.h"

#include <cctype>

#include "pyformat/file_bytes.h"
#include "pyformat/zip_reader.h"
#include "util/error.h"

namespace attnmt {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

DType parse_descr(const std::string& descr, const std::string& where) {
  // '<' little-endian, '|' not applicable (one byte), '=' native (little-endian on every CPU attnmt runs on)
  static const std::pair<const char*, DType> kCodes[] = {
      {"b1", DType::Bool},    {"u1", DType::UInt8},   {"i1", DType::Int8},    {"i2", DType::Int16},
      {"u2", DType::UInt16},  {"i4", DType::Int32},   {"u4", DType::UInt32},  {"i8", DType::Int64},
      {"u8", DType::UInt64},  {"f2", DType::Float16}, {"f4", DType::Float32}, {"f8", DType::Float64},
  };
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=')) {
    for (const auto& [code, dtype] : kCodes) {
      if (descr.compare(1, 2, code) == 0) return dtype;
    }
  }
  if (!descr.empty() && descr[0] == '>' && descr.size() == 3 && descr[1] != '|' && descr[2] != '1') {
    throw InputError(where + ": big-endian dtype '" + descr + "' (only little-endian arrays are read)");
  }
  throw InputError(where + ": dtype '" + descr + "' is not supported (bool, int, uint and float arrays of 1-8 bytes)");
}

// The value after 'key': in the header dict literal, as written (a quoted string, True/False or a tuple).
std::string dict_value(const std::string& header, const std::string& key, const std::string& where) {
  const auto quoted_single = "'" + key + "'", quoted_double = "\"" + key + "\"";
  auto at = header.find(quoted_single);
  size_t len = quoted_single.size();
  if (at == std::string::npos) {
    at = header.find(quoted_double);
    len = quoted_double.size();
  }
  if (at == std::string::npos) throw InputError(where + ": its .npy header has no '" + key + "'");
  auto p = header.find_first_not_of(" ", at + len);
  if (p == std::string::npos || header[p] != ':') throw InputError(where + ": its .npy header does not parse at '" + key + "'");
  p = header.find_first_not_of(" ", p + 1);
  if (p == std::string::npos) throw InputError(where + ": its .npy header ends after '" + key + "'");
  size_t end;
  if (header[p] == '\'' || header[p] == '"') {
    end = header.find(header[p], p + 1);
    if (end == std::string::npos) throw InputError(where + ": its .npy header has an unterminated string");
    return header.substr(p + 1, end - p - 1);
  }
  if (header[p] == '(') {
    end = header.find(')', p);
    if (end == std::string::npos) throw InputError(where + ": its .npy header has an unterminated shape");
    return header.substr(p, end - p + 1);
  }
  end = header.find_first_of(",}", p);
  if (end == std::string::npos) throw InputError(where + ": its .npy header does not parse at '" + key + "'");
  auto value = header.substr(p, end - p);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

std::vector<int64_t> parse_shape(const std::string& tuple, const std::string& where) {
  std::vector<int64_t> shape;
  size_t p = 1;  // after '('
  while (p < tuple.size()) {
    while (p < tuple.size() && (tuple[p] == ' ' || tuple[p] == ',')) ++p;
    if (p >= tuple.size() || tuple[p] == ')') break;
    size_t q = p;
    while (q < tuple.size() && std::isdigit(static_cast<unsigned char>(tuple[q]))) ++q;
    if (q == p || q - p > 18) throw InputError(where + ": its .npy shape " + tuple + " is not a tuple of sizes");
    shape.push_back(std::stoll(tuple.substr(p, q - p)));
    p = q;
  }
  return shape;
}

TensorRef parse_npy(std::string_view data, const std::shared_ptr<const FileBytes>& file, const std::string& name,
                    const std::string& where) {
  if (data.size() < 10 || data.substr(0, kMagic.size()) != kMagic) throw InputError(where + ": not a .npy array");
  const int major = static_cast<uint8_t>(data[6]);
  size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(data[8]) | (static_cast<size_t>(static_cast<uint8_t>(data[9])) << 8);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) throw InputError(where + ": a truncated .npy header");
    for (int k = 3; k >= 0; --k) header_len = (header_len << 8) | static_cast<uint8_t>(data[8 + static_cast<size_t>(k)]);
    header_at = 12;
  } else {
    throw InputError(where + ": .npy format version " + std::to_string(major) + " (1, 2 and 3 are read)");
  }
  if (header_len > data.size() - header_at) throw InputError(where + ": its .npy header runs past the entry");
  const std::string header(data.substr(header_at, header_len));
  TensorRef t;
  t.dtype = parse_descr(dict_value(header, "descr", where), where);
  const auto fortran = dict_value(header, "fortran_order", where);
  if (fortran != "True" && fortran != "False") throw InputError(where + ": fortran_order '" + fortran + "' is not True or False");
  t.shape = parse_shape(dict_value(header, "shape", where), where);
  uint64_t numel = 1;
  for (const auto d : t.shape) {
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel)) throw InputError(where + ": a shape beyond 64 bits");
  }
  if (fortran == "True") {
    // Column-major: the first dimension varies fastest.
    t.strides.assign(t.shape.size(), 1);
    for (size_t i = 1; i < t.shape.size(); ++i) t.strides[i] = t.strides[i - 1] * t.shape[i - 1];
  } else {
    t.strides = contiguous_strides(t.shape);
  }
  const size_t data_at = header_at + header_len;
  uint64_t bytes;
  if (__builtin_mul_overflow(numel, dtype_size(t.dtype), &bytes) || bytes != data.size() - data_at) {
    throw InputError(where + ": " + std::to_string(numel) + " " + dtype_name(t.dtype) + " elements need " +
                     std::to_string(numel * dtype_size(t.dtype)) + " bytes, the entry holds " +
                     std::to_string(data.size() - data_at));
  }
  auto storage = std::make_shared<Storage>();
  storage->file = file->path;
  storage->key = name;
  storage->data = reinterpret_cast<const uint8_t*>(data.data()) + data_at;
  storage->size = static_cast<size_t>(bytes);
  storage->owner = file;
  t.storage = std::move(storage);
  return t;
}

}  // namespace

NpzFile load_npz(const std::string& path) {
  const auto file = read_file_bytes(path);
  if (!looks_like_zip(std::string_view(file->bytes).substr(0, 4))) {
    throw InputError(in_quotes(path) + ": not a .npz file (not a ZIP archive)");
  }
  ZipReader zip(file->bytes, path);
  NpzFile out;
  for (const auto& entry : zip.entries()) {
    if (entry.name.size() < 4 || entry.name.compare(entry.name.size() - 4, 4, ".npy") != 0) {
      throw InputError(in_quotes(path) + ": not a .npz file (its entry '" + entry.name + "' is not a .npy array)");
    }
    const auto name = entry.name.substr(0, entry.name.size() - 4);
    const auto where = in_quotes(path) + ": array '" + name + "'";
    out.arrays.emplace(name, parse_npy(zip.read(entry), file, name, where));
  }
  return out;
}

std::string npz_text(const TensorRef& array, const std::string& name) {
  if ((array.dtype != DType::Int8 && array.dtype != DType::UInt8) || array.shape.size() != 1) {
    throw InputError(array.storage->file + ": array '" + name + "' is not text (a 1-d byte array)");
  }
  std::string text(reinterpret_cast<const char*>(array.storage->data), static_cast<size_t>(array.shape[0]));
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

}  // namespace attnmt
