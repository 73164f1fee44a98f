#include "pyformat/py_value.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>

#include "pyformat/py_node.h"
#include "util/error.h"

namespace attnmt {

namespace {

constexpr int kMaxKeyDepth = 8;  // tuple keys nested deeper are kept, but not indexed
constexpr size_t kMaxShownItems = 8;
constexpr size_t kMaxShownString = 60;

// Python's dict keys: the hashable values (None, bool, int, float, str, bytes, globals and tuples
// of them), equal as Python compares them (1 == 1.0 == True, 'a' != b'a'). Others are unhashable.
std::optional<uint64_t> key_hash(const PyNode* k, int depth) {
  auto mix = [](uint64_t h) {  // splitmix64's finaliser
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
  };
  switch (k->kind) {
    case PyKind::None:
      return mix(0x6e6f6e65);
    case PyKind::Bool:
    case PyKind::Int:
      return mix(static_cast<uint64_t>(k->i));
    case PyKind::Float: {
      if (std::isnan(k->f)) return std::nullopt;
      if (k->f == std::trunc(k->f) && std::fabs(k->f) < 9.2e18)
        return mix(static_cast<uint64_t>(static_cast<int64_t>(k->f)));
      uint64_t bits;
      std::memcpy(&bits, &k->f, 8);
      return mix(bits ^ 0x666c6f6174);
    }
    case PyKind::String:
      return std::hash<std::string_view>()(k->text);
    case PyKind::Bytes:
      return mix(std::hash<std::string_view>()(k->text) ^ 0x6279746573);
    case PyKind::Global:
      return mix(std::hash<std::string>()(k->extra->module) ^ mix(std::hash<std::string>()(k->extra->name)));
    case PyKind::Tuple: {
      if (depth >= kMaxKeyDepth) return std::nullopt;
      uint64_t h = mix(k->items.size() ^ 0x7475706c65);
      for (const PyNode* item : k->items) {
        const auto ih = key_hash(item, depth + 1);
        if (!ih) return std::nullopt;
        h = mix(h ^ *ih);
      }
      return h;
    }
    default:
      return std::nullopt;
  }
}

bool is_number(const PyNode* k) {
  return k->kind == PyKind::Bool || k->kind == PyKind::Int || k->kind == PyKind::Float;
}

bool key_equal(const PyNode* a, const PyNode* b, int depth) {
  if (a == b) return true;
  if (is_number(a) && is_number(b)) {
    if (a->kind != PyKind::Float && b->kind != PyKind::Float) return a->i == b->i;
    const double x = a->kind == PyKind::Float ? a->f : static_cast<double>(a->i);
    const double y = b->kind == PyKind::Float ? b->f : static_cast<double>(b->i);
    return x == y;
  }
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case PyKind::None:
      return true;
    case PyKind::String:
    case PyKind::Bytes:
      return a->text == b->text;
    case PyKind::Global:
      return a->extra->module == b->extra->module && a->extra->name == b->extra->name;
    case PyKind::Tuple:
      if (depth >= kMaxKeyDepth || a->items.size() != b->items.size()) return false;
      for (size_t k = 0; k < a->items.size(); ++k) {
        if (!key_equal(a->items[k], b->items[k], depth + 1)) return false;
      }
      return true;
    default:
      return false;
  }
}

}  // namespace

const PyNode* py_dict_find(const PyNode* d, std::string_view key) {
  if (!d->index) return nullptr;
  const int64_t entry = d->index->find(std::hash<std::string_view>()(key), [&](size_t e) {
    const PyNode* k = d->entries[2 * e];
    return k->kind == PyKind::String && k->text == key;
  });
  return entry < 0 ? nullptr : d->entries[2 * static_cast<size_t>(entry) + 1];
}

void py_dict_set(PyNode* d, PyNode* key, PyNode* value) {
  if (const auto hash = key_hash(key, 0)) {
    if (!d->index) d->index = std::make_unique<PyKeyIndex>();
    const int64_t entry = d->index->find(*hash, [&](size_t e) { return key_equal(d->entries[2 * e], key, 0); });
    if (entry >= 0) {  // as Python: the first key stays, the value is replaced
      d->entries[2 * static_cast<size_t>(entry) + 1] = value;
      return;
    }
    d->index->insert(*hash, d->entries.size() / 2);
  }
  d->entries.push_back(key);
  d->entries.push_back(value);
}

