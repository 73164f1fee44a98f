#include "pyformat/torch_file.h"

#include <cstring>
#include <map>
#include <optional>

#include "pyformat/file_bytes.h"
#include "pyformat/zip_reader.h"
#include "util/error.h"

namespace attnmt {

namespace {

// torch.save's legacy magic number 0x1950a86a20f9469cfc6c as pickle's LONG1 (10 bytes, little-endian).
constexpr char kLegacyMagic[] = "\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
constexpr size_t kLegacyMagicSize = sizeof(kLegacyMagic) - 1;
constexpr int64_t kLegacyProtocol = 1001;

struct NamedDType {
  const char* name;
  DType dtype;
};

// torch.<Type>Storage (typed storages: the tensor's dtype), and torch.UntypedStorage (bytes).
std::optional<DType> storage_dtype(const std::string& name) {
  static const NamedDType kStorages[] = {
      {"FloatStorage", DType::Float32},
      {"DoubleStorage", DType::Float64},
      {"HalfStorage", DType::Float16},
      {"BFloat16Storage", DType::BFloat16},
      {"LongStorage", DType::Int64},
      {"IntStorage", DType::Int32},
      {"ShortStorage", DType::Int16},
      {"CharStorage", DType::Int8},
      {"ByteStorage", DType::UInt8},
      {"BoolStorage", DType::Bool},
      {"ComplexFloatStorage", DType::Complex64},
      {"ComplexDoubleStorage", DType::Complex128},
      {"UntypedStorage", DType::UInt8},
  };
  for (const auto& s : kStorages) {
    if (name == s.name) return s.dtype;
  }
  return std::nullopt;
}

// torch.<dtype>, as _rebuild_tensor_v3 names the dtypes that have no typed storage.
std::optional<DType> torch_dtype(const std::string& name) {
  static const NamedDType kDTypes[] = {
      {"float32", DType::Float32},   {"float", DType::Float32},       {"float64", DType::Float64},
      {"double", DType::Float64},    {"float16", DType::Float16},     {"half", DType::Float16},
      {"bfloat16", DType::BFloat16}, {"int64", DType::Int64},         {"long", DType::Int64},
      {"int32", DType::Int32},       {"int", DType::Int32},           {"int16", DType::Int16},
      {"short", DType::Int16},       {"int8", DType::Int8},           {"uint8", DType::UInt8},
      {"bool", DType::Bool},         {"uint16", DType::UInt16},       {"uint32", DType::UInt32},
      {"uint64", DType::UInt64},     {"complex64", DType::Complex64}, {"complex128", DType::Complex128},
  };
  for (const auto& d : kDTypes) {
    if (name == d.name) return d.dtype;
  }
  return std::nullopt;
}

bool is_torch_module(const std::string& module) {
  return module == "torch" || module == "torch.cuda" || module == "torch.storage";
}

std::vector<int64_t> int_tuple(const PyValue& v) {
  std::vector<int64_t> out;
  for (const PyValue& item : v.as_list()) out.push_back(item.as_int());
  return out;
}

// Turns torch's persistent ids and rebuild calls into TensorRefs; the format supplies the storages.
class TensorBuilder {
 public:
  // key, dtype of the first tensor on it, element count, location -> the storage (made once per key)
  using StorageSource =
      std::function<std::shared_ptr<const Storage>(const std::string&, DType, int64_t, const std::string&)>;

  TensorBuilder(std::string file, StorageSource source) : file_(std::move(file)), source_(std::move(source)) {}

  PickleOptions options(const std::string& part) {
    PickleOptions o;
    o.file = file_;
    o.part = part;
    o.persistent_load = [this](const PyValue& pid) { return persistent_load(pid); };
    o.call = [this](const PyValue& callable, const PyValue& args) { return call(callable, args); };
    return o;
  }

  // After the storages are filled: every tensor's elements inside its storage.
  void check_tensors() const {
    for (const PyValue& v : tensors_) {
      const std::string error = tensor_extent_error(v.as_tensor());
      if (!error.empty()) throw InputError(file_ + ": a tensor's " + error);
    }
  }

 private:
  PyValue record(TensorRef t) {
    tensors_.push_back(PyValue::from_tensor(std::move(t)));
    return tensors_.back();
  }

