#include "data/token_cache.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "data/examples.h"
#include "data/corpus.h"
#include "data/memo_encoder.h"
#include "util/error.h"
#include "util/fork_join.h"
#include "util/progress.h"
#include "util/text_io.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'A', 'T', 'N', 'M', 'T', 'T', 'O', 'K'};
constexpr uint32_t kVersion = 1;
constexpr size_t kBlockLines = 1 << 14;  // pairs read, then tokenized side by side, at a time

struct Footer {
  char magic[8];
  uint32_t version;
  uint32_t id_bytes;  // 2 when every vocabulary fits in 16 bits, else 4
  uint64_t lines;
  uint64_t key_bytes;
  uint64_t records_pos;
  uint64_t index_pos;
  uint64_t file_size;
  uint64_t checksum;  // StreamHash of every byte before the footer
};

// A 64-bit hash of a byte stream, a word at a time (a cache of a few GB is checked in about a
// second at open, read with pread so that it does not become resident).
class StreamHash {
 public:
  void add(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    while (size > 0 && filled_ > 0) {
      tail_[filled_++] = *p++;
      --size;
      if (filled_ == 8) {
        uint64_t w;
        std::memcpy(&w, tail_, 8);
        mix(w);
        filled_ = 0;
      }
    }
    for (; size >= 8; p += 8, size -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      mix(w);
    }
    while (size-- > 0) tail_[filled_++] = *p++;
  }
  uint64_t value() const {
    StreamHash copy = *this;
    uint64_t w = 0;
    std::memcpy(&w, copy.tail_, copy.filled_);
    copy.mix(w ^ (static_cast<uint64_t>(copy.filled_) << 56));
    return copy.h_;
  }

 private:
  void mix(uint64_t w) {
    h_ = (h_ ^ w) * 0x9E3779B97F4A7C15ULL;
    h_ ^= h_ >> 29;
  }
  uint64_t h_ = 0x243F6A8885A308D3ULL;
  unsigned char tail_[8] = {0};
  size_t filled_ = 0;
};

uint64_t fnv1a(const void* data, size_t size, uint64_t h = 1469598103934665603ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// What identifies a text file's content without reading all of it: path, size, modification
// time and its first megabyte.
std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError("cannot read '" + path + "': " + std::strerror(errno));
  std::ifstream in(path, std::ios::binary);
  std::string head(1 << 20, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  std::error_code ec;
  const auto absolute = fs::absolute(path, ec).lexically_normal().string();
  return absolute + " size " + std::to_string(st.st_size) + " mtime " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + " head " + hex(fnv1a(head.data(), head.size()));
}

// The pieces under their ids: two trainings of one vocabulary store different model bytes
// (SentencePiece keeps its options, paths included), but encode alike.
std::string vocabulary_identity(const Tokenizer& tok) {
  const std::string_view type = name_of(tok.type());
  uint64_t h = fnv1a(type.data(), type.size());
  for (int id = 0; id < tok.vocab_size(); ++id) {
    const auto piece = tok.piece(id);
    h = fnv1a(piece.data(), piece.size() + 1, h);  // with the terminating NUL: "ab","c" != "a","bc"
  }
  return std::string(type) + " " + std::to_string(tok.vocab_size()) + " pieces " + hex(h);
}

std::string cache_key(const CorpusConfig& corpus, const Tokenizers& tokenizers) {
  return "attnmt token cache " + std::to_string(kVersion) + "\nsrc file " + file_identity(corpus.src) +
         "\ntgt file " + file_identity(corpus.tgt) + "\nsrc tokenizer " + vocabulary_identity(*tokenizers.src) +
         "\ntgt tokenizer " + vocabulary_identity(*tokenizers.tgt) + "\n";
}

// The first line where two keys differ, for the log ("src file ... size 12 ...").
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string la, lb;
  while (std::getline(x, la)) {
    if (!std::getline(y, lb) || la != lb) return la.substr(0, la.find(' ', la.find(' ') + 1));
  }
  return "key";
}

size_t padding(size_t n) { return (8 - n % 8) % 8; }

}  // namespace

struct TokenCorpus::Impl {
  std::string path;
  bool built = false;
  int fd = -1;
  void* map = nullptr;
  size_t map_size = 0;
  uint32_t id_bytes = 2;
  uint64_t lines = 0;
  uint64_t records_pos = 0, index_pos = 0;  // where the records and the index begin in the file
  const uint64_t* offsets = nullptr;
  const uint32_t* src_lengths = nullptr;

  ~Impl() {
    if (map) ::munmap(map, map_size);
    if (fd >= 0) ::close(fd);
  }