namespace {

// --- describe
void quote(std::string& out, std::string_view text, bool bytes) {
  const size_t limit = bytes ? kMaxShownString / 2 : kMaxShownString;
  size_t shown = std::min(text.size(), limit);
  if (!bytes) {
    while (shown < text.size() && shown > 0 && (static_cast<uint8_t>(text[shown]) & 0xc0) == 0x80) --shown;
  }
  out += bytes ? "b'" : "'";
  static const char* kHex = "0123456789abcdef";
  for (size_t k = 0; k < shown; ++k) {
    const auto c = static_cast<uint8_t>(text[k]);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80)) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '\'';
  if (shown < text.size()) out += "... (" + std::to_string(text.size()) + (bytes ? " bytes)" : " bytes of UTF-8)");
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), f);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void describe_node(std::string& out, const PyNode* n, int depth);

void describe_seq(std::string& out, const std::vector<PyNode*>& items, int depth, const char* open, const char* close) {
  out += open;
  if (depth < 0 && !items.empty()) {
    out += "..." + std::to_string(items.size()) + " items" + close;
    return;
  }
  for (size_t k = 0; k < items.size() && k < kMaxShownItems; ++k) {
    if (k) out += ", ";
    describe_node(out, items[k], depth - 1);
  }
  if (items.size() > kMaxShownItems) out += ", ... (" + std::to_string(items.size()) + " items)";
  out += close;
}

void describe_entries(std::string& out, const std::vector<PyNode*>& entries, int depth) {
  const size_t count = entries.size() / 2;
  out += '{';
  if (depth < 0 && count > 0) {
    out += "..." + std::to_string(count) + " items}";
    return;
  }
  for (size_t k = 0; k < count && k < kMaxShownItems; ++k) {
    if (k) out += ", ";
    describe_node(out, entries[2 * k], depth - 1);
    out += ": ";
    describe_node(out, entries[2 * k + 1], depth - 1);
  }
  if (count > kMaxShownItems) out += ", ... (" + std::to_string(count) + " items)";
  out += '}';
}

void describe_node(std::string& out, const PyNode* n, int depth) {
  switch (n->kind) {
    case PyKind::None:
      out += "None";
      break;
    case PyKind::Bool:
      out += n->i ? "True" : "False";
      break;
    case PyKind::Int:
      out += std::to_string(n->i);
      break;
    case PyKind::Float:
      out += float_repr(n->f);
      break;
    case PyKind::String:
      quote(out, n->text, /*bytes=*/false);
      break;
    case PyKind::Bytes:
      quote(out, n->text, /*bytes=*/true);
      break;
    case PyKind::List:
      describe_seq(out, n->items, depth, "[", "]");
      break;
    case PyKind::Tuple:
      describe_seq(out, n->items, depth, "(", n->items.size() == 1 && depth >= 0 ? ",)" : ")");
      break;
    case PyKind::Dict:
      describe_entries(out, n->entries, depth);
      break;
    case PyKind::Global:
      out += "<global " + n->extra->module + "." + n->extra->name + ">";
      break;
    case PyKind::Object: {
      const PyExtra& x = *n->extra;
      out += '<';
      if (x.callable) {
        describe_node(out, x.callable, depth - 1);
      } else {
        out += x.module + "." + x.name;
      }
      if (x.args && !x.args->items.empty()) {
        describe_seq(out, x.args->items, depth, "(", ")");
      } else {
        out += "()";
      }
      if (x.kwargs) {
        out += " kwargs=";
        describe_node(out, x.kwargs, depth - 1);
      }
      if (x.state) {
        out += " state=";
        describe_node(out, x.state, depth - 1);
      }
      if (!n->entries.empty()) {
        out += " items=";
        describe_entries(out, n->entries, depth - 1);
      }
      if (!n->items.empty()) {
        out += " list=";
        describe_seq(out, n->items, depth - 1, "[", "]");
      }
      out += '>';
      break;
    }
    case PyKind::Tensor: {
      const TensorRef& t = *n->extra->tensor;
      out += std::string(t.is_parameter ? "parameter(" : "tensor(") + dtype_name(t.dtype) + " [";
      for (size_t d = 0; d < t.shape.size(); ++d) out += (d ? ", " : "") + std::to_string(t.shape[d]);
      out += "])";
      break;
    }
  }
}

}  // namespace

