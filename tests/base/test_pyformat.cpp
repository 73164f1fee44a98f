// The torch-free readers of Python's files (src/pyformat/): pickles, torch.save checkpoints (zip,
// legacy, zip64), safetensors and numpy .npz files, compared with what Python itself reads from the same files
// (tests/data/pyformat/make.py wrote both the files and Python's reading of them, as JSON).
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pyformat/npz.h"
#include "pyformat/pickle.h"
#include "pyformat/safetensors.h"
#include "pyformat/torch_file.h"
#include "util/error.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using attnmt::InputError;
using attnmt::PyKind;
using attnmt::PyValue;
using attnmt::TensorRef;
using nlohmann::json;

namespace {

const std::string kDir = ATTNMT_TEST_DATA_DIR "/pyformat/";

json read_json(const std::string& name) { return json::parse(attnmt::read_file(kDir + name)); }

PyValue load_pickle_file(const std::string& path) {
  attnmt::PickleOptions options;
  options.file = path;
  // The value keeps only its arena, not the bytes: a temporary string is fine.
  return attnmt::load_pickle(attnmt::read_file(path), options);
}

PyValue load_pickle_bytes(const std::string& bytes) {
  attnmt::PickleOptions options;
  options.file = "hand.pkl";
  return attnmt::load_pickle(bytes, options);
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

std::string hex(const std::string& bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// Compares a PyValue with Python's reading in make.py's encoding (see its docstring).
class Matcher {
 public:
  void match(const PyValue& v, const json& e) {
    if (e.is_null()) {
      if (!v.is_none()) fail(v, "expected None, got " + attnmt::describe(v, 0));
    } else if (e.is_boolean()) {
      if (v.kind() != PyKind::Bool || v.as_bool() != e.get<bool>()) fail(v, "expected " + e.dump());
    } else if (e.is_number_integer()) {
      if (v.kind() != PyKind::Int || v.as_int() != e.get<int64_t>())
        fail(v, "expected " + e.dump() + ", got " + attnmt::describe(v, 0));
    } else if (e.is_number_float()) {
      const double d = e.get<double>();
      if (v.kind() != PyKind::Float || v.as_float() != d || std::signbit(v.as_float()) != std::signbit(d)) {
        fail(v, "expected " + e.dump() + ", got " + attnmt::describe(v, 0));
      }
    } else if (e.is_string()) {
      if (v.kind() != PyKind::String || v.as_string() != e.get<std::string>()) fail(v, "expected " + e.dump());
    } else if (e.contains("bytes")) {
      if (v.kind() != PyKind::Bytes || hex(v.as_bytes()) != e["bytes"]) fail(v, "expected bytes " + e["bytes"].dump());
    } else if (e.contains("list") || e.contains("tuple")) {
      const bool list = e.contains("list");
      const json& items = list ? e["list"] : e["tuple"];
      if (v.kind() != (list ? PyKind::List : PyKind::Tuple) || v.size() != items.size()) {
        return fail(v, "expected " + std::string(list ? "a list" : "a tuple") + " of " + std::to_string(items.size()) +
                           ", got " + attnmt::describe(v, 0));
      }
      for (size_t k = 0; k < items.size(); ++k) match(v.at(k), items[k]);
    } else if (e.contains("dict")) {
      if (v.kind() != PyKind::Dict) return fail(v, "expected a dict, got " + attnmt::describe(v, 0));
      match_items(v, e["dict"]);
      if (e.contains("attrs")) match_attrs(v, e["attrs"]);
    } else if (e.contains("global")) {
      if (v.kind() != PyKind::Global || v.module() + "." + v.name() != e["global"])
        fail(v, "expected global " + e["global"].dump());
    } else if (e.contains("object")) {
      if (v.kind() != PyKind::Object || v.module() + "." + v.name() != e["object"]) {
        return fail(v, "expected an object " + e["object"].dump() + ", got " + attnmt::describe(v, 0));
      }
      if (e.contains("args")) {
        const PyValue args = v.args();
        if (args.size() != e["args"].size()) return fail(v, "expected " + e["args"].dump() + " as args");
        for (size_t k = 0; k < args.size(); ++k) match(args.at(k), e["args"][k]);
      }
      if (e.contains("items")) match_items(v, e["items"]);
      if (e.contains("attrs")) match_attrs(v, e["attrs"]);
      if (e.contains("state")) match(v.state(), e["state"]);
      if (e.contains("set")) {  // any order
        std::vector<int64_t> got, expected = e["set"].get<std::vector<int64_t>>();
        for (const PyValue& item : v.list_items()) got.push_back(item.as_int());
        std::sort(got.begin(), got.end());
        std::sort(expected.begin(), expected.end());
        if (got != expected) fail(v, "expected the set " + e["set"].dump());
      }
    } else if (e.contains("tensor")) {
      match_tensor(v, e);
    } else {
      FAIL("make.py wrote an encoding this test does not know: " << e.dump());
    }
  }

  size_t tensors() const { return tensors_; }

 private:
  void fail(const PyValue& v, const std::string& what) { FAIL_CHECK(v.file() << ": " << v.path() << ": " << what); }

  void match_items(const PyValue& v, const json& pairs) {
    const auto items = v.items();
    if (items.size() != pairs.size()) return fail(v, "expected " + std::to_string(pairs.size()) + " items");
    for (size_t k = 0; k < items.size(); ++k) {
      match(items[k].first, pairs[k][0]);
      match(items[k].second, pairs[k][1]);
    }
  }

  void match_attrs(const PyValue& v, const json& attrs) {
    for (const auto& [name, value] : attrs.items()) {
      if (!v.has_attr(name)) {
        fail(v, "no attribute " + name);
        continue;
      }
      match(v.attr(name), value);
    }
  }

  void match_tensor(const PyValue& v, const json& e) {
    if (v.kind() != PyKind::Tensor) return fail(v, "expected a tensor, got " + attnmt::describe(v, 0));
    ++tensors_;
    const TensorRef& t = v.as_tensor();
    INFO(v.path());
    CHECK(attnmt::dtype_name(t.dtype) == e["tensor"].get<std::string>());
    CHECK(t.shape == e["shape"].get<std::vector<int64_t>>());
    CHECK(t.strides == e["stride"].get<std::vector<int64_t>>());
    CHECK(t.offset == e["offset"].get<int64_t>());
    CHECK(t.requires_grad == e["requires_grad"].get<bool>());
    CHECK(t.is_parameter == e["parameter"].get<bool>());
    // Tensors on one storage in Python share one Storage here, and only they do.
    const int id = e["storage"].get<int>();
    const auto [by_id, new_id] = storage_by_id_.emplace(id, t.storage.get());
    CHECK(by_id->second == t.storage.get());
    const auto [by_ptr, new_ptr] = id_by_storage_.emplace(t.storage.get(), id);
    CHECK(by_ptr->second == id);
    if (e.contains("bits")) {
      std::vector<uint32_t> got;
      for (float f : attnmt::to_float32_contiguous(t)) got.push_back(bits_of(f));
      CHECK(got == e["bits"].get<std::vector<uint32_t>>());
    } else {
      CHECK(attnmt::to_int64_contiguous(t) == e["ints"].get<std::vector<int64_t>>());
    }
  }

  std::map<int, const attnmt::Storage*> storage_by_id_;
  std::map<const attnmt::Storage*, int> id_by_storage_;
  size_t tensors_ = 0;
};

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("attnmt_pyformat_" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string path = (path_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

// Reads every tensor of a loaded tree (so that a damaged file is read as far as a converter would).
void touch_tensors(const PyValue& v, int depth) {
  if (depth > 32) return;
  switch (v.kind()) {
    case PyKind::Tensor: {
      const TensorRef& t = v.as_tensor();
      if (attnmt::dtype_is_floating(t.dtype)) {
        (void)attnmt::to_float32_contiguous(t);
      } else if (t.dtype != attnmt::DType::Complex64 && t.dtype != attnmt::DType::Complex128) {
        (void)attnmt::to_int64_contiguous(t);
      }
      break;
    }
    case PyKind::List:
    case PyKind::Tuple:
      for (const PyValue& item : v.as_list()) touch_tensors(item, depth + 1);
      break;
    case PyKind::Dict:
    case PyKind::Object:
      for (const auto& [key, value] : v.items()) touch_tensors(value, depth + 1);
      if (v.kind() == PyKind::Object) {
        touch_tensors(v.args(), depth + 1);
        for (const PyValue& item : v.list_items()) touch_tensors(item, depth + 1);
      }
      touch_tensors(v.state(), depth + 1);
      break;
    default:
      break;
  }
}

// Loading `bytes` either works or throws an InputError naming it; nothing else (no crash, no other
// exception). Returns the message, empty if it loaded.
std::string load_or_input_error(const std::string& bytes, const std::string& name) {
  try {
    touch_tensors(attnmt::load_torch_bytes(bytes, name).object, 0);
    return {};
  } catch (const InputError& e) {
    const std::string message = e.what();
    CHECK(message.rfind(name + ": ", 0) == 0);
    return message;
  }
}

}  // namespace

TEST_CASE("pickle: protocols 2 to 5 read as Python reads them", "[pyformat]") {
  const json expected = read_json("objects.json");
  for (int protocol = 2; protocol <= 5; ++protocol) {
    const std::string path = kDir + "objects_p" + std::to_string(protocol) + ".pkl";
    INFO(path);
    Matcher().match(load_pickle_file(path), expected);
  }

  const std::string path = kDir + "objects_p2.pkl";
  const PyValue root = load_pickle_file(path);
  // argparse.Namespace: its options are attributes.
  const PyValue opt = root.get("opt");
  CHECK(opt.is_instance("argparse", "Namespace"));
  CHECK(opt.attr("rnn_size").as_int() == 512);
  CHECK(opt.attr("dropout").as_float() == 0.3);
  CHECK(opt.attr("learning_rate").as_float() == 1.0);
  CHECK(opt.attr("copy_attn").as_bool());
  CHECK(opt.attr("src_word_vec_size").is_none());
  CHECK(opt.attr("label").as_string() == "Grüße ✓");
  CHECK(opt.attr("layers").as_list().size() == 2);
  CHECK_FALSE(opt.has_attr("no_such_option"));
  // torchtext's Vocab (make.py's stand-in): itos a list, stoi a defaultdict read like a dict.
  const PyValue vocab = root.get("vocab");
  CHECK(vocab.is_instance("torchtext.vocab", "Vocab"));
  CHECK(vocab.attr("itos").at(0).as_string() == "<unk>");
  const PyValue stoi = vocab.attr("stoi");
  CHECK(stoi.is_instance("collections", "defaultdict"));
  CHECK(stoi.args().at(0).is_global("torchtext.vocab", "_default_unk_index"));
  CHECK(stoi.get("cat").as_int() == 2);
  CHECK(vocab.attr("freqs").args().at(0).get("the").as_int() == 3);
  // Protocol 2 names Python 2's builtins (__builtin__.long): read as Python 3's.
  CHECK(root.get("builtin_type").is_global("builtins", "int"));
  CHECK(root.get("partial").is_instance("functools", "partial"));
  CHECK(root.get("ordered").keys() == std::vector<std::string>{"b", "a"});
  CHECK(root.get("ordered").size() == 3);

  // The wrong kind, a missing key or attribute: the file and the path to the value.
  CHECK_THROWS_WITH(opt.attr("rnn_size").as_string(), Catch::Contains(path) && Catch::Contains("['opt'].rnn_size") &&
                                                          Catch::Contains("expected str, got int 512"));
  CHECK_THROWS_WITH(root.get("vocab").attr("itos").at(99), Catch::Contains("['vocab'].itos: index 99 beyond its"));
  CHECK_THROWS_WITH(root.get("model"),
                    Catch::Contains("the top-level object: no key 'model'") && Catch::Contains("'opt'"));
  CHECK_THROWS_WITH(opt.attr("rnn"), Catch::Contains("no attribute 'rnn'") && Catch::Contains("'rnn_size'"));
  CHECK_THROWS_AS(root.get("ints").get("x"), InputError);

  CHECK(attnmt::describe(root.get("ints"), 1) == "[0, 1, -1, 255, 256, 65535, 65536, -2147483648, ... (14 items)]");
  CHECK(attnmt::describe(root.get("tuples")) == "((), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4))");
  CHECK(attnmt::describe(opt, 0).rfind("<argparse.Namespace() state={...9 items}>", 0) == 0);
  CHECK(attnmt::describe(root.get("bytes")) == "b'\\x00\\x01\\xff abc'");
}

TEST_CASE("pickle: hand-written opcodes", "[pyformat]") {
  // Protocol 0 and 1, which neither torch.save nor Python 3's pickle.dump writes by default.
  CHECK(load_pickle_bytes("I42\n.").as_int() == 42);
  CHECK(load_pickle_bytes("I01\n.").as_bool());
  CHECK(load_pickle_bytes("L-12345678901L\n.").as_int() == -12345678901);
  CHECK(load_pickle_bytes("F1.5\n.").as_float() == 1.5);
  CHECK(load_pickle_bytes("S'a\\nb\\x41'\np0\n.").as_string() == "a\nbA");
  CHECK(load_pickle_bytes("Vcaf\\u00e9\np0\n.").as_string() == "caf\xc3\xa9");
  CHECK(attnmt::describe(load_pickle_bytes("(lp0\nI1\naI2\na(dp1\nVk\np2\nI3\nsa.")) == "[1, 2, {'k': 3}]");
  CHECK(load_pickle_bytes("ccollections\nOrderedDict\n(tR.").kind() == PyKind::Dict);
  CHECK(load_pickle_bytes("(c__main__\nPoint\no.").is_instance("__main__", "Point"));
  CHECK(load_pickle_bytes("(i__main__\nPoint\n.").is_instance("__main__", "Point"));
  // Integers: every LONG width within 64 bits, and the end of it.
  CHECK(load_pickle_bytes("\x80\x02\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f.").as_int() == INT64_MAX);
  CHECK(load_pickle_bytes(std::string("\x80\x02\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80.", 13)).as_int() == INT64_MIN);
  CHECK(load_pickle_bytes("\x80\x02\x8a\x01\xff.").as_int() == -1);
  CHECK(load_pickle_bytes(std::string("\x80\x02\x8a\x00.", 5)).as_int() == 0);
  CHECK(load_pickle_bytes(std::string("\x80\x02\x8b\x02\x00\x00\x00\x01\x02.", 10)).as_int() == 0x0201);
  CHECK(load_pickle_bytes(std::string("\x80\x02\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\xff.", 14)).as_int() == -1);
  CHECK_THROWS_WITH(load_pickle_bytes(std::string("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", 14)),
                    Catch::Contains("hand.pkl: pickle byte 2: an integer beyond 64 bits"));
  // Protocol 4's 8-byte lengths.
  CHECK(load_pickle_bytes(std::string("\x80\x04\x8d\x02\0\0\0\0\0\0\0hi.", 14)).as_string() == "hi");
  CHECK(load_pickle_bytes(std::string("\x80\x04\x8e\x01\0\0\0\0\0\0\0\xff.", 13)).as_bytes() == "\xff");
  // Dict keys as Python compares them: 1, 1.0 and True are one key (the first stays, the last value wins).
  const PyValue dict = load_pickle_bytes(std::string(
      "\x80\x02}(K\x01X\x01\0\0\0aG?\xf0\0\0\0\0\0\0X\x01\0\0\0b\x88X\x01\0\0\0cX\x01\0\0\0kK\x02X\x01\0\0\0kK\x03u.",
      52));
  REQUIRE(dict.items().size() == 2);
  CHECK(dict.items()[0].first.kind() == PyKind::Int);
  CHECK(dict.items()[0].second.as_string() == "c");
  CHECK(dict.get("k").as_int() == 3);
  // A list that contains itself, and lists nested 200000 deep (no recursion frees them).
  const PyValue cycle =
      load_pickle_bytes(std::string("\x80\x02]q\x00h\x00"
                                    "a.",
                                    9));
  CHECK(attnmt::describe(cycle, 2) == "[[[[...1 items]]]]");
  std::string deep("\x80\x02]q\x00h\x00", 7);
  for (int k = 0; k < 200000; ++k)
    deep +=
        "]q\x01"
        "a0h\x01";
  deep += "0.";
  CHECK(attnmt::describe(load_pickle_bytes(deep), 1) == "[[[...1 items]]]");

  struct Bad {
    std::string bytes, message;
  };
  const std::vector<Bad> bad{
      {"\x80\x02\xff.", "hand.pkl: pickle byte 2: unknown opcode 0xff"},
      {"\x80\x02", "truncated: the pickle ends before its STOP opcode"},
      {std::string("\x80\x02X\x10\0\0\0abc", 10), "truncated: needs 16 more bytes, 3 left"},
      {std::string(5000, '(') + ".", "nested more than 4096 MARKs deep"},
      {"\x80\x02h\x05.", "memo entry 5 was never stored"},
      {"\x80\x02"
       "a.",
       "the stack is empty"},
      {"\x80\x02"
       "]K\x01K\x02s.",
       "SETITEM on a list"},
      {"\x80\x02)K\x01"
       "a.",
       "APPEND to a tuple"},
      {"\x80\x02NQ.", "a persistent id"},
      {"\x80\x06N.", "protocol 6, newer than 5"},
      {"\x80\x02\x82\x01.", "extension code"},
      {"\x80\x05\x97.", "out-of-band buffer"},
      {"\x80\x02K\x01K\x02R.", "a call's arguments are a int, not a tuple"},
      {"\x80\x02]N"
       "b.",
       "BUILD on a list"},
      {"I12x\n.", "not an integer: '12x'"},
      {"L123456789012345678901234567890L\n.", "an integer beyond 64 bits"},
  };
  for (const auto& b : bad) {
    INFO(hex(b.bytes));
    CHECK_THROWS_AS(load_pickle_bytes(b.bytes), InputError);
    CHECK_THROWS_WITH(load_pickle_bytes(b.bytes),
                      Catch::Contains("hand.pkl: pickle byte") && Catch::Contains(b.message));
  }
}

TEST_CASE("torch.save: a state dict, zip, legacy and zip64, as torch.load reads it", "[pyformat]") {
  const json expected = read_json("state.json");
  const std::vector<std::pair<std::string, attnmt::TorchFormat>> files{
      {"state.pt", attnmt::TorchFormat::Zip},
      {"state_legacy.pt", attnmt::TorchFormat::Legacy},
      {"state_zip64.pt", attnmt::TorchFormat::Zip},
  };
  for (const auto& [name, format] : files) {
    const std::string path = kDir + name;
    INFO(path);
    const attnmt::TorchFile file = attnmt::load_torch_file(path);
    CHECK(file.format == format);
    Matcher matcher;
    matcher.match(file.object, expected);
    CHECK(matcher.tensors() == 18);

    const PyValue& root = file.object;
    const TensorRef& head = root.get("shared_head").as_tensor();
    const TensorRef& tail = root.get("shared_tail").as_tensor();
    CHECK(head.storage == tail.storage);
    CHECK(tail.offset == 6);
    CHECK(head.storage->size == 10 * 4);
    CHECK(head.storage->location == "cpu");
    CHECK_FALSE(root.get("transposed").as_tensor().is_contiguous());
    CHECK(attnmt::to_float32_contiguous(root.get("transposed").as_tensor())[1] == 0.5f);  // base[1][0] = 4 / 8
    CHECK(root.get("param").as_tensor().is_parameter);
    CHECK(root.get("linear").attr("_metadata").get("").get("version").as_int() == 1);
    CHECK(root.get("step").as_int() == 1234);
    CHECK(attnmt::describe(root.get("param")) == "parameter(float32 [1, 2])");

    CHECK_THROWS_WITH(attnmt::to_float32_contiguous(root.get("i64").as_tensor(), "['i64']"),
                      Catch::Contains(path + ": ['i64']: a int64 tensor, not a floating-point one"));
    CHECK_THROWS_WITH(attnmt::to_int64_contiguous(root.get("f32").as_tensor()),
                      Catch::Contains(path + ": storage '") && Catch::Contains("a float32 tensor, not an integer one"));
    CHECK_THROWS_WITH(root.get("f32").as_int(),
                      Catch::Contains("['f32']: expected int, got tensor tensor(float32 [2, 3])"));
  }
}

TEST_CASE("torch.save: a whole nn.Module, zip and legacy, as torch.load reads it", "[pyformat]") {
  const json expected = read_json("module.json");
  for (const std::string name : {"module.pt", "module_legacy.pt"}) {
    INFO(name);
    const PyValue root = attnmt::load_torch_file(kDir + name).object;
    Matcher matcher;
    matcher.match(root, expected);
    CHECK(matcher.tensors() == 4);
    // The legacy format names the class by a persistent id ('module', class, file, source).
    CHECK(root.is_instance("onmt.tiny", "Tiny"));
    CHECK(root.attr("_parameters").get("weight").as_tensor().is_parameter);
    CHECK(root.attr("_modules").get("child").attr("child").is_none());
  }
}

TEST_CASE("torch.save: torch >= 2.1's _rebuild_tensor_v3 on an UntypedStorage, and tensor subclasses", "[pyformat]") {
  const PyValue root = attnmt::load_torch_file(kDir + "v3.pt").object;
  Matcher().match(root, read_json("v3.json"));
  // One storage key under two storage types (UntypedStorage bytes, HalfStorage): one Storage.
  CHECK(root.get("v3").as_tensor().storage == root.get("subclass").as_tensor().storage);
  CHECK(root.get("v3").as_tensor().storage->size == 8);
}

TEST_CASE("torch.save: options, vocabularies and custom classes as torch.load reads them", "[pyformat]") {
  const attnmt::TorchFile file = attnmt::load_torch_file(kDir + "objects.pt");
  CHECK(file.format == attnmt::TorchFormat::Zip);
  Matcher().match(file.object, read_json("objects.json"));
  CHECK(file.object.get("class").is_global("torchtext.vocab", "Vocab"));
  CHECK(file.object.get("counter").is_instance("collections", "Counter"));
}

TEST_CASE("safetensors: tensors and metadata as written", "[pyformat]") {
  const json expected = read_json("tensors.json");
  const std::string path = kDir + "tensors.safetensors";
  const attnmt::SafetensorsFile file = attnmt::load_safetensors(path);
  CHECK(file.metadata == expected["metadata"].get<std::map<std::string, std::string>>());
  REQUIRE(file.tensors.size() == expected["tensors"].size());
  for (const auto& [name, e] : expected["tensors"].items()) {
    INFO(name);
    REQUIRE(file.tensors.count(name));
    const TensorRef& t = file.tensors.at(name);
    CHECK(attnmt::dtype_name(t.dtype) == e["tensor"].get<std::string>());
    CHECK(t.shape == e["shape"].get<std::vector<int64_t>>());
    CHECK(t.strides == e["stride"].get<std::vector<int64_t>>());
    CHECK(t.is_contiguous());
    CHECK(t.storage->file == path);
    if (e.contains("bits")) {
      std::vector<uint32_t> got;
      for (float f : attnmt::to_float32_contiguous(t)) got.push_back(bits_of(f));
      CHECK(got == e["bits"].get<std::vector<uint32_t>>());
    } else {
      CHECK(attnmt::to_int64_contiguous(t) == e["ints"].get<std::vector<int64_t>>());
    }
  }

  // Each damage names the file and what is wrong.
  const TempDir tmp;
  auto with_header = [](const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    for (int k = 0; k < 8; ++k) out[static_cast<size_t>(k)] = static_cast<char>((header.size() >> (8 * k)) & 0xff);
    return out + header + data;
  };
  const std::string w = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  CHECK(attnmt::load_safetensors(tmp.write("ok.safetensors", with_header(w, std::string(8, '\0')))).tensors.size() ==
        1);
  const std::vector<std::pair<std::string, std::string>> bad{
      {with_header(w, std::string(4, '\0')), "data offsets [0, 8] outside the data (4 bytes)"},
      {with_header(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", std::string(8, '\0')),
       "needs 3 elements, its data offsets hold 8 bytes"},
      {with_header(R"({"w": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}})", std::string(8, '\0')),
       "dtype 'F8_E4M3' is not supported"},
      {with_header(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", std::string(8, '\0')),
       "size -2 is not a count"},
      {with_header(R"({"w": [1, 2]})", ""), "expected {\"dtype\""},
      {with_header(R"({"w": )", ""), "its header is not JSON"},
      {with_header(R"({"__metadata__": {"a": 1}})", ""), "__metadata__ 'a' is not a string"},
      {std::string("\xff\xff\xff\xff\0\0\0\0{}", 10), "a header of 4294967295 bytes in a file of 10"},
      {"abc", "not a safetensors file (3 bytes)"},
  };
  for (const auto& [bytes, message] : bad) {
    const std::string bad_path = tmp.write("bad.safetensors", bytes);
    CHECK_THROWS_WITH(attnmt::load_safetensors(bad_path), Catch::Contains(bad_path + ": ") && Catch::Contains(message));
  }
  CHECK_THROWS_WITH(attnmt::load_torch_file(path),
                    Catch::Contains(path + ": not a PyTorch checkpoint (a safetensors file"));
}

TEST_CASE("torch.save: damaged and foreign files are InputErrors naming the file", "[pyformat]") {
  const TempDir tmp;
  const std::string zip = attnmt::read_file(kDir + "state.pt");
  const std::string legacy = attnmt::read_file(kDir + "state_legacy.pt");
  const std::vector<std::pair<std::string, std::string>> cases{
      {tmp.write("text.pt", "src_vocab: data/vocab.src\nsave_model: run/model\n"),
       "not a PyTorch checkpoint (neither a ZIP archive nor a pickle)"},
      {tmp.write("empty.pt", ""), "not a PyTorch checkpoint (an empty file)"},
      {kDir + "objects_p2.pkl", "not a PyTorch checkpoint (a pickle without torch.save's magic number)"},
      {kDir + "bad_compressed.pt", "ZIP entry 'state/data.pkl' is compressed (deflate)"},
      {kDir + "bad_opcode.pt", "archive/data.pkl: pickle byte 12: unknown opcode 0xff"},
      {kDir + "bad_byteorder.pt", "saved with byte order 'big' (only 'little' is read)"},
      {kDir + "bad_offset.pt",
       "a tensor's shape [2] at offset 1000 reaches element 1001, beyond storage '0' (4 float32 elements)"},
      {tmp.write("half_zip.pt", zip.substr(0, zip.size() / 2)), "a damaged or truncated ZIP archive"},
      {tmp.write("no_directory.pt", zip.substr(0, zip.size() - 30)), "a damaged or truncated ZIP archive"},
      {tmp.write("half_legacy.pt", legacy.substr(0, legacy.size() / 2)), "truncated"},
      {tmp.write("short_legacy.pt", legacy.substr(0, legacy.size() - 1)), "truncated: storage '"},
      {tmp.write("zip.pt", std::string("PK\x05\x06", 4) + std::string(18, '\0')),
       "not a PyTorch checkpoint (a ZIP archive without a <folder>/data.pkl entry)"},
      {tmp.path() + "/missing.pt", "cannot read (No such file or directory)"},
      {tmp.path(), "cannot read (a directory)"},
  };
  for (const auto& [path, message] : cases) {
    INFO(path);
    CHECK_THROWS_AS(attnmt::load_torch_file(path), InputError);
    CHECK_THROWS_WITH(attnmt::load_torch_file(path), Catch::StartsWith(path + ": ") && Catch::Contains(message));
  }
}

TEST_CASE("torch.save: every truncation and every damaged byte of a checkpoint loads or is an InputError",
          "[pyformat]") {
  for (const std::string name : {"state_legacy.pt", "state.pt", "objects.pt"}) {
    const std::string bytes = attnmt::read_file(kDir + name);
    size_t loaded = 0, refused = 0;
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
      (load_or_input_error(bytes.substr(0, cut), name).empty() ? loaded : refused)++;
    }
    CHECK(loaded == 0);  // a torch file cut anywhere is incomplete
    for (size_t at = 0; at < bytes.size(); ++at) {
      std::string damaged = bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ 0xff);
      (load_or_input_error(damaged, name).empty() ? loaded : refused)++;
    }
    INFO(name << ": " << loaded << " damaged files loaded, " << refused << " refused");
    CHECK(refused > bytes.size());
  }
  // The bytes in memory load as the file does.
  const std::string bytes = attnmt::read_file(kDir + "state.pt");
  Matcher().match(attnmt::load_torch_bytes(bytes, "state.pt").object, read_json("state.json"));
}

// numpy's .npz (tests/data/pyformat/make_npz.py: np.savez, and numpy's own reading of the arrays).
TEST_CASE("npz: arrays as numpy reads them, Marian's text, and what is refused", "[pyformat]") {
  const json expected = read_json("arrays_npz.json");
  const std::string path = kDir + "arrays.npz";
  const attnmt::NpzFile file = attnmt::load_npz(path);
  REQUIRE(file.arrays.size() == expected.size());
  for (const auto& [name, e] : expected.items()) {
    INFO(name);
    REQUIRE(file.arrays.count(name));
    const TensorRef& t = file.arrays.at(name);
    CHECK(t.shape == e["shape"].get<std::vector<int64_t>>());
    CHECK(t.storage->file == path);
    const auto want = e["values"].get<std::vector<double>>();
    std::vector<double> got;
    if (attnmt::dtype_is_floating(t.dtype)) {
      for (float f : attnmt::to_float32_contiguous(t, name)) got.push_back(f);
    } else {
      for (int64_t i : attnmt::to_int64_contiguous(t, name)) got.push_back(static_cast<double>(i));
    }
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-6));  // float64 as float32
  }
  CHECK(file.arrays.at("fortran").strides == std::vector<int64_t>{1, 3});  // column-major
  CHECK(attnmt::npz_text(file.arrays.at("special:model.yml"), "special:model.yml") ==
        expected["special:model.yml"]["text"].get<std::string>());
  CHECK_THROWS_WITH(attnmt::npz_text(file.arrays.at("decoder_W"), "decoder_W"), Catch::Contains("is not text"));

  const TempDir tmp;
  // The stored entries hold their .npy headers as written: a shape of another size, in place.
  std::string bytes = attnmt::read_file(path);
  const auto at = bytes.find("'shape': (2, 3)");
  REQUIRE(at != std::string::npos);
  bytes.replace(at, 15, "'shape': (2, 4)");
  const std::vector<std::pair<std::string, std::string>> bad{
      {kDir + "arrays_compressed.npz", "deflate"},
      {kDir + "big_endian.npz", "array 'w': big-endian dtype '>f4'"},
      {tmp.write("resized.npz", bytes), "array 'decoder_W': 8 float32 elements need 32 bytes, the entry holds 24"},
      {tmp.write("text.npz", "type: s2s\n"), "not a .npz file (not a ZIP archive)"},
      {kDir + "state.pt", "is not a .npy array"},
  };
  for (const auto& [bad_path, message] : bad) {
    INFO(bad_path);
    CHECK_THROWS_WITH(attnmt::load_npz(bad_path), Catch::Contains(bad_path) && Catch::Contains(message));
  }
}
