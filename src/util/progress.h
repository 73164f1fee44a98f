// A progress line on a terminal: "[train] step 1,200/3,000 40% | ETA 9m58s | epoch 3 | loss 4.07 |
// 3,010 tok/s", redrawn in place on stderr at most every 0.2 s and cleared when the work ends.
// Only on a terminal (--progress auto, the default): when stderr is a file or a pipe nothing is
// drawn, so logs and CI output stay as they were. Log lines (util/logging) clear the line first
// and it is drawn again at the next update. Rendering is a pure function (render_progress),
// tested without a terminal.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace attnmt {

enum class ProgressMode { kAuto, kAlways, kNever };

// "auto" | "always" | "never" (InputError naming --progress otherwise).
ProgressMode parse_progress_mode(const std::string& text);
// The process's mode (--progress), kAuto until set.
void set_progress_mode(ProgressMode mode);
// Whether lines are drawn: kAlways, or kAuto and stderr is a terminal.
bool progress_enabled();

struct ProgressState {
  std::string label;                // "[train]"
  std::string unit;                 // "step", "sentences"
  int64_t done = 0;
  int64_t total = 0;                // 0: unknown (no percentage, no ETA)
  int64_t start = 0;                // done when the display began (a resumed run): rates count from it
  double elapsed_seconds = 0;
  std::string rate;                 // "3,010 tok/s" ("" = done / elapsed in unit/s)
  std::vector<std::string> fields;  // "epoch 3", "loss 4.07", "next valid 1,500"
};

// 1234567 -> "1,234,567".
std::string group_thousands(int64_t n);
// 59 -> "59s", 605 -> "10m05s", 3725 -> "1h02m".
std::string format_duration(double seconds);
// Seconds left at the rate so far; none while nothing is done or the total is unknown.
std::optional<double> eta_seconds(int64_t done, int64_t total, double elapsed_seconds);
// The line, cut to `width` columns (UTF-8 aware; a cut line ends with "…").
std::string render_progress(const ProgressState& state, int width);

// Clears a drawn progress line (a log line is about to be written).
void clear_progress_line();

class Progress {
 public:
  Progress(std::string label, std::string unit, int64_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Redraws (at most every 0.2 s, and always when done == total or `now`). The first call sets
  // where the rate and the ETA count from.
  void update(int64_t done, std::vector<std::string> fields = {}, std::string rate = "", bool now = false);
  void set_total(int64_t total) { state_.total = total; }
  // Clears the line; later updates draw nothing.
  void finish();
  bool enabled() const { return enabled_; }

 private:
  ProgressState state_;
  bool enabled_;
  bool started_ = false;  // the first update sets the start (done, time)
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// For a step that reports nothing while it runs (SentencePiece training): "LABEL | 12s", redrawn
// twice a second by a thread of its own until this is destroyed.
class WaitingProgress {
 public:
  explicit WaitingProgress(std::string label);
  ~WaitingProgress();
  WaitingProgress(const WaitingProgress&) = delete;
  WaitingProgress& operator=(const WaitingProgress&) = delete;

 private:
  std::string label_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace attnmt