  // Maps the file when it holds `key`; otherwise says why not (empty: it was mapped).
  std::string try_map(const std::string& key);
  void build(const CorpusConfig& corpus, const Tokenizers& tokenizers, const std::string& key, int threads,
             const std::string& what);
};

std::string TokenCorpus::Impl::try_map(const std::string& key) {
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? "missing" : std::string("unreadable: ") + std::strerror(errno);
  struct stat st {};
  Footer footer{};
  auto fail = [&](const std::string& why) {
    ::close(fd);
    fd = -1;
    return why;
  };
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(Footer)) return fail("damaged (too short)");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (::pread(fd, &footer, sizeof(footer), static_cast<off_t>(size - sizeof(footer))) != sizeof(footer) ||
      std::memcmp(footer.magic, kMagic, sizeof(kMagic)) != 0) {
    return fail("damaged (no footer)");
  }
  if (footer.version != kVersion) return fail("of another version (" + std::to_string(footer.version) + ")");
  const uint64_t index_bytes = 8 * (footer.lines + 1) + 4 * footer.lines;
  if (footer.file_size != size || (footer.id_bytes != 2 && footer.id_bytes != 4) || footer.key_bytes > footer.records_pos ||
      footer.records_pos > footer.index_pos || footer.index_pos + index_bytes + sizeof(Footer) > size) {
    return fail("damaged (inconsistent sizes)");
  }
  std::string stored(footer.key_bytes, '\0');
  if (::pread(fd, stored.data(), stored.size(), 0) != static_cast<ssize_t>(stored.size())) return fail("damaged (key)");
  if (stored != key) return fail("stale (" + first_difference(stored, key) + " changed)");
  {
    StreamHash hash;
    std::vector<char> chunk(1 << 22);
    for (uint64_t at = 0, end = size - sizeof(Footer); at < end;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk.size(), end - at));
      const ssize_t got = ::pread(fd, chunk.data(), want, static_cast<off_t>(at));
      if (got <= 0) return fail("unreadable");
      hash.add(chunk.data(), static_cast<size_t>(got));
      at += static_cast<uint64_t>(got);
    }
    if (hash.value() != footer.checksum) return fail("damaged (checksum)");
  }
  map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    map = nullptr;
    return fail(std::string("not mappable: ") + std::strerror(errno));
  }
  map_size = size;
  // Batches pick lines all over the file: read-ahead would only fill memory.
  ::madvise(map, map_size, MADV_RANDOM);
  const auto* base = static_cast<const unsigned char*>(map);
  id_bytes = footer.id_bytes;
  lines = footer.lines;
  records_pos = footer.records_pos;
  index_pos = footer.index_pos;
  offsets = reinterpret_cast<const uint64_t*>(base + footer.index_pos);
  src_lengths = reinterpret_cast<const uint32_t*>(base + footer.index_pos + 8 * (lines + 1));
  if (footer.records_pos + offsets[lines] * id_bytes > footer.index_pos) {
    ::munmap(map, map_size);
    map = nullptr;
    return fail("damaged (records)");
  }
  return "";
}

