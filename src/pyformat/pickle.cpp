#include "pyformat/pickle.h"

#include <charconv>
#include <cstring>
#include <unordered_map>

#include "pyformat/py_node.h"
#include "util/error.h"
#include "util/text_io.h"
#include "util/utf8.h"

namespace attnmt {

namespace {

// Beyond these a file is refused rather than read: Python's own pickler nests no deeper than its
// recursion limit (1000), and no checkpoint holds 16 million values outside its tensors.
constexpr size_t kMaxMarks = 4096;
constexpr size_t kMaxNodes = size_t{1} << 24;
constexpr size_t kMaxQuoted = 60;  // of a bad argument, in messages

namespace op {
// protocols 0 and 1
constexpr uint8_t MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2', FLOAT = 'F', INT = 'I', BININT = 'J',
                  BININT1 = 'K', LONG = 'L', BININT2 = 'M', NONE = 'N', PERSID = 'P', BINPERSID = 'Q', REDUCE = 'R',
                  STRING = 'S', BINSTRING = 'T', SHORT_BINSTRING = 'U', UNICODE = 'V', BINUNICODE = 'X', APPEND = 'a',
                  BUILD = 'b', GLOBAL = 'c', DICT = 'd', EMPTY_DICT = '}', APPENDS = 'e', GET = 'g', BINGET = 'h',
                  INST = 'i', LONG_BINGET = 'j', LIST = 'l', EMPTY_LIST = ']', OBJ = 'o', PUT = 'p', BINPUT = 'q',
                  LONG_BINPUT = 'r', SETITEM = 's', TUPLE = 't', EMPTY_TUPLE = ')', SETITEMS = 'u', BINFLOAT = 'G';
// protocol 2
constexpr uint8_t PROTO = 0x80, NEWOBJ = 0x81, EXT1 = 0x82, EXT2 = 0x83, EXT4 = 0x84, TUPLE1 = 0x85, TUPLE2 = 0x86,
                  TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89, LONG1 = 0x8a, LONG4 = 0x8b;
// protocol 3
constexpr uint8_t BINBYTES = 'B', SHORT_BINBYTES = 'C';
// protocol 4
constexpr uint8_t SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, BINBYTES8 = 0x8e, EMPTY_SET = 0x8f, ADDITEMS = 0x90,
                  FROZENSET = 0x91, NEWOBJ_EX = 0x92, STACK_GLOBAL = 0x93, MEMOIZE = 0x94, FRAME = 0x95;
// protocol 5
constexpr uint8_t BYTEARRAY8 = 0x96, NEXT_BUFFER = 0x97, READONLY_BUFFER = 0x98;
}  // namespace op

// Python 2's names as Python 3 reads them from a protocol 0-2 pickle (Lib/_compat_pickle.py, the
// entries a checkpoint can meet).
void fix_python2_name(std::string& module, std::string& name) {
  struct Rename {
    const char *module2, *name2, *module3, *name3;
  };
  static const Rename kNames[] = {
      {"__builtin__", "xrange", "builtins", "range"},
      {"__builtin__", "reduce", "functools", "reduce"},
      {"__builtin__", "intern", "sys", "intern"},
      {"__builtin__", "unichr", "builtins", "chr"},
      {"__builtin__", "unicode", "builtins", "str"},
      {"__builtin__", "long", "builtins", "int"},
      {"__builtin__", "basestring", "builtins", "str"},
      {"itertools", "izip", "builtins", "zip"},
      {"itertools", "imap", "builtins", "map"},
      {"itertools", "ifilter", "builtins", "filter"},
      {"itertools", "ifilterfalse", "itertools", "filterfalse"},
      {"itertools", "izip_longest", "itertools", "zip_longest"},
      {"UserDict", "IterableUserDict", "collections", "UserDict"},
      {"exceptions", "StandardError", "builtins", "Exception"},
  };
  for (const auto& r : kNames) {
    if (module == r.module2 && name == r.name2) {
      module = r.module3;
      name = r.name3;
      return;
    }
  }
  static const std::pair<const char*, const char*> kModules[] = {
      {"__builtin__", "builtins"}, {"copy_reg", "copyreg"},        {"exceptions", "builtins"},
      {"Queue", "queue"},          {"cPickle", "pickle"},          {"UserDict", "collections"},
      {"UserList", "collections"}, {"UserString", "collections"},  {"StringIO", "io"},
      {"cStringIO", "io"},         {"_abcoll", "collections.abc"}, {"thread", "_thread"},
  };
  for (const auto& [m2, m3] : kModules) {
    if (module == m2) {
      module = m3;
      return;
    }
  }
}

// The bytes a str of code points U+0000..U+00FF stands for (protocol 2 writes bytes b as
// _codecs.encode(b.decode('latin1'), 'latin1')); false if it holds another code point.
bool latin1_from_utf8(const std::string& text, std::string* bytes) {
  bytes->clear();
  for (size_t k = 0; k < text.size(); ++k) {
    const auto c = static_cast<uint8_t>(text[k]);
    if (c < 0x80) {
      *bytes += static_cast<char>(c);
    } else if ((c & 0xe0) == 0xc0 && c <= 0xc3 && k + 1 < text.size()) {
      *bytes += static_cast<char>(((c & 0x1f) << 6) | (static_cast<uint8_t>(text[++k]) & 0x3f));
    } else {
      return false;
    }
  }
  return true;
}

bool is_latin1_codec(const std::string& name) {
  return name == "latin1" || name == "latin-1" || name == "iso-8859-1" || name == "iso8859-1" || name == "l1";
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Protocol 0's UNICODE argument (raw-unicode-escape: latin-1 bytes and \uXXXX, \UXXXXXXXX).
std::string decode_raw_unicode_escape(std::string_view in) {
  std::string out;
  for (size_t k = 0; k < in.size(); ++k) {
    const auto c = static_cast<uint8_t>(in[k]);
    const size_t digits = c == '\\' && k + 1 < in.size() ? (in[k + 1] == 'u' ? 4 : in[k + 1] == 'U' ? 8 : 0) : 0;
    if (digits && k + 2 + digits <= in.size()) {
      uint32_t cp = 0;
      bool ok = true;
      for (size_t d = 0; d < digits; ++d) {
        const int h = hex_digit(in[k + 2 + d]);
        ok = ok && h >= 0;
        cp = cp * 16 + static_cast<uint32_t>(h < 0 ? 0 : h);
      }
      if (ok && cp <= 0x10ffff) {
        append_utf8(out, cp);
        k += 1 + digits;
        continue;
      }
    }
    append_utf8(out, c);
  }
  return out;
}

// Protocol 0's STRING argument: a quoted Python 2 str with backslash escapes.
bool decode_string_escapes(std::string_view in, std::string* out) {
  if (in.size() < 2 || in.front() != in.back() || (in.front() != '\'' && in.front() != '"')) return false;
  in = in.substr(1, in.size() - 2);
  out->clear();
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] != '\\' || k + 1 == in.size()) {
      *out += in[k];
      continue;
    }
    const char e = in[++k];
    switch (e) {
      case '\n':
        break;
      case 'n':
        *out += '\n';
        break;
      case 't':
        *out += '\t';
        break;
      case 'r':
        *out += '\r';
        break;
      case 'a':
        *out += '\a';
        break;
      case 'b':
        *out += '\b';
        break;
      case 'f':
        *out += '\f';
        break;
      case 'v':
        *out += '\v';
        break;
      case '\\':
      case '\'':
      case '"':
        *out += e;
        break;
      case 'x':
        if (k + 2 < in.size() && hex_digit(in[k + 1]) >= 0 && hex_digit(in[k + 2]) >= 0) {
          *out += static_cast<char>(hex_digit(in[k + 1]) * 16 + hex_digit(in[k + 2]));
          k += 2;
        } else {
          return false;
        }
        break;
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0';
          for (int d = 0; d < 2 && k + 1 < in.size() && in[k + 1] >= '0' && in[k + 1] <= '7'; ++d)
            v = v * 8 + (in[++k] - '0');
          *out += static_cast<char>(v & 0xff);
        } else {
          *out += '\\';
          *out += e;
        }
    }
  }
  return true;
}

}  // namespace

