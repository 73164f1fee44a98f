#include "pyformat/zip_reader.h"

#include "util/error.h"

namespace attnmt {

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50, kEnd64 = 0x06064b50,
                   kEnd64Locator = 0x07064b50;
constexpr size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kEnd64Size = 56, kLocatorSize = 20;
constexpr uint16_t kZip64Extra = 0x0001;

uint64_t le(std::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<uint8_t>(b[at + static_cast<size_t>(k)]);
  return v;
}

std::string method_name(uint16_t method) {
  switch (method) {
    case 8:
      return "deflate";
    case 9:
      return "deflate64";
    case 12:
      return "bzip2";
    case 14:
      return "lzma";
    case 93:
      return "zstd";
    default:
      return "method " + std::to_string(method);
  }
}

}  // namespace

bool looks_like_zip(std::string_view head) {
  return head.size() >= 4 && head[0] == 'P' && head[1] == 'K' &&
         ((head[2] == 3 && head[3] == 4) || (head[2] == 5 && head[3] == 6));
}

void ZipReader::fail(const std::string& what) const { throw InputError(file_ + ": " + what); }

ZipReader::ZipReader(std::string_view bytes, std::string file) : bytes_(bytes), file_(std::move(file)) {
  const size_t size = bytes_.size();
  // The end record: the last 22 bytes, or earlier by an archive comment of up to 64 KiB.
  size_t end = std::string_view::npos;
  if (size >= kEndSize) {
    const size_t lowest = size - kEndSize > 0xffff ? size - kEndSize - 0xffff : 0;
    for (size_t at = size - kEndSize + 1; at-- > lowest;) {
      if (le(bytes_, at, 4) == kEnd && at + kEndSize + le(bytes_, at + 20, 2) <= size) {
        end = at;
        break;
      }
    }
  }
  if (end == std::string_view::npos) fail("a damaged or truncated ZIP archive (no end of central directory record)");
  uint64_t count = le(bytes_, end + 10, 2);
  uint64_t cd_size = le(bytes_, end + 12, 4);
  uint64_t cd_offset = le(bytes_, end + 16, 4);
  if (le(bytes_, end + 4, 2) != 0 || le(bytes_, end + 6, 2) != 0) fail("a multi-volume ZIP archive");
  if (end >= kLocatorSize && le(bytes_, end - kLocatorSize, 4) == kEnd64Locator) {
    const uint64_t at = le(bytes_, end - kLocatorSize + 8, 8);
    if (at > size || size - at < kEnd64Size || le(bytes_, at, 4) != kEnd64) {
      fail("a damaged ZIP archive (the zip64 end record lies outside the file)");
    }
    count = le(bytes_, at + 32, 8);
    cd_size = le(bytes_, at + 40, 8);
    cd_offset = le(bytes_, at + 48, 8);
  }
  if (cd_offset > size || cd_size > size - cd_offset) {
    fail("a damaged or truncated ZIP archive (the central directory lies beyond the end of the file)");
  }
  if (count > cd_size / kCentralSize)
    fail("a damaged ZIP archive (" + std::to_string(count) + " entries in " + std::to_string(cd_size) + " bytes)");

  entries_.reserve(static_cast<size_t>(count));
  size_t at = static_cast<size_t>(cd_offset);
  const size_t cd_end = static_cast<size_t>(cd_offset + cd_size);
  for (uint64_t i = 0; i < count; ++i) {
    if (cd_end - at < kCentralSize || le(bytes_, at, 4) != kCentralHeader) {
      fail("a damaged ZIP archive (central directory entry " + std::to_string(i) + " is not one)");
    }
    ZipEntry e;
    e.flags = static_cast<uint16_t>(le(bytes_, at + 8, 2));
    e.method = static_cast<uint16_t>(le(bytes_, at + 10, 2));
    e.compressed_size = le(bytes_, at + 20, 4);
    e.size = le(bytes_, at + 24, 4);
    const size_t name_len = le(bytes_, at + 28, 2), extra_len = le(bytes_, at + 30, 2),
                 comment_len = le(bytes_, at + 32, 2);
    e.header_offset = le(bytes_, at + 42, 4);
    if (cd_end - at - kCentralSize < name_len + extra_len + comment_len) {
      fail("a damaged ZIP archive (central directory entry " + std::to_string(i) + " runs past the directory)");
    }
    e.name.assign(bytes_.substr(at + kCentralSize, name_len));
    // zip64: the fields at 0xffffffff follow in the zip64 extra field, in this order.
    const std::string_view extra = bytes_.substr(at + kCentralSize + name_len, extra_len);
    for (size_t x = 0; x + 4 <= extra.size();) {
      const uint64_t id = le(extra, x, 2), len = le(extra, x + 2, 2);
      if (x + 4 + len > extra.size()) break;
      if (id == kZip64Extra) {
        size_t y = x + 4;
        auto next = [&](uint64_t& field) {
          if (field != 0xffffffffu) return;
          if (y + 8 > x + 4 + len) fail("a damaged ZIP archive (a short zip64 field in '" + e.name + "')");
          field = le(extra, y, 8);
          y += 8;
        };
        next(e.size);
        next(e.compressed_size);
        next(e.header_offset);
      }
      x += 4 + len;
    }
    by_name_.emplace(e.name, entries_.size());
    entries_.push_back(std::move(e));
    at += kCentralSize + name_len + extra_len + comment_len;
  }
}

const ZipEntry* ZipReader::find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

std::string_view ZipReader::read(const ZipEntry& e) const {
  if (e.flags & 1) fail("ZIP entry '" + e.name + "' is encrypted");
  if (e.method != 0) {
    fail("ZIP entry '" + e.name + "' is compressed (" + method_name(e.method) +
         "); torch.save stores entries uncompressed, so this archive was repacked: save it again with torch.save");
  }
  const size_t size = bytes_.size();
  const uint64_t at = e.header_offset;
  if (at > size || size - at < kLocalSize || le(bytes_, at, 4) != kLocalHeader) {
    fail("a damaged or truncated ZIP archive (no local header for '" + e.name + "')");
  }
  const uint64_t data = at + kLocalSize + le(bytes_, at + 26, 2) + le(bytes_, at + 28, 2);
  if (e.compressed_size != e.size) fail("a damaged ZIP archive ('" + e.name + "' is stored with two sizes)");
  if (data > size || e.size > size - data) {
    fail("a truncated ZIP archive ('" + e.name + "' needs " + std::to_string(e.size) + " bytes at offset " +
         std::to_string(data) + ", the file has " + std::to_string(size) + ")");
  }
  return bytes_.substr(static_cast<size_t>(data), static_cast<size_t>(e.size));
}

}  // namespace attnmt