  // ('storage', torch.FloatStorage, key, location, numel[, view_metadata (legacy)]), or the
  // legacy format's ('module', class, source file, source) for a pickled nn.Module class.
  PyValue persistent_load(const PyValue& pid) {
    if (pid.kind() != PyKind::Tuple || pid.size() == 0)
      pid.fail("expected a ('storage', ...) tuple, got " + describe(pid, 1));
    const std::string& kind = pid.at(0).as_string();
    if (kind == "module" && pid.size() >= 2) return pid.at(1);
    if (kind != "storage") pid.fail("a persistent id of kind '" + kind + "' (only 'storage' is known)");
    if (pid.size() < 5) pid.fail("a storage id of " + std::to_string(pid.size()) + " fields (expected 5 or 6)");
    const PyValue type = pid.at(1);
    if (type.kind() != PyKind::Global) type.fail("expected a storage type, got " + describe(type, 0));
    const auto dtype = is_torch_module(type.module()) ? storage_dtype(type.name()) : std::nullopt;
    if (!dtype)
      type.fail("storage type " + type.module() + "." + type.name() + " is not supported (quantized or unknown)");
    const std::string& key = pid.at(2).as_string();
    const std::string& location = pid.at(3).as_string();
    const int64_t numel = pid.at(4).as_int();
    if (numel < 0) pid.at(4).fail("a storage of " + std::to_string(numel) + " elements");
    TensorRef t;
    t.dtype = *dtype;
    t.shape = {numel};
    t.strides = {1};
    t.storage = source_(key, *dtype, numel, location);
    if (pid.size() >= 6 && !pid.at(5).is_none()) {  // a legacy view: (view key, offset, size) of the root storage
      const PyValue view = pid.at(5);
      t.offset = view.at(1).as_int();
      t.shape = {view.at(2).as_int()};
    }
    return record(std::move(t));
  }

  std::optional<PyValue> call(const PyValue& callable, const PyValue& args) {
    const std::string& m = callable.module();
    const std::string& n = callable.name();
    if (m == "torch._utils") {
      if (n == "_rebuild_tensor" || n == "_rebuild_tensor_v2" || n == "_rebuild_tensor_v3") {
        return rebuild_tensor(n, args);
      }
      if (n == "_rebuild_parameter" || n == "_rebuild_parameter_with_state") {
        if (args.size() < 2) args.fail("expected (data, requires_grad, ...), got " + describe(args, 1));
        TensorRef t = args.at(0).as_tensor();
        t.requires_grad = args.at(1).as_bool();
        t.is_parameter = true;
        return record(std::move(t));
      }
    }
    // A tensor subclass or a tensor with Python attributes: (func, type, args, state).
    if (m == "torch._tensor" && n == "_rebuild_from_type_v2" && args.size() >= 3 &&
        args.at(0).kind() == PyKind::Global && args.at(2).kind() == PyKind::Tuple) {
      return call(args.at(0), args.at(2));
    }
    return std::nullopt;
  }

  // _rebuild_tensor(storage, storage_offset, size, stride)
  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  // _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata])
  PyValue rebuild_tensor(const std::string& name, const PyValue& args) {
    const size_t needed = name == "_rebuild_tensor" ? 4 : name == "_rebuild_tensor_v2" ? 6 : 7;
    if (args.size() < needed) {
      args.fail("expected " + std::to_string(needed) + " arguments, got " + std::to_string(args.size()));
    }
    const PyValue storage_value = args.at(0);
    if (storage_value.kind() != PyKind::Tensor)
      storage_value.fail("expected a storage, got " + describe(storage_value, 0));
    const TensorRef& storage = storage_value.as_tensor();
    TensorRef t;
    t.storage = storage.storage;
    t.dtype = storage.dtype;
    if (name == "_rebuild_tensor_v3") {
      const PyValue d = args.at(6);
      const auto dtype = d.kind() == PyKind::Global && d.module() == "torch" ? torch_dtype(d.name()) : std::nullopt;
      if (!dtype) d.fail("dtype " + describe(d, 0) + " is not supported");
      t.dtype = *dtype;
    }
    // The storage's own offset (a legacy view), in the tensor's elements.
    const uint64_t storage_bytes = static_cast<uint64_t>(storage.offset) * dtype_size(storage.dtype);
    if (storage_bytes % dtype_size(t.dtype) != 0) args.fail("a storage view not aligned to its elements");
    const int64_t offset = args.at(1).as_int();
    if (offset < 0 ||
        __builtin_add_overflow(offset, static_cast<int64_t>(storage_bytes / dtype_size(t.dtype)), &t.offset)) {
      args.at(1).fail("storage offset " + std::to_string(offset));
    }
    t.shape = int_tuple(args.at(2));
    t.strides = int_tuple(args.at(3));
    if (t.shape.size() != t.strides.size()) {
      args.fail(std::to_string(t.shape.size()) + " sizes but " + std::to_string(t.strides.size()) + " strides");
    }
    if (needed >= 6) t.requires_grad = args.at(4).as_bool();
    return record(std::move(t));
  }

