#include "pyformat/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace attnmt {

namespace {

class Fd {
 public:
  explicit Fd(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail();
    struct stat st;
    if (::fstat(fd_, &st) != 0) fail();
    if (S_ISDIR(st.st_mode)) throw InputError(path + ": cannot read (a directory)");
    size_ = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0;
  }
  ~Fd() { ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  size_t size() const { return size_; }

  // Reads up to `n` bytes into `out`; the count read (short only at the end of the file).
  size_t read(char* out, size_t n) {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::read(fd_, out + done, n - done);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail();
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  [[noreturn]] void fail() const { throw InputError(path_ + ": cannot read (" + std::strerror(errno) + ")"); }

 private:
  std::string path_;
  int fd_ = -1;
  size_t size_ = 0;
};

}  // namespace

std::shared_ptr<const FileBytes> read_file_bytes(const std::string& path) {
  Fd fd(path);
  auto file = std::make_shared<FileBytes>();
  file->path = path;
  file->bytes.resize(fd.size());
  file->bytes.resize(fd.read(file->bytes.data(), file->bytes.size()));
  // A pipe or a file that grew since fstat: the rest, a block at a time.
  char block[1 << 16];
  for (size_t r; (r = fd.read(block, sizeof(block))) > 0;) file->bytes.append(block, r);
  return file;
}

std::string read_file_head(const std::string& path, size_t n) {
  Fd fd(path);
  std::string head(n, '\0');
  head.resize(fd.read(head.data(), n));
  return head;
}

}  // namespace attnmt
