// Running this program (or another one) as a child process and measuring it: wall time and the
// child's peak resident memory (getrusage's ru_maxrss through wait4), which is what `compare`
// reports for decoding: a process of its own, so the figure is the decoder's and nothing else's.
#pragma once
#include <string>
#include <vector>

namespace attnmt {

struct ChildResult {
  int exit_code = 0;        // or 128 + signal
  double seconds = 0;       // wall time
  double peak_rss_mib = 0;  // ru_maxrss of the child
};

// This program's own path (/proc/self/exe); RuntimeError if it cannot be found.
std::string self_executable();

// Runs `argv` (argv[0] = the program path), stdin from /dev/null, stdout and stderr inherited
// unless `output_path` is set (then both go to that file). Waits for it. RuntimeError if it
// cannot be started.
ChildResult run_child(const std::vector<std::string>& argv, const std::string& output_path = "");

}  // namespace attnmt