  std::string file_;
  StorageSource source_;
  std::vector<PyValue> tensors_;
};

[[noreturn]] void not_a_checkpoint(const std::string& path, const std::string& why) {
  throw InputError(path + ": not a PyTorch checkpoint (" + why + ")");
}

TorchFile load_zip(const std::shared_ptr<const FileBytes>& file) {
  const std::string& path = file->path;
  const ZipReader zip(file->bytes, path);
  // The archive's folder: torch.save names it after the file ("model/data.pkl" in model.pt).
  std::string prefix;
  for (const ZipEntry& e : zip.entries()) {
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && slash > 0 && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      prefix = e.name.substr(0, slash + 1);
      break;
    }
  }
  if (prefix.empty()) not_a_checkpoint(path, "a ZIP archive without a <folder>/data.pkl entry");
  if (const ZipEntry* order = zip.find(prefix + "byteorder")) {
    const std::string_view text = zip.read(*order);
    if (text != "little")
      throw InputError(path + ": saved with byte order '" + std::string(text.substr(0, 16)) +
                       "' (only 'little' is read)");
  }

  std::map<std::string, std::shared_ptr<const Storage>> storages;
  TensorBuilder builder(path, [&](const std::string& key, DType, int64_t, const std::string& location) {
    auto& storage = storages[key];
    if (!storage) {
      const ZipEntry* entry = zip.find(prefix + "data/" + key);
      if (!entry)
        throw InputError(path + ": storage '" + key + "' is missing (no entry " + prefix + "data/" + key + ")");
      const std::string_view bytes = zip.read(*entry);
      auto s = std::make_shared<Storage>();
      s->file = path;
      s->key = key;
      s->location = location;
      s->data = reinterpret_cast<const uint8_t*>(bytes.data());
      s->size = bytes.size();
      s->owner = file;
      storage = std::move(s);
    }
    return storage;
  });
  const ZipEntry* pickle = zip.find(prefix + "data.pkl");
  TorchFile out;
  out.format = TorchFormat::Zip;
  out.object = load_pickle(zip.read(*pickle), builder.options(prefix + "data.pkl"));
  builder.check_tensors();
  return out;
}

// The magic number's pickle: PROTO n, [FRAME], LONG1 (the number), STOP; the offset after it.
std::optional<size_t> skip_legacy_magic(std::string_view b) {
  size_t at = 0;
  if (b.size() < 2 || static_cast<uint8_t>(b[0]) != 0x80) return std::nullopt;
  at = 2;
  if (b.size() > at && static_cast<uint8_t>(b[at]) == 0x95) at += 9;  // FRAME and its length
  if (b.size() < at + kLegacyMagicSize + 1 ||
      b.substr(at, kLegacyMagicSize) != std::string_view(kLegacyMagic, kLegacyMagicSize))
    return std::nullopt;
  at += kLegacyMagicSize;
  if (b[at] != '.') return std::nullopt;
  return at + 1;
}

TorchFile load_legacy(const std::shared_ptr<const FileBytes>& file) {
  const std::string& path = file->path;
  const std::string_view bytes = file->bytes;
  const auto after_magic = skip_legacy_magic(bytes);
  if (!after_magic) not_a_checkpoint(path, "a pickle without torch.save's magic number");
  size_t at = *after_magic;
  auto next_pickle = [&](const std::string& part, const PickleOptions* with) {
    PickleOptions plain;
    plain.file = path;
    plain.part = part;
    size_t used = 0;
    PyValue v = load_pickle(bytes.substr(at), with ? *with : plain, &used);
    at += used;
    return v;
  };
  const PyValue protocol = next_pickle("the protocol version", nullptr);
  if (protocol.kind() != PyKind::Int || protocol.as_int() != kLegacyProtocol) {
    throw InputError(path + ": legacy protocol version " + describe(protocol, 0) + " (only 1001 is known)");
  }
  const PyValue sys_info = next_pickle("sys_info", nullptr);
  if (sys_info.kind() == PyKind::Dict && sys_info.has("little_endian") &&
      sys_info.get("little_endian").kind() == PyKind::Bool && !sys_info.get("little_endian").as_bool()) {
    throw InputError(path + ": saved on a big-endian machine (only little-endian files are read)");
  }

  // The object comes first and the storages' bytes after the key list: storages start empty and
  // are filled once their place in the file is known.
  struct Pending {
    std::shared_ptr<Storage> storage;
    DType dtype;
    int64_t numel;
  };
  std::map<std::string, Pending> pending;
  TensorBuilder builder(path, [&](const std::string& key, DType dtype, int64_t numel, const std::string& location) {
    auto it = pending.find(key);
    if (it == pending.end()) {
      auto s = std::make_shared<Storage>();
      s->file = path;
      s->key = key;
      s->location = location;
      s->owner = file;
      it = pending.emplace(key, Pending{std::move(s), dtype, numel}).first;
    }
    return std::shared_ptr<const Storage>(it->second.storage);
  });
  const PickleOptions options = builder.options("the saved object");
  TorchFile out;
  out.format = TorchFormat::Legacy;
  out.object = next_pickle("the saved object", &options);
  const PyValue keys = next_pickle("the storage keys", nullptr);
  for (const PyValue& key_value : keys.as_list()) {
    const std::string& key = key_value.as_string();
    const auto it = pending.find(key);
    if (it == pending.end()) throw InputError(path + ": storage '" + key + "' is stored but no tensor uses it");
    Pending& p = it->second;
    if (p.storage->data) throw InputError(path + ": storage '" + key + "' is stored twice");
    if (bytes.size() - at < 8) throw InputError(path + ": truncated: storage '" + key + "' is missing");
    int64_t numel;
    std::memcpy(&numel, bytes.data() + at, 8);
    at += 8;
    if (numel != p.numel) {
      throw InputError(path + ": storage '" + key + "' holds " + std::to_string(numel) +
                       " elements, its tensors expect " + std::to_string(p.numel));
    }
    const uint64_t element = dtype_size(p.dtype);
    if (static_cast<uint64_t>(numel) > (bytes.size() - at) / element) {
      throw InputError(path + ": truncated: storage '" + key + "' needs " + std::to_string(numel * element) +
                       " bytes, " + std::to_string(bytes.size() - at) + " left");
    }
    p.storage->data = reinterpret_cast<const uint8_t*>(bytes.data() + at);
    p.storage->size = static_cast<size_t>(numel) * element;
    at += p.storage->size;
  }
  for (const auto& [key, p] : pending) {
    if (!p.storage->data && p.numel > 0) throw InputError(path + ": storage '" + key + "' is used but not stored");
  }
  builder.check_tensors();
  return out;
}

enum class Container { Zip, Legacy };

// Which of torch.save's formats `head` (the file's first bytes) starts; InputError if neither.
Container container(const std::string& path, std::string_view head) {
  if (looks_like_zip(head)) return Container::Zip;
  if (head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x80) return Container::Legacy;
  if (head.empty()) not_a_checkpoint(path, "an empty file");
  if (head.size() >= 9 && head[8] == '{') not_a_checkpoint(path, "a safetensors file: load_safetensors reads those");
  if (head.size() >= 262 && head.substr(257, 5) == "ustar") {
    not_a_checkpoint(path, "a tar archive: the format of torch < 0.4, which is not read");
  }
  not_a_checkpoint(path, "neither a ZIP archive nor a pickle");
}

TorchFile load(Container kind, const std::shared_ptr<const FileBytes>& file) {
  return kind == Container::Zip ? load_zip(file) : load_legacy(file);
}

}  // namespace

TorchFile load_torch_file(const std::string& path) {
  const Container kind = container(path, read_file_head(path, 512));  // before reading a large foreign file
  return load(kind, read_file_bytes(path));
}

TorchFile load_torch_bytes(std::string bytes, const std::string& name) {
  auto file = std::make_shared<FileBytes>();
  file->path = name;
  file->bytes = std::move(bytes);
  return load(container(name, std::string_view(file->bytes).substr(0, 512)), file);
}

}  // namespace attnmt