void TokenCorpus::Impl::build(const CorpusConfig& corpus, const Tokenizers& tokenizers, const std::string& key,
                              int threads, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  PairReader pairs(corpus, what);
  const uint32_t width = std::max(tokenizers.src->vocab_size(), tokenizers.tgt->vocab_size()) <= 65536 ? 2 : 4;
  const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::max<size_t>(1, std::min(threads > 0 ? static_cast<size_t>(threads) : hardware, hardware));
  AtomicFile file(path);
  StreamHash hash;
  struct HashedWriter {
    AtomicFile& file;
    StreamHash& hash;
    void write(const void* data, size_t size) {
      file.write(data, size);
      hash.add(data, size);
    }
  } out{file, hash};
  out.write(key.data(), key.size());
  const uint64_t zero = 0;
  out.write(&zero, padding(key.size()));
  std::vector<uint64_t> offsets{0};
  std::vector<uint32_t> src_lengths;
  std::vector<std::string> src_lines(kBlockLines), tgt_lines(kBlockLines);
  std::vector<std::vector<int>> src_ids(kBlockLines), tgt_ids(kBlockLines);
  std::vector<unsigned char> bytes;
  Progress progress("[data] tokenizing " + what, "lines", 0);
  // One memo per thread and side (MemoEncoder): used once the first block shows it gives the
  // tokenizer's own ids.
  std::vector<MemoEncoder> src_memo, tgt_memo;
  for (size_t w = 0; w < workers; ++w) {
    src_memo.emplace_back(*tokenizers.src);
    tgt_memo.emplace_back(*tokenizers.tgt);
  }
  bool memo = true, memo_checked = false;
  for (;;) {
    size_t n = 0;
    for (; n < kBlockLines; ++n) {
      if (!pairs.next(src_lines[n], tgt_lines[n])) break;
    }
    if (n == 0) break;
    if (!memo_checked) {
      memo_checked = true;
      const std::vector<std::string> src_first(src_lines.begin(), src_lines.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(n, 2000)));
      const std::vector<std::string> tgt_first(tgt_lines.begin(), tgt_lines.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(n, 2000)));
      memo = MemoEncoder(*tokenizers.src).agrees_on(src_first) && MemoEncoder(*tokenizers.tgt).agrees_on(tgt_first);
      if (!memo) spdlog::warn("[data] {}: the tokenizer's pieces span spaces: tokenizing line by line (slower)", what);
    }
    // Contiguous slices of the block, one per thread (a short block on this one).
    const size_t used = n >= 64 ? workers : 1;
    fork_join(used, [&](size_t w) {
      for (size_t i = n * w / used; i < n * (w + 1) / used; ++i) {
        if (memo) {
          src_memo[w].encode(src_lines[i], src_ids[i]);
          tgt_memo[w].encode(tgt_lines[i], tgt_ids[i]);
        } else {
          src_ids[i] = tokenizers.src->encode(src_lines[i]);
          tgt_ids[i] = tokenizers.tgt->encode(tgt_lines[i]);
        }
      }
    });
    bytes.clear();
    for (size_t i = 0; i < n; ++i) {
      for (const auto* ids : {&src_ids[i], &tgt_ids[i]}) {
        for (int id : *ids) {
          if (width == 2) {
            const auto v = static_cast<uint16_t>(id);
            bytes.insert(bytes.end(), reinterpret_cast<const unsigned char*>(&v), reinterpret_cast<const unsigned char*>(&v) + 2);
          } else {
            const auto v = static_cast<int32_t>(id);
            bytes.insert(bytes.end(), reinterpret_cast<const unsigned char*>(&v), reinterpret_cast<const unsigned char*>(&v) + 4);
          }
        }
      }
      src_lengths.push_back(static_cast<uint32_t>(src_ids[i].size()));
      offsets.push_back(offsets.back() + src_ids[i].size() + tgt_ids[i].size());
    }
    out.write(bytes.data(), bytes.size());
    progress.update(static_cast<int64_t>(src_lengths.size()));
  }
  lines = src_lengths.size();
  if (lines == 0) throw InputError(what + ": '" + corpus.src + "' is empty");
  const uint64_t records_pos = key.size() + padding(key.size());
  const uint64_t record_bytes = offsets.back() * width;
  out.write(&zero, padding(record_bytes));
  const uint64_t index_pos = records_pos + record_bytes + padding(record_bytes);
  out.write(offsets.data(), offsets.size() * sizeof(uint64_t));
  out.write(src_lengths.data(), src_lengths.size() * sizeof(uint32_t));
  const uint64_t index_end = index_pos + offsets.size() * 8 + src_lengths.size() * 4;
  out.write(&zero, padding(index_end));
  Footer footer{};
  std::memcpy(footer.magic, kMagic, sizeof(kMagic));
  footer.version = kVersion;
  footer.id_bytes = width;
  footer.lines = lines;
  footer.key_bytes = key.size();
  footer.records_pos = records_pos;
  footer.index_pos = index_pos;
  footer.file_size = index_end + padding(index_end) + sizeof(Footer);
  footer.checksum = hash.value();
  file.write(&footer, sizeof(footer));
  file.commit();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("[data] {}: tokenized {} pairs in {:.1f}s ({} pairs/s, {} threads) -> '{}' ({:.1f} MB)", what,
               group_thousands(static_cast<int64_t>(lines)), seconds,
               group_thousands(static_cast<int64_t>(static_cast<double>(lines) / std::max(seconds, 1e-3))), workers, path,
               static_cast<double>(footer.file_size) / 1e6);
}

TokenCorpus::TokenCorpus() : impl_(std::make_unique<Impl>()) {}
TokenCorpus::TokenCorpus(TokenCorpus&&) noexcept = default;
TokenCorpus& TokenCorpus::operator=(TokenCorpus&&) noexcept = default;
TokenCorpus::~TokenCorpus() = default;

std::string TokenCorpus::file_name(const CorpusConfig& corpus) {
  std::error_code ec;
  const auto src = fs::absolute(corpus.src, ec).lexically_normal();
  const auto tgt = fs::absolute(corpus.tgt, ec).lexically_normal();
  const std::string both = src.string() + '\n' + tgt.string();
  return src.filename().string() + "." + tgt.filename().string() + "." + hex(fnv1a(both.data(), both.size())).substr(0, 8) +
         ".tok";
}

