// A tensor as a file stores it, without LibTorch: its dtype, shape, strides and offset over the
// bytes of a storage that other tensors may share (torch.save keeps views of one storage as one
// storage). load_torch_file (torch_file.h) and load_safetensors (safetensors.h) make them; the
// converter copies them into LibTorch tensors with to_float32_contiguous.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attnmt {

enum class DType {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Complex64,
  Complex128,
};

const char* dtype_name(DType dtype);  // as torch names it: "float32", "bfloat16", "int64", ...
size_t dtype_size(DType dtype);       // bytes per element
bool dtype_is_floating(DType dtype);  // float16, bfloat16, float32, float64

// The bytes of one storage (little-endian, as every file this reads stores them).
struct Storage {
  std::string file;      // the file it was read from, for messages
  std::string key;       // its name in the file: "0" (zip), "94363728591872" (legacy), a tensor's (safetensors)
  std::string location;  // where it was saved from: "cpu", "cuda:0" (empty for safetensors)
  const uint8_t* data = nullptr;
  size_t size = 0;                    // bytes
  std::shared_ptr<const void> owner;  // keeps `data` alive (the file's bytes)
};

struct TensorRef {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;    // outermost dimension first; empty for a 0-d tensor
  std::vector<int64_t> strides;  // in elements, one per dimension
  int64_t offset = 0;            // in elements, from the start of the storage
  std::shared_ptr<const Storage> storage;
  bool requires_grad = false;
  bool is_parameter = false;  // saved as a torch.nn.Parameter

  int64_t numel() const;  // the product of the shape (1 for a 0-d tensor)
  bool is_contiguous() const;
};

// Row-major strides for `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

// Empty when every element of `tensor` lies inside its storage; else what is wrong, in words
// ("offset 1000 + 2 elements reach beyond storage '0' (4 float32 elements)").
std::string tensor_extent_error(const TensorRef& tensor);

// The elements in row-major order (strides and offset applied), float16 / bfloat16 / float64
// converted to float32. InputError, naming the storage's file and `name` (or the storage's key),
// for any other dtype or a tensor whose elements lie outside its storage.
std::vector<float> to_float32_contiguous(const TensorRef& tensor, const std::string& name = {});

// The same for integer and bool tensors (as int64; uint64 values above INT64_MAX are an error).
std::vector<int64_t> to_int64_contiguous(const TensorRef& tensor, const std::string& name = {});

}  // namespace attnmt
