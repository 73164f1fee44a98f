// libFuzzer target: the corpus reader (plain or gzip'd text, CRLF, UTF-8/NUL/line-length checks)
// on arbitrary file contents, and the pair check of two such files. Bad input must be an
// InputError naming file and line.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "data/corpus.h"
#include "util/error.h"
#include "util/text_io.h"

namespace {
const std::string& temp_path(const char* suffix) {
  static const std::string base = "/tmp/attnmt_fuzz_corpus_" + std::to_string(::getpid());
  static std::string paths[2] = {base + ".src", base + ".tgt"};
  return paths[suffix[0] == 't'];
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // Split at the first 0xFE byte (never valid UTF-8) into a source and a target file.
  const auto cut = bytes.find('\xFE');
  std::ofstream(temp_path("src"), std::ios::binary) << bytes.substr(0, cut);
  std::ofstream(temp_path("tgt"), std::ios::binary) << (cut == std::string::npos ? bytes : bytes.substr(cut + 1));
  try {
    attnmt::LineCheck check;
    check.max_line_bytes = 4096;  // small, so that the limit is reached too
    auto lines = attnmt::read_lines(temp_path("src"), check);
    for (const auto& l : lines) {
      if (attnmt::find_invalid_utf8(l) != std::string::npos || l.find('\0') != std::string::npos) {
        __builtin_trap();  // read_lines let through what it promises to reject or strip
      }
    }
    attnmt::read_parallel({temp_path("src"), temp_path("tgt")}, "fuzz");
  } catch (const attnmt::InputError&) {
  }
  return 0;
}
