// Running the real attnmt program from tests: its exit status and output, a temp dir, and the
// tiny overfitting config (30 pairs of tests/data) that the end-to-end tests train.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "skip.h"

namespace attnmt::test {

namespace fs = std::filesystem;

struct Run {
  int status;          // exit code, or 128 + signal
  std::string output;  // stdout and stderr
};

// The test data (tests/data), and its tiny corpus's source side.
inline const std::string kData = ATTNMT_TEST_DATA_DIR;
inline const std::string kSrc = kData + "/tiny.de";

// How many times `what` occurs in `text` (overlapping occurrences counted).
inline size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Runs `program` (a path) with `args`, shell text after the program name (redirections allowed).
inline Run run_binary(const std::string& program, const std::string& args, const std::string& env = "") {
  const std::string cmd = env + " " + program + " " + args + " 2>&1";
  Run r{0, ""};
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Runs attnmt (the front program users run) with `args`, as run_binary.
inline Run run(const std::string& args, const std::string& env = "") { return run_binary(ATTNMT_BINARY, args, env); }

// Runs a bash script (for tests that start, signal and kill processes); returns its output.
// The script is put in single quotes: it must not contain any.
inline std::string shell(const std::string& script) {
  FILE* p = popen(("bash -c '" + script + "' 2>&1").c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

inline fs::path temp_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("attnmt_e2e_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline std::string tiny_config(const fs::path& save_dir, int max_steps) {
  const std::string data = ATTNMT_TEST_DATA_DIR;
  std::ostringstream c;
  c << "data:\n"
    << "  train: {src: " << data << "/tiny.de, tgt: " << data << "/tiny.en}\n"
    << "  valid: {src: " << data << "/tiny.de, tgt: " << data << "/tiny.en}\n"
    << "tokenizer: {vocab_size: 400, shared: true}\n"
    << "model:\n"
    << "  embedding_size: 64\n"
    << "  encoder: {hidden_size: 64, layers: 1, dropout: 0.0}\n"
    << "  decoder: {hidden_size: 64, layers: 1, dropout: 0.0}\n"
    << "  attention: {type: luong_general}\n"
    << "train:\n"
    << "  save_dir: " << save_dir.string() << "\n"
    << "  batch_size: 10\n"
    << "  max_steps: " << max_steps << "\n"
    << "  learning_rate: 0.01\n"
    << "  label_smoothing: 0.0\n"
    << "  valid_every: 300\n"
    << "  report_every: 50\n"
    << "decode: {beam_size: 3}\n"
    << "threads: 1\n";
  return c.str();
}

// The headless browser the browser tests drive (scripts/install_deps.sh --test installs it); ""
// when there is none.
inline std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string path = shell(std::string("command -v ") + name);
    if (!path.empty()) return path.substr(0, path.find('\n'));
  }
  return "";
}

inline void write(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

}  // namespace attnmt::test
