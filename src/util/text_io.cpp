#include "util/text_io.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace attnmt {

LineReader::LineReader(const std::string& path, const LineCheck& check) : check_(check), buf_(1 << 16) {
  const bool from_stdin = path == "-";
  name_ = from_stdin ? "<stdin>" : path;
  if (!from_stdin && std::filesystem::is_directory(path)) throw InputError("cannot read '" + name_ + "': Is a directory");
  gzFile f = from_stdin ? gzdopen(::dup(STDIN_FILENO), "rb") : gzopen(path.c_str(), "rb");
  if (!f) throw InputError("cannot read '" + name_ + "': " + std::strerror(errno ? errno : ENOENT));
  gzbuffer(f, 1 << 17);
  file_ = f;
}

LineReader::~LineReader() {
  if (file_) gzclose(static_cast<gzFile>(file_));
}

bool LineReader::fill() {
  if (eof_) return false;
  auto* f = static_cast<gzFile>(file_);
  const int got = gzread(f, buf_.data(), static_cast<unsigned>(buf_.size()));
  if (got < 0) {
    int err = 0;
    std::string msg = gzerror(f, &err);
    throw InputError("cannot read '" + name_ + "': " + msg + " (truncated or corrupt gzip?)");
  }
  if (got == 0) {
    int err = 0;
    gzerror(f, &err);
    if (err != Z_OK && err != Z_BUF_ERROR) throw InputError("cannot read '" + name_ + "': corrupt gzip stream");
    eof_ = true;
    return false;
  }
  pos_ = 0;
  end_ = static_cast<size_t>(got);
  return true;
}

bool LineReader::next(std::string& line) {
  line.clear();
  bool newline = false;
  for (;;) {
    if (pos_ == end_ && !fill()) break;
    const char* p = buf_.data() + pos_;
    const char* end = buf_.data() + end_;
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    const char* stop = nl ? nl : end;
    line.append(p, stop);
    pos_ = static_cast<size_t>((nl ? nl + 1 : end) - buf_.data());
    if (line.size() > check_.max_line_bytes) {
      throw InputError("'" + name_ + "' line " + std::to_string(line_no_ + 1) + ": line is longer than " +
                       std::to_string(check_.max_line_bytes) + " bytes");
    }
    if (nl) {
      newline = true;
      break;
    }
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (!newline && line.empty()) return false;  // the end (a missing final newline is accepted)
  ++line_no_;
  if (auto z = line.find('\0'); z != std::string::npos) {
    throw InputError("'" + name_ + "' line " + std::to_string(line_no_) + ": NUL byte at byte " + std::to_string(z));
  }
  if (auto bad = find_invalid_utf8(line); bad != std::string::npos) {
    throw InputError("'" + name_ + "' line " + std::to_string(line_no_) + ": invalid UTF-8 at byte " +
                     std::to_string(bad));
  }
  return true;
}

std::vector<std::string> read_lines(const std::string& file, const LineCheck& check) {
  LineReader reader(file, check);
  std::vector<std::string> lines;
  std::string line;
  while (reader.next(line)) lines.push_back(std::move(line));
  return lines;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "': " + std::strerror(errno ? errno : ENOENT));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd_ < 0) fail("open");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const std::string& what) {
  const std::string reason = std::strerror(errno);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  tmp_.clear();
  throw RuntimeError("cannot write '" + path_ + "': " + what + ": " + reason);
}

void AtomicFile::write(const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::write(fd_, p + done, size - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    done += static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("fsync");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close");
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("rename");
  tmp_.clear();
  auto dir = std::filesystem::path(path_).parent_path();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  AtomicFile file(path);
  file.write(content.data(), content.size());
  file.commit();
}

}  // namespace attnmt
