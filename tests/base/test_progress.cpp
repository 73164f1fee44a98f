// The progress line (util/progress.h): rendering, ETA arithmetic, and silence when stderr is not a
// terminal, all without a terminal.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "util/error.h"
#include "util/progress.h"

using namespace attnmt;
using Catch::Matchers::Contains;

namespace {

// Columns of a UTF-8 string.
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// What the calls in `f` write to stderr (fd 2 pointed at a file meanwhile).
template <class F>
std::string stderr_of(F&& f) {
  const auto path = std::filesystem::temp_directory_path() / ("attnmt_progress_" + std::to_string(::getpid()));
  std::fflush(stderr);
  const int saved = dup(2);
  const int file = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(file, 2);
  close(file);
  f();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  return text;
}

}  // namespace

TEST_CASE("progress: numbers, durations and the ETA by hand", "[progress]") {
  CHECK(group_thousands(0) == "0");
  CHECK(group_thousands(999) == "999");
  CHECK(group_thousands(1000) == "1,000");
  CHECK(group_thousands(1234567) == "1,234,567");
  CHECK(group_thousands(-4500) == "-4,500");
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(59.4) == "59s");
  CHECK(format_duration(605) == "10m05s");
  CHECK(format_duration(3725) == "1h02m");
  CHECK(format_duration(-3) == "0s");
  // 300 of 1,200 done in 60 s: 900 left at 5/s = 180 s.
  REQUIRE(eta_seconds(300, 1200, 60.0).has_value());
  CHECK(*eta_seconds(300, 1200, 60.0) == Approx(180.0));
  CHECK(*eta_seconds(1200, 1200, 60.0) == 0.0);
  CHECK_FALSE(eta_seconds(0, 1200, 60.0).has_value());  // nothing done yet: no rate
  CHECK_FALSE(eta_seconds(300, 0, 60.0).has_value());   // total unknown
}

TEST_CASE("progress: the line, and cut to the width", "[progress]") {
  ProgressState s{"[train]", "step", 1200, 3000, 200, 50.0, "3,010 tok/s", {"epoch 3", "loss 4.071"}};
  // 1,000 steps since the start in 50 s: 1,800 left at 20/s = 90 s.
  const std::string line = render_progress(s, 200);
  CHECK(line == "[train] step 1,200/3,000 40% | ETA 1m30s | epoch 3 | loss 4.071 | 3,010 tok/s");
  s.rate = "";  // the rate from the counts: 1,000 steps / 50 s
  CHECK_THAT(render_progress(s, 200), Contains("| loss 4.071 | 20 step/s"));
  s.total = 0;  // unknown total: a count, no percentage or ETA
  CHECK(render_progress(s, 200) == "[train] step 1,200 | epoch 3 | loss 4.071 | 20 step/s");
  for (int width : {10, 30, 45}) {
    const std::string cut = render_progress(s, width);
    CHECK(columns(cut) == static_cast<size_t>(width));
    CHECK_THAT(cut, Contains("\u2026"));
  }
  ProgressState waiting{"[data] training the SentencePiece model on 58,000 lines", "", 0, 0, 0, 0, "", {"12s"}};
  CHECK(render_progress(waiting, 200) == "[data] training the SentencePiece model on 58,000 lines | 12s");
  ProgressState wide{"[translate] über", "Sätze", 5, 10, 0, 1.0, "", {}};  // multi-byte: cut by code points
  CHECK(columns(render_progress(wide, 12)) == 12);
}

TEST_CASE("progress: silent when stderr is not a terminal, drawn when asked", "[progress]") {
  CHECK_THROWS_AS(parse_progress_mode("sometimes"), InputError);
  set_progress_mode(parse_progress_mode("auto"));
  const std::string silent = stderr_of([] {
    Progress p("[test]", "lines", 10);
    for (int i = 0; i <= 10; ++i) p.update(i, {"x"});
    WaitingProgress w("[test] waiting");
  });
  CHECK(silent.empty());
  set_progress_mode(ProgressMode::kAlways);
  const std::string drawn = stderr_of([] {
    Progress p("[test]", "lines", 10);
    p.update(0);
    p.update(10);  // the last update is always drawn
  });
  set_progress_mode(ProgressMode::kAuto);
  CHECK_THAT(drawn, Contains("\r[test] lines 0/10 0%") && Contains("\r[test] lines 10/10 100%"));
  CHECK(drawn.substr(drawn.size() - 4) == "\r\033[K");  // cleared at the end
  set_progress_mode(ProgressMode::kNever);
  CHECK(stderr_of([] { Progress("[test]", "lines", 1).update(1); }).empty());
  set_progress_mode(ProgressMode::kAuto);
}
