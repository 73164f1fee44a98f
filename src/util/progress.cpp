#include "util/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "util/error.h"
#include "util/utf8.h"

namespace attnmt {

namespace {

std::atomic<ProgressMode> g_mode{ProgressMode::kAuto};
std::mutex g_draw;          // one line on the terminal at a time
bool g_line_shown = false;  // under g_draw

int terminal_width() {
  winsize w{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

// Columns of a UTF-8 string (one per code point: the labels and numbers here are not wide).
size_t columns(const std::string& s) { return utf8_characters(s); }

// Draws `line` in place of the current progress line.
void draw_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_draw);
  std::fprintf(stderr, "\r%s\033[K", line.c_str());
  std::fflush(stderr);
  g_line_shown = true;
}

// One column spare: a line that fills the terminal exactly would wrap on some terminals.
int line_width() { return terminal_width() - 1; }

}  // namespace

ProgressMode parse_progress_mode(const std::string& text) {
  if (text == "auto") return ProgressMode::kAuto;
  if (text == "always") return ProgressMode::kAlways;
  if (text == "never") return ProgressMode::kNever;
  throw InputError("--progress must be auto, always or never, got '" + text + "'");
}

void set_progress_mode(ProgressMode mode) { g_mode = mode; }

bool progress_enabled() {
  const ProgressMode mode = g_mode;
  return mode == ProgressMode::kAlways || (mode == ProgressMode::kAuto && isatty(STDERR_FILENO) == 1);
}

std::string group_thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char buffer[32];
  if (s < 60) {
    std::snprintf(buffer, sizeof(buffer), "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buffer, sizeof(buffer), "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  }
  return buffer;
}

std::optional<double> eta_seconds(int64_t done, int64_t total, double elapsed_seconds) {
  if (done <= 0 || total <= 0 || elapsed_seconds <= 0) return std::nullopt;
  if (done >= total) return 0.0;
  return elapsed_seconds * static_cast<double>(total - done) / static_cast<double>(done);
}

std::string render_progress(const ProgressState& s, int width) {
  std::string line = s.label;
  if (!s.unit.empty()) line += " " + s.unit + " " + group_thousands(s.done);
  if (!s.unit.empty() && s.total > 0) {
    line += "/" + group_thousands(s.total);
    const auto percent = static_cast<int>(100.0 * static_cast<double>(std::min(s.done, s.total)) / static_cast<double>(s.total));
    line += " " + std::to_string(percent) + "%";
  }
  // The ETA first after the count: on a narrow terminal the end of the line is what gets cut.
  if (const auto eta = eta_seconds(s.done - s.start, s.total - s.start, s.elapsed_seconds)) {
    line += " | ETA " + format_duration(*eta);
  }
  for (const auto& f : s.fields) line += " | " + f;
  if (!s.rate.empty()) {
    line += " | " + s.rate;
  } else if (!s.unit.empty() && s.elapsed_seconds > 0) {
    line += " | " + group_thousands(std::llround(static_cast<double>(s.done - s.start) / s.elapsed_seconds)) + " " +
            s.unit + "/s";
  }
  if (width > 0 && columns(line) > static_cast<size_t>(width)) {
    // Cut at a code point boundary, leaving one column for the ellipsis.
    size_t kept = 0, i = 0;
    for (; i < line.size(); ++i) {
      if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80 && ++kept == static_cast<size_t>(width)) break;
    }
    line = line.substr(0, i) + "\u2026";
  }
  return line;
}

void clear_progress_line() {
  std::lock_guard<std::mutex> lock(g_draw);
  if (!g_line_shown) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  g_line_shown = false;
}

Progress::Progress(std::string label, std::string unit, int64_t total)
    : enabled_(progress_enabled()), start_(std::chrono::steady_clock::now()) {
  state_.label = std::move(label);
  state_.unit = std::move(unit);
  state_.total = total;
}

Progress::~Progress() { finish(); }

void Progress::update(int64_t done, std::vector<std::string> fields, std::string rate, bool now_) {
  if (!enabled_ || finished_) return;
  if (!started_) {
    started_ = true;
    state_.start = done;
    start_ = std::chrono::steady_clock::now();
  }
  const auto now = std::chrono::steady_clock::now();
  const bool last = state_.total > 0 && done >= state_.total;
  if (!last && !now_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  state_.done = done;
  state_.fields = std::move(fields);
  state_.rate = std::move(rate);
  state_.elapsed_seconds = std::chrono::duration<double>(now - start_).count();
  draw_line(render_progress(state_, line_width()));
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  clear_progress_line();
}

WaitingProgress::WaitingProgress(std::string label) : label_(std::move(label)) {
  if (!progress_enabled()) return;
  thread_ = std::thread([this] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; })) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      draw_line(render_progress({label_, "", 0, 0, 0, 0, "", {format_duration(seconds)}}, line_width()));
    }
  });
}

WaitingProgress::~WaitingProgress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  clear_progress_line();
}

}  // namespace attnmt
