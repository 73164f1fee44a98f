// Running this program (or another one) as a child process and measuring it: wall time and the
// child's peak resident memory, which is what `compare` and `bench` report for decoding and
// training: a process of its own, so the figure is the decoder's and nothing else's.
//
// The peak is the child's own VmHWM (/proc/self/status), which attnmt writes when it exits to the
// file named by ATTNMT_PEAK_RSS_FILE (run_child sets it). wait4's ru_maxrss is not used when that
// file is there: Linux counts into a child's ru_maxrss the peak of the memory image it replaced at
// exec, and with posix_spawn (vfork) that image is the parent's, so every child of a large parent
// "peaked" at least at the parent's size (compare's children all read the compare process's own
// size once it had grown past theirs; docs/performance.md, "Peak RSS of a child process is the
// child's own").
#pragma once
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace attnmt {

struct ChildResult {
  int exit_code = 0;        // or 128 + signal
  double seconds = 0;       // wall time
  double peak_rss_mib = 0;  // the child's own peak RSS (see above); else wait4's ru_maxrss
  bool rss_from_child = false;  // whether the child reported its peak itself
};

// The variable that asks attnmt to write its peak RSS (KiB, one number) to a file when it exits.
inline constexpr const char* kPeakRssFileVariable = "ATTNMT_PEAK_RSS_FILE";

// This process's peak resident memory since its exec (VmHWM), KiB; -1 where /proc has no figure.
long peak_rss_kib_of_self();

// Writes peak_rss_kib_of_self() to the file ATTNMT_PEAK_RSS_FILE names, if set (finish_process
// calls it, so every attnmt command reports its peak to a run_child parent).
void report_peak_rss_if_asked();

// This program's own path (/proc/self/exe); RuntimeError if it cannot be found.
std::string self_executable();

// Starts `argv` (argv[0] = the program path) with this process's environment plus `env` (each
// replacing a variable of that name), stdin from /dev/null, stdout and stderr inherited unless
// `output_path` is set (then both go to that file), SIGINT and SIGTERM unblocked
// (util/signals.h). Returns its pid without waiting. RuntimeError if it cannot be started.
pid_t spawn_child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env = {},
                  const std::string& output_path = "");

// spawn_child (with `env` added), then waits for it and measures it (ChildResult). Used by compare
// and bench to run this program (self_executable()) as a child; `train --nproc` starts its ranks
// with spawn_child.
ChildResult run_child(const std::vector<std::string>& argv, const std::string& output_path = "",
                      const std::vector<std::pair<std::string, std::string>>& env = {});

}  // namespace attnmt
