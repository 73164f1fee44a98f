// A training corpus as token ids in one binary file: the first run tokenizes the text (on every
// thread, reading it in blocks, so memory does not grow with the corpus) and writes the file;
// later runs, resumes and the other ranks of a distributed run memory-map its index, read each
// batch's ids from it with pread, and read no text.
//
// The file is rebuilt when its key no longer matches: the two text files (path, size,
// modification time, a hash of their first megabyte) and the vocabularies of the tokenizers.
// Layout (native byte order, written front to back, so a kill leaves only a temp file):
//   key text | records: per line, its source ids then its target ids (2 or 4 bytes each) |
//   uint64 offset of each line's record (lines + 1) | uint32 source length of each line | footer
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/tokenizer.h"

namespace attnmt {

struct Example;

class TokenCorpus {
 public:
  // The cache of `corpus` in `cache_dir` (created if needed), built first when it is missing,
  // stale or damaged. `what` names the corpus in messages ("data.train"). Bad text is an
  // InputError naming the file and line; a cache that cannot be written (a full disk) is an
  // InputError naming it and data.cache_dir.
  static TokenCorpus open(const CorpusConfig& corpus, const Tokenizers& tokenizers, const std::string& cache_dir,
                          int threads, const std::string& what);
  // The file's name in the cache dir for this corpus (the same text files, the same name).
  static std::string file_name(const CorpusConfig& corpus);
  TokenCorpus(TokenCorpus&&) noexcept;
  TokenCorpus& operator=(TokenCorpus&&) noexcept;
  ~TokenCorpus();

  size_t lines() const;  // every line of the text, empty and long ones included
  uint32_t src_length(size_t line) const;
  uint32_t tgt_length(size_t line) const;
  // The line's ids (no bos/eos), into `out` (out.line = line). Thread-safe; RuntimeError if the
  // file cannot be read.
  void fetch(size_t line, Example& out) const;
  const std::string& path() const;
  bool built() const;  // whether open() tokenized the text (false: it mapped an existing cache)
  // Drops the mapping's pages from this process (the kernel's page cache keeps them): called while
  // the lengths are read, so resident memory stays bounded whatever the corpus size.
  void release_pages() const;

 private:
  TokenCorpus();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnmt
