// The entries of a ZIP archive held in memory, as torch.save writes them (PyTorch's
// PyTorchStreamWriter, on miniz): stored (uncompressed) entries, zip64 when the archive passes
// 4 GB. Reads the central directory only; compressed or encrypted entries are refused when read,
// CRCs are not checked (PyTorch's reader skips them, and torch.serialization.set_crc32_options(False)
// writes none).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnmt {

struct ZipEntry {
  std::string name;
  uint64_t header_offset = 0;  // of its local header
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint16_t method = 0;  // 0: stored, 8: deflate
  uint16_t flags = 0;
};

class ZipReader {
 public:
  // InputError "<file>: ..." when the central directory is missing, truncated or inconsistent.
  ZipReader(std::string_view bytes, std::string file);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;  // null if absent
  // The bytes of a stored entry (a view into the archive); InputError for a compressed or
  // encrypted entry or one whose data lies outside the file.
  std::string_view read(const ZipEntry& entry) const;

 private:
  [[noreturn]] void fail(const std::string& what) const;
  std::string_view bytes_;
  std::string file_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> by_name_;
};

// The first bytes of a ZIP archive: a local header, or the end record of an empty archive.
bool looks_like_zip(std::string_view head);

}  // namespace attnmt