TokenCorpus TokenCorpus::open(const CorpusConfig& corpus, const Tokenizers& tokenizers, const std::string& cache_dir,
                              int threads, const std::string& what) {
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) throw InputError("data.cache_dir: cannot create '" + cache_dir + "': " + ec.message());
  TokenCorpus corpus_ids;
  Impl& impl = *corpus_ids.impl_;
  impl.path = (fs::path(cache_dir) / file_name(corpus)).string();
  const std::string key = cache_key(corpus, tokenizers);
  // One builder at a time (the ranks of a run on one machine, or runs sharing a cache dir): the
  // others wait here and then map what it wrote.
  const std::string lock_path = impl.path + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) throw InputError("data.cache_dir: cannot write '" + lock_path + "': " + std::strerror(errno));
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {
  }
  const std::string why = impl.try_map(key);
  if (why.empty()) {
    spdlog::info("[data] {}: {} pairs from the token cache '{}'", what, group_thousands(static_cast<int64_t>(impl.lines)),
                 impl.path);
    return corpus_ids;
  }
  spdlog::info("[data] {}: token cache '{}' {}: tokenizing '{}' / '{}'", what, impl.path, why, corpus.src, corpus.tgt);
  // Temp files of builds killed before they finished (the lock says no build of this file runs).
  const std::string temp_prefix = fs::path(impl.path).filename().string() + ".tmp.";
  for (const auto& entry : fs::directory_iterator(cache_dir, ec)) {
    if (entry.path().filename().string().rfind(temp_prefix, 0) == 0) fs::remove(entry.path(), ec);
  }
  try {
    impl.build(corpus, tokenizers, key, threads, what);
  } catch (const RuntimeError& e) {  // the cache could not be written (AtomicFile names the path and the reason)
    throw InputError(std::string(e.what()) + " (the token cache: set data.cache_dir to a place with room)");
  }
  impl.built = true;
  if (const std::string again = impl.try_map(key); !again.empty()) {
    throw RuntimeError("the token cache '" + impl.path + "' just written cannot be read: " + again);
  }
  return corpus_ids;
}

size_t TokenCorpus::lines() const { return impl_->lines; }
uint32_t TokenCorpus::src_length(size_t line) const { return impl_->src_lengths[line]; }
uint32_t TokenCorpus::tgt_length(size_t line) const {
  return static_cast<uint32_t>(impl_->offsets[line + 1] - impl_->offsets[line]) - impl_->src_lengths[line];
}
const std::string& TokenCorpus::path() const { return impl_->path; }
bool TokenCorpus::built() const { return impl_->built; }

// Read with pread, not through the mapping: batches pick lines all over the file, and each fault
// on a mapped file maps the pages around it too (fault-around), which filled hundreds of MB of
// resident memory within a few hundred updates; pread copies what is asked from the page cache.
void TokenCorpus::fetch(size_t line, Example& out) const {
  const Impl& m = *impl_;
  auto read = [&](void* to, size_t bytes, uint64_t at) {
    auto* p = static_cast<char*>(to);
    while (bytes > 0) {
      const ssize_t got = ::pread(m.fd, p, bytes, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw RuntimeError("cannot read the token cache '" + m.path + "': " + (got < 0 ? std::strerror(errno) : "truncated"));
      p += got;
      at += static_cast<uint64_t>(got);
      bytes -= static_cast<size_t>(got);
    }
  };
  uint64_t range[2];
  uint32_t src_len = 0;
  read(range, sizeof(range), m.index_pos + 8 * line);
  read(&src_len, sizeof(src_len), m.index_pos + 8 * (m.lines + 1) + 4 * line);
  if (range[1] < range[0] || range[1] - range[0] < src_len || m.records_pos + range[1] * m.id_bytes > m.index_pos) {
    throw RuntimeError("the token cache '" + m.path + "' is damaged at line " + std::to_string(line + 1) +
                       " (remove it: the next run rebuilds it)");
  }
  const size_t count = static_cast<size_t>(range[1] - range[0]);
  out.src.resize(src_len);
  out.tgt.resize(count - src_len);
  out.line = line;
  thread_local std::vector<unsigned char> bytes;
  bytes.resize(count * m.id_bytes);
  read(bytes.data(), bytes.size(), m.records_pos + range[0] * m.id_bytes);
  for (size_t i = 0; i < count; ++i) {
    int id;
    if (m.id_bytes == 2) {
      uint16_t v;
      std::memcpy(&v, bytes.data() + 2 * i, 2);
      id = v;
    } else {
      std::memcpy(&id, bytes.data() + 4 * i, 4);
    }
    (i < src_len ? out.src[i] : out.tgt[i - src_len]) = id;
  }
}

void TokenCorpus::release_pages() const {
  if (impl_->map) ::madvise(impl_->map, impl_->map_size, MADV_DONTNEED);
}

}  // namespace attnmt
