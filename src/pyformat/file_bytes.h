// A whole file read into memory once: the tensors of a checkpoint point into it, and keep it
// alive. (Read, not memory-mapped: a checkpoint that training rewrites while it is read must not
// end this process with SIGBUS.)
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace attnmt {

struct FileBytes {
  std::string path;
  std::string bytes;
};

// InputError "<path>: cannot read (<reason>)" if the file cannot be opened or read.
std::shared_ptr<const FileBytes> read_file_bytes(const std::string& path);

// The first `n` bytes (fewer if the file is shorter), to tell formats apart before reading it all.
std::string read_file_head(const std::string& path, size_t n);

}  // namespace attnmt