// --- the interpreter

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const PickleOptions& options) : data_(bytes), options_(options) {
    arena_ = std::make_shared<PyArena>();
    arena_->file = options.file;
    none_ = make(PyKind::None);
    true_ = make(PyKind::Bool);
    true_->i = 1;
    false_ = make(PyKind::Bool);
    empty_tuple_ = make(PyKind::Tuple);
  }

  PyValue run(size_t* end) {
    for (;;) {
      op_pos_ = pos_;
      if (pos_ >= data_.size()) fail("truncated: the pickle ends before its STOP opcode");
      const uint8_t code = static_cast<uint8_t>(data_[pos_++]);
      if (code == op::STOP) {
        PyNode* value = pop();
        if (end) *end = pos_;
        return PyValue(arena_, value, "");
      }
      step(code);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(options_.file + ": " + (options_.part.empty() ? "" : options_.part + ": ") + "pickle byte " +
                     std::to_string(op_pos_) + ": " + what);
  }

  // --- reading the opcodes' arguments
  std::string_view take(uint64_t n) {
    if (n > data_.size() - pos_) {
      fail("truncated: needs " + std::to_string(n) + " more bytes, " + std::to_string(data_.size() - pos_) + " left");
    }
    const std::string_view out = data_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return out;
  }

  uint64_t le(int n) {
    const std::string_view b = take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<uint8_t>(b[static_cast<size_t>(k)]);
    return v;
  }

  std::string_view line() {
    const size_t nl = data_.find('\n', pos_);
    if (nl == std::string_view::npos) fail("truncated: no end of line");
    const std::string_view out = data_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return out;
  }

  int64_t parse_int(std::string_view text) {
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    int64_t v = 0;
    const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
    if (res.ec == std::errc::result_out_of_range) fail("an integer beyond 64 bits (" + std::string(text) + ")");
    if (res.ec != std::errc() || res.ptr != text.data() + text.size() || text.empty()) {
      fail("not an integer: '" + std::string(text.substr(0, kMaxQuoted)) + "'");
    }
    return v;
  }

  // LONG1 / LONG4: two's complement, little-endian.
  int64_t decode_long(std::string_view b) {
    if (b.empty()) return 0;
    size_t n = b.size();
    if (n > 8) {
      const uint8_t sign = (static_cast<uint8_t>(b[7]) & 0x80) ? 0xff : 0x00;
      for (size_t k = 8; k < n; ++k) {
        if (static_cast<uint8_t>(b[k]) != sign) fail("an integer beyond 64 bits (" + std::to_string(n) + " bytes)");
      }
      n = 8;
    }
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<uint8_t>(b[k])) << (8 * k);
    if (n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
    return static_cast<int64_t>(v);
  }

  // --- values
  PyNode* make(PyKind kind) {
    if (arena_->nodes.size() >= kMaxNodes) fail("more than " + std::to_string(kMaxNodes) + " values");
    PyNode& n = arena_->nodes.emplace_back();
    n.kind = kind;
    return &n;
  }

  PyNode* make_text(PyKind kind, std::string_view text) {
    PyNode* n = make(kind);
    n->text.assign(text.data(), text.size());
    return n;
  }

  // A Python 2 str: a str when it is UTF-8 (torch.load reads them with encoding='utf-8'), else bytes.
  PyNode* make_py2_string(std::string_view text) {
    return make_text(find_invalid_utf8(text) == std::string_view::npos ? PyKind::String : PyKind::Bytes, text);
  }

  PyNode* make_int(int64_t v) {
    PyNode* n = make(PyKind::Int);
    n->i = v;
    return n;
  }

  PyNode* make_global(std::string module, std::string name) {
    if (proto_ < 3) fix_python2_name(module, name);
    PyNode* n = make(PyKind::Global);
    n->extra = std::make_unique<PyExtra>();
    n->extra->module = std::move(module);
    n->extra->name = std::move(name);
    return n;
  }

  PyNode* make_object(const std::string& module, const std::string& name, PyNode* args, PyNode* kwargs = nullptr) {
    PyNode* n = make(PyKind::Object);
    n->extra = std::make_unique<PyExtra>();
    n->extra->module = module;
    n->extra->name = name;
    n->extra->args = args ? args : empty_tuple_;
    n->extra->kwargs = kwargs;
    return n;
  }

  PyNode* make_seq(PyKind kind, std::vector<PyNode*> items) {
    if (kind == PyKind::Tuple && items.empty()) return empty_tuple_;
    PyNode* n = make(kind);
    n->items = std::move(items);
    return n;
  }

  PyNode* adopt(const PyValue& v) {
    if (!v.node_) return none_;
    if (v.arena_ != arena_ && (arena_->adopted.empty() || arena_->adopted.back() != v.arena_)) {
      arena_->adopted.push_back(v.arena_);
    }
    return const_cast<PyNode*>(v.node_);  // nodes are created mutable; only the handles are const
  }

  // --- the stack (MARK starts a new one above the old, as Python's metastack)
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

  void push(PyNode* n) { stack_.push_back(n); }

  PyNode* pop() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    PyNode* n = stack_.back();
    stack_.pop_back();
    return n;
  }

  PyNode* top() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    return stack_.back();
  }

  std::vector<PyNode*> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const size_t start = marks_.back();
    marks_.pop_back();
    std::vector<PyNode*> items(stack_.begin() + static_cast<std::ptrdiff_t>(start), stack_.end());
    stack_.resize(start);
    return items;
  }

  // Picklers number the memo 0, 1, 2, ...: a vector, and a map for any other numbering.
  void memo_put(uint64_t index) {
    PyNode* value = top();
    if (index < memo_.size()) {
      memo_count_ += memo_[index] == nullptr;
      memo_[index] = value;
    } else if (index == memo_.size()) {
      memo_.push_back(value);
      ++memo_count_;
    } else {
      memo_count_ += sparse_memo_.count(index) == 0;
      sparse_memo_[index] = value;
    }
  }

  void memo_get(uint64_t index) {
    if (index < memo_.size() && memo_[index]) return push(memo_[index]);
    const auto it = sparse_memo_.find(index);
    if (it == sparse_memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored");
    push(it->second);
  }

  // --- calls, BUILD, items
  PyNode* call(PyNode* callable, PyNode* args, PyNode* kwargs) {
    if (args->kind != PyKind::Tuple)
      fail(std::string("a call's arguments are a ") + kind_name(args->kind) + ", not a tuple");
    if (kwargs && kwargs->kind != PyKind::Dict) fail(std::string("keyword arguments in a ") + kind_name(kwargs->kind));
    if (callable->kind != PyKind::Global) {
      PyNode* obj = make_object("", "", args, kwargs);
      obj->extra->callable = callable;
      return obj;
    }
    const std::string& m = callable->extra->module;
    const std::string& n = callable->extra->name;
    if (options_.call) {
      const std::string where = m + "." + n + "()";
      if (auto value = options_.call(PyValue(arena_, callable, where), PyValue(arena_, args, where))) {
        return adopt(*value);
      }
    }
    const auto& a = args->items;
    if (m == "collections" && n == "OrderedDict" && a.empty() && !kwargs) return make(PyKind::Dict);
    if (m == "_codecs" && n == "encode" && a.size() == 2 && a[0]->kind == PyKind::String &&
        a[1]->kind == PyKind::String && is_latin1_codec(a[1]->text)) {
      std::string bytes;
      if (latin1_from_utf8(a[0]->text, &bytes)) return make_text(PyKind::Bytes, bytes);
    }
    if (m == "builtins" && (n == "bytes" || n == "bytearray")) {
      if (a.empty()) return make_text(PyKind::Bytes, "");
      if (a.size() == 1 && a[0]->kind == PyKind::Bytes) return make_text(PyKind::Bytes, a[0]->text);
      std::string bytes;
      if (a.size() == 2 && a[0]->kind == PyKind::String && a[1]->kind == PyKind::String &&
          is_latin1_codec(a[1]->text) && latin1_from_utf8(a[0]->text, &bytes)) {
        return make_text(PyKind::Bytes, bytes);
      }
    }
    if (m == "builtins" && (n == "set" || n == "frozenset") && !kwargs &&
        (a.empty() || (a.size() == 1 && (a[0]->kind == PyKind::List || a[0]->kind == PyKind::Tuple)))) {
      PyNode* obj = make_object(m, n, nullptr);
      if (!a.empty()) obj->items = a[0]->items;
      return obj;
    }
    if (m == "copyreg" && n == "_reconstructor" && a.size() == 3 && a[0]->kind == PyKind::Global) {
      return make_object(a[0]->extra->module, a[0]->extra->name,
                         a[2]->kind == PyKind::None ? nullptr : make_seq(PyKind::Tuple, {a[2]}));
    }
    if (m == "copyreg" && n == "__newobj__" && !a.empty() && a[0]->kind == PyKind::Global) {
      return make_object(a[0]->extra->module, a[0]->extra->name, make_seq(PyKind::Tuple, {a.begin() + 1, a.end()}));
    }
    return make_object(m, n, args, kwargs);
  }

  void build() {
    PyNode* state = pop();
    PyNode* target = top();
    switch (target->kind) {
      case PyKind::Object:
      case PyKind::Dict:
        if (!target->extra) target->extra = std::make_unique<PyExtra>();
        target->extra->state = state;
        break;
      case PyKind::Tensor:
        break;  // a tensor's Python attributes: not weights, dropped
      default:
        fail(std::string("BUILD on a ") + kind_name(target->kind));
    }
  }

  void set_items(PyNode* target, const std::vector<PyNode*>& kv, const char* opname) {
    if (target->kind != PyKind::Dict && target->kind != PyKind::Object) {
      fail(std::string(opname) + " on a " + kind_name(target->kind));
    }
    if (kv.size() % 2) fail(std::string(opname) + " with an odd number of keys and values");
    for (size_t k = 0; k < kv.size(); k += 2) py_dict_set(target, kv[k], kv[k + 1]);
  }

  void append_items(PyNode* target, const std::vector<PyNode*>& items, const char* opname) {
    if (target->kind != PyKind::List && target->kind != PyKind::Object) {
      fail(std::string(opname) + " to a " + kind_name(target->kind));
    }
    target->items.insert(target->items.end(), items.begin(), items.end());
  }

  void persistent(PyNode* pid) {
    if (!options_.persistent_load)
      fail("a persistent id (" + describe(PyValue(arena_, pid, ""), 1) + "), which plain pickles do not hold");
    push(adopt(options_.persistent_load(PyValue(arena_, pid, "persistent id"))));
  }

  void step(uint8_t code) {
    switch (code) {
      case op::PROTO:
        proto_ = static_cast<int>(le(1));
        if (proto_ > 5) fail("protocol " + std::to_string(proto_) + ", newer than 5");
        break;
      case op::FRAME: {
        const uint64_t n = le(8);
        if (n > data_.size() - pos_)
          fail("truncated: a frame of " + std::to_string(n) + " bytes, " + std::to_string(data_.size() - pos_) +
               " left");
        break;
      }
      case op::MARK:
        if (marks_.size() >= kMaxMarks) fail("nested more than " + std::to_string(kMaxMarks) + " MARKs deep");
        marks_.push_back(stack_.size());
        break;
      case op::POP:
        if (stack_.size() > floor()) {
          stack_.pop_back();
        } else {
          pop_mark();
        }
        break;
      case op::POP_MARK:
        pop_mark();
        break;
      case op::DUP:
        push(top());
        break;

      case op::NONE:
        push(none_);
        break;
      case op::NEWTRUE:
        push(true_);
        break;
      case op::NEWFALSE:
        push(false_);
        break;
      case op::INT: {
        const std::string_view text = line();
        if (text == "01" || text == "00") {
          push(text == "01" ? true_ : false_);
        } else {
          push(make_int(parse_int(text)));
        }
        break;
      }
      case op::LONG: {
        std::string_view text = line();
        if (!text.empty() && text.back() == 'L') text.remove_suffix(1);
        push(make_int(parse_int(text)));
        break;
      }
      case op::BININT:
        push(make_int(static_cast<int32_t>(static_cast<uint32_t>(le(4)))));
        break;
      case op::BININT1:
        push(make_int(static_cast<int64_t>(le(1))));
        break;
      case op::BININT2:
        push(make_int(static_cast<int64_t>(le(2))));
        break;
      case op::LONG1:
        push(make_int(decode_long(take(le(1)))));
        break;
      case op::LONG4: {
        const auto n = static_cast<int32_t>(static_cast<uint32_t>(le(4)));
        if (n < 0) fail("LONG4 with a negative length");
        push(make_int(decode_long(take(static_cast<uint64_t>(n)))));
        break;
      }
      case op::FLOAT: {
        const std::string_view text = line();
        double v = 0;
        const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
        if (res.ec != std::errc() || res.ptr != text.data() + text.size()) {
          fail("not a float: '" + std::string(text.substr(0, kMaxQuoted)) + "'");
        }
        PyNode* n = make(PyKind::Float);
        n->f = v;
        push(n);
        break;
      }
      case op::BINFLOAT: {
        const std::string_view b = take(8);
        uint64_t bits = 0;
        for (char c : b) bits = (bits << 8) | static_cast<uint8_t>(c);  // big-endian
        PyNode* n = make(PyKind::Float);
        std::memcpy(&n->f, &bits, 8);
        push(n);
        break;
      }

      case op::STRING: {
        std::string decoded;
        if (!decode_string_escapes(line(), &decoded)) fail("a STRING argument that is not a quoted string");
        push(make_py2_string(decoded));
        break;
      }
      case op::BINSTRING: {
        const auto n = static_cast<int32_t>(static_cast<uint32_t>(le(4)));
        if (n < 0) fail("BINSTRING with a negative length");
        push(make_py2_string(take(static_cast<uint64_t>(n))));
        break;
      }
      case op::SHORT_BINSTRING:
        push(make_py2_string(take(le(1))));
        break;
      case op::UNICODE:
        push(make_text(PyKind::String, decode_raw_unicode_escape(line())));
        break;
      case op::SHORT_BINUNICODE:
        push(make_text(PyKind::String, take(le(1))));
        break;
      case op::BINUNICODE:
        push(make_text(PyKind::String, take(le(4))));
        break;
      case op::BINUNICODE8:
        push(make_text(PyKind::String, take(le(8))));
        break;
      case op::SHORT_BINBYTES:
        push(make_text(PyKind::Bytes, take(le(1))));
        break;
      case op::BINBYTES:
        push(make_text(PyKind::Bytes, take(le(4))));
        break;
      case op::BINBYTES8:
      case op::BYTEARRAY8:
        push(make_text(PyKind::Bytes, take(le(8))));
        break;
      case op::NEXT_BUFFER:
        fail("an out-of-band buffer (protocol 5's NEXT_BUFFER), which no file holds");
      case op::READONLY_BUFFER:
        top();
        break;

      case op::EMPTY_TUPLE:
        push(empty_tuple_);
        break;
      case op::TUPLE:
        push(make_seq(PyKind::Tuple, pop_mark()));
        break;
      case op::TUPLE1:
      case op::TUPLE2:
      case op::TUPLE3: {
        const size_t n = code - op::TUPLE1 + 1u;
        if (stack_.size() < floor() + n) fail("the stack is empty");
        std::vector<PyNode*> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(make_seq(PyKind::Tuple, std::move(items)));
        break;
      }
      case op::EMPTY_LIST:
        push(make(PyKind::List));
        break;
      case op::LIST:
        push(make_seq(PyKind::List, pop_mark()));
        break;
      case op::EMPTY_DICT:
        push(make(PyKind::Dict));
        break;
      case op::DICT: {
        const auto kv = pop_mark();
        PyNode* d = make(PyKind::Dict);
        set_items(d, kv, "DICT");
        push(d);
        break;
      }
      case op::EMPTY_SET:
        push(make_object("builtins", "set", nullptr));
        break;
      case op::FROZENSET: {
        auto items = pop_mark();
        PyNode* s = make_object("builtins", "frozenset", nullptr);
        s->items = std::move(items);
        push(s);
        break;
      }
      case op::APPEND: {
        PyNode* item = pop();
        append_items(top(), {item}, "APPEND");
        break;
      }
      case op::APPENDS: {
        const auto items = pop_mark();
        append_items(top(), items, "APPENDS");
        break;
      }
      case op::ADDITEMS: {
        const auto items = pop_mark();
        if (top()->kind != PyKind::Object) fail(std::string("ADDITEMS to a ") + kind_name(top()->kind));
        append_items(top(), items, "ADDITEMS");
        break;
      }
      case op::SETITEM: {
        PyNode* value = pop();
        PyNode* key = pop();
        set_items(top(), {key, value}, "SETITEM");
        break;
      }
      case op::SETITEMS: {
        const auto kv = pop_mark();
        set_items(top(), kv, "SETITEMS");
        break;
      }

      case op::GLOBAL: {
        std::string module(line());
        std::string name(line());
        push(make_global(std::move(module), std::move(name)));
        break;
      }
      case op::STACK_GLOBAL: {
        PyNode* name = pop();
        PyNode* module = pop();
        if (module->kind != PyKind::String || name->kind != PyKind::String) fail("STACK_GLOBAL without two str");
        push(make_global(module->text, name->text));
        break;
      }
      case op::REDUCE: {
        PyNode* args = pop();
        PyNode* callable = pop();
        push(call(callable, args, nullptr));
        break;
      }
      case op::NEWOBJ: {
        PyNode* args = pop();
        PyNode* cls = pop();
        push(call(cls, args, nullptr));
        break;
      }
      case op::NEWOBJ_EX: {
        PyNode* kwargs = pop();
        PyNode* args = pop();
        PyNode* cls = pop();
        push(call(cls, args, kwargs));
        break;
      }
      case op::INST: {
        std::string module(line());
        std::string name(line());
        PyNode* cls = make_global(std::move(module), std::move(name));
        push(call(cls, make_seq(PyKind::Tuple, pop_mark()), nullptr));
        break;
      }
      case op::OBJ: {
        auto items = pop_mark();
        if (items.empty()) fail("OBJ without a class");
        PyNode* cls = items.front();
        push(call(cls, make_seq(PyKind::Tuple, {items.begin() + 1, items.end()}), nullptr));
        break;
      }
      case op::BUILD:
        build();
        break;

      case op::PUT:
        memo_put(static_cast<uint64_t>(parse_int(line())));
        break;
      case op::BINPUT:
        memo_put(le(1));
        break;
      case op::LONG_BINPUT:
        memo_put(le(4));
        break;
      case op::MEMOIZE:
        memo_put(memo_count_);
        break;  // Python: len(memo)
      case op::GET:
        memo_get(static_cast<uint64_t>(parse_int(line())));
        break;
      case op::BINGET:
        memo_get(le(1));
        break;
      case op::LONG_BINGET:
        memo_get(le(4));
        break;

      case op::PERSID:
        persistent(make_text(PyKind::String, line()));
        break;
      case op::BINPERSID:
        persistent(pop());
        break;

      case op::EXT1:
      case op::EXT2:
      case op::EXT4:
        fail("an extension code (EXT1/EXT2/EXT4): copyreg's registry is not supported");
      default: {
        static const char* kHex = "0123456789abcdef";
        fail(std::string("unknown opcode 0x") + kHex[code >> 4] + kHex[code & 15] +
             " (not a pickle, or a damaged one)");
      }
    }
  }

  std::string_view data_;
  size_t pos_ = 0, op_pos_ = 0;
  int proto_ = 0;
  const PickleOptions& options_;
  std::shared_ptr<PyArena> arena_;
  PyNode *none_, *true_, *false_, *empty_tuple_;
  std::vector<PyNode*> stack_;
  std::vector<size_t> marks_;  // stack sizes at each open MARK
  std::vector<PyNode*> memo_;
  std::unordered_map<uint64_t, PyNode*> sparse_memo_;
  uint64_t memo_count_ = 0;
};

PyValue load_pickle(std::string_view bytes, const PickleOptions& options, size_t* end) {
  return Unpickler(bytes, options).run(end);
}

}  // namespace attnmt
