// Text files in and out: plain or gzip'd input (zlib reads both), checked line by line.
// Every problem is an InputError naming the file, the 1-based line and (for bad bytes) the
// byte offset within the line.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/utf8.h"  // find_invalid_utf8, which the line checks use

namespace attnmt {

struct LineCheck {
  size_t max_line_bytes = 1 << 20;  // longer lines are an error (file:line named)
};

// Reads all lines of a file ("-": standard input, named "<stdin>" in messages); strips a trailing
// "\r" (CRLF accepted) and accepts a missing final newline.
// Rejects invalid UTF-8, NUL bytes and lines longer than check.max_line_bytes. An empty file
// yields an empty vector (callers decide whether that is an error).
std::vector<std::string> read_lines(const std::string& path, const LineCheck& check = {});

// The lines of a file one at a time, checked as read_lines checks them (the same messages):
// corpora of any size are read in bounded memory.
class LineReader {
 public:
  explicit LineReader(const std::string& path, const LineCheck& check = {});
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  // The next line, without its "\n" / "\r\n"; false at the end of the file.
  bool next(std::string& line);
  size_t line_number() const { return line_no_; }  // 1-based: the line `next` returned last
  const std::string& name() const { return name_; }  // as messages name the file

 private:
  bool fill();  // more bytes into buf_; false at the end of the file
  std::string name_;
  LineCheck check_;
  void* file_ = nullptr;  // gzFile
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  size_t line_no_ = 0;
  bool eof_ = false;
};

// Whole file as a string (binary), InputError if it cannot be read.
std::string read_file(const std::string& path);

// A file written atomically: bytes go to a temp file in the same directory; commit() fsyncs it
// and renames it over `path`. Dropped without commit(), the temp file is removed and the previous
// file at `path` is left intact. RuntimeError (naming the path and the system's reason) on failure.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* data, size_t size);
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what);
  std::string path_, tmp_;
  int fd_ = -1;
};

// Writes `content` to `path` with an AtomicFile.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace attnmt