const char* kind_name(PyKind kind) {
  switch (kind) {
    case PyKind::None:
      return "None";
    case PyKind::Bool:
      return "bool";
    case PyKind::Int:
      return "int";
    case PyKind::Float:
      return "float";
    case PyKind::String:
      return "str";
    case PyKind::Bytes:
      return "bytes";
    case PyKind::List:
      return "list";
    case PyKind::Tuple:
      return "tuple";
    case PyKind::Dict:
      return "dict";
    case PyKind::Global:
      return "global";
    case PyKind::Object:
      return "object";
    case PyKind::Tensor:
      return "tensor";
  }
  return "?";
}

std::string describe(const PyValue& value, int depth) {
  if (!value.node_) return "None";
  std::string out;
  describe_node(out, value.node_, depth);
  return out;
}

// --- PyValue

PyValue PyValue::from_tensor(TensorRef tensor) {
  auto arena = std::make_shared<PyArena>();
  PyNode& node = arena->nodes.emplace_back();
  node.kind = PyKind::Tensor;
  node.extra = std::make_unique<PyExtra>();
  node.extra->tensor = std::make_shared<const TensorRef>(std::move(tensor));
  return PyValue(std::move(arena), &node, "");
}

PyKind PyValue::kind() const { return node_ ? node_->kind : PyKind::None; }

const std::string& PyValue::file() const {
  static const std::string kNone;
  return arena_ ? arena_->file : kNone;
}

void PyValue::fail(const std::string& what) const {
  const std::string where = path_.empty() ? "the top-level object" : path_;
  throw InputError((file().empty() ? "" : file() + ": ") + where + ": " + what);
}

PyValue PyValue::child(const PyNode* node, std::string path_suffix) const {
  return PyValue(arena_, node, path_ + path_suffix);
}

const PyNode& PyValue::expect(PyKind kind, const char* what) const {
  if (this->kind() != kind) {
    std::string got = describe(*this, 0);
    if (got.size() > 2 * kMaxShownString) got = got.substr(0, 2 * kMaxShownString) + "...";
    fail(std::string("expected ") + what + ", got " + kind_name(this->kind()) + " " + got);
  }
  return *node_;
}

bool PyValue::as_bool() const { return expect(PyKind::Bool, "bool").i != 0; }
int64_t PyValue::as_int() const { return expect(PyKind::Int, "int").i; }

double PyValue::as_float() const {
  if (kind() == PyKind::Int) return static_cast<double>(node_->i);
  return expect(PyKind::Float, "float").f;
}

const std::string& PyValue::as_string() const { return expect(PyKind::String, "str").text; }
const std::string& PyValue::as_bytes() const { return expect(PyKind::Bytes, "bytes").text; }
const TensorRef& PyValue::as_tensor() const { return *expect(PyKind::Tensor, "tensor").extra->tensor; }

size_t PyValue::size() const {
  if (kind() == PyKind::Dict) return node_->entries.size() / 2;
  if (kind() != PyKind::List) expect(PyKind::Tuple, "list, tuple or dict");
  return node_->items.size();
}

PyValue PyValue::at(size_t i) const {
  if (kind() != PyKind::List) expect(PyKind::Tuple, "list or tuple");
  if (i >= node_->items.size()) {
    fail("index " + std::to_string(i) + " beyond its " + std::to_string(node_->items.size()) + " items");
  }
  return child(node_->items[i], "[" + std::to_string(i) + "]");
}

std::vector<PyValue> PyValue::as_list() const {
  if (kind() != PyKind::List) expect(PyKind::Tuple, "list or tuple");
  std::vector<PyValue> out;
  out.reserve(node_->items.size());
  for (size_t k = 0; k < node_->items.size(); ++k) out.push_back(child(node_->items[k], "[" + std::to_string(k) + "]"));
  return out;
}

std::vector<std::pair<PyValue, PyValue>> PyValue::items() const {
  if (kind() != PyKind::Object) expect(PyKind::Dict, "dict");
  const auto& e = node_->entries;
  std::vector<std::pair<PyValue, PyValue>> out;
  out.reserve(e.size() / 2);
  for (size_t k = 0; k + 1 < e.size(); k += 2) {
    std::string key;
    describe_node(key, e[k], 0);
    out.emplace_back(child(e[k], ".keys()[" + std::to_string(k / 2) + "]"), child(e[k + 1], "[" + key + "]"));
  }
  return out;
}

bool PyValue::has(std::string_view key) const {
  if (kind() != PyKind::Object) expect(PyKind::Dict, "dict");
  return py_dict_find(node_, key) != nullptr;
}

std::vector<std::string> PyValue::keys() const {
  if (kind() != PyKind::Object) expect(PyKind::Dict, "dict");
  std::vector<std::string> out;
  for (size_t k = 0; k < node_->entries.size(); k += 2) {
    if (node_->entries[k]->kind == PyKind::String) out.push_back(node_->entries[k]->text);
  }
  return out;
}

namespace {
std::string some_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t k = 0; k < names.size() && k < kMaxShownItems; ++k) out += (k ? ", '" : "'") + names[k] + "'";
  if (names.size() > kMaxShownItems) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out.empty() ? "none" : out;
}
}  // namespace

PyValue PyValue::get(std::string_view key) const {
  if (kind() != PyKind::Object) expect(PyKind::Dict, "dict");
  const PyNode* value = py_dict_find(node_, key);
  std::string shown;
  quote(shown, key, /*bytes=*/false);
  if (!value) fail("no key " + shown + " (str keys: " + some_names(keys()) + ")");
  return child(value, "[" + shown + "]");
}

bool PyValue::is_global(std::string_view module, std::string_view name) const {
  return kind() == PyKind::Global && node_->extra->module == module && node_->extra->name == name;
}

bool PyValue::is_instance(std::string_view module, std::string_view name) const {
  return kind() == PyKind::Object && node_->extra->module == module && node_->extra->name == name;
}

const std::string& PyValue::module() const {
  if (kind() != PyKind::Global) expect(PyKind::Object, "global or object");
  return node_->extra->module;
}

const std::string& PyValue::name() const {
  if (kind() != PyKind::Global) expect(PyKind::Object, "global or object");
  return node_->extra->name;
}

PyValue PyValue::callable() const {
  const PyNode* c = expect(PyKind::Object, "object").extra->callable;
  return c ? child(c, ".__class__") : PyValue();
}

PyValue PyValue::args() const { return child(expect(PyKind::Object, "object").extra->args, ".__reduce__args"); }

PyValue PyValue::kwargs() const {
  const PyNode* k = expect(PyKind::Object, "object").extra->kwargs;
  return k ? child(k, ".__reduce__kwargs") : PyValue();
}

PyValue PyValue::state() const {
  if (kind() != PyKind::Dict) expect(PyKind::Object, "object");
  const PyNode* s = node_->extra ? node_->extra->state : nullptr;
  return s ? child(s, ".__dict__") : PyValue();
}

std::vector<PyValue> PyValue::list_items() const {
  const PyNode& n = expect(PyKind::Object, "object");
  std::vector<PyValue> out;
  for (size_t k = 0; k < n.items.size(); ++k) out.push_back(child(n.items[k], ".items[" + std::to_string(k) + "]"));
  return out;
}

const PyNode* PyValue::state_dict_node(std::string_view name) const {
  if (kind() != PyKind::Dict) expect(PyKind::Object, "object");
  const PyNode* s = node_->extra ? node_->extra->state : nullptr;
  if (!s) return nullptr;
  if (s->kind == PyKind::Dict) return py_dict_find(s, name);
  if (s->kind == PyKind::Tuple && s->items.size() == 2) {  // (__dict__ or None, slots)
    for (const PyNode* part : s->items) {
      if (part->kind != PyKind::Dict) continue;
      if (const PyNode* v = py_dict_find(part, name)) return v;
    }
  }
  return nullptr;
}

bool PyValue::has_attr(std::string_view name) const { return state_dict_node(name) != nullptr; }

PyValue PyValue::attr(std::string_view name) const {
  const PyNode* v = state_dict_node(name);
  if (!v) {
    std::vector<std::string> names;
    const PyNode* s = node_->extra ? node_->extra->state : nullptr;
    if (s && s->kind == PyKind::Dict) names = PyValue(arena_, s, "").keys();
    fail("no attribute '" + std::string(name) + "' (attributes: " + some_names(names) + ")");
  }
  return child(v, "." + std::string(name));
}

}  // namespace attnmt
