// util/fork_join.h: every index once, at once, index 0 on the calling thread, errors after all.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "util/fork_join.h"

using attnmt::fork_join;

TEST_CASE("fork_join runs every index once, index 0 on the calling thread", "[threads]") {
  for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{5}}) {
    std::mutex m;
    std::vector<size_t> seen;
    std::set<std::thread::id> threads;
    std::thread::id first;
    fork_join(count, [&](size_t i) {
      std::lock_guard<std::mutex> lock(m);
      seen.push_back(i);
      threads.insert(std::this_thread::get_id());
      if (i == 0) first = std::this_thread::get_id();
    });
    const size_t runs = std::max<size_t>(count, 1);  // 0 and 1: fn(0) here
    REQUIRE(seen.size() == runs);
    REQUIRE(std::set<size_t>(seen.begin(), seen.end()).size() == runs);
    REQUIRE(threads.size() == runs);
    REQUIRE(first == std::this_thread::get_id());
  }
}

TEST_CASE("fork_join runs them at once", "[threads]") {
  // Each waits until all have started, and counts whether it saw them all while it still ran: run
  // one after another, the first gives up with one started (the 10 s limit keeps a broken pool
  // from hanging the test), and fewer than four see all four.
  std::atomic<int> started{0};
  std::atomic<int> saw_all{0};
  fork_join(4, [&](size_t) {
    ++started;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started < 4 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    if (started == 4) ++saw_all;
  });
  REQUIRE(started == 4);
  REQUIRE(saw_all == 4);
}

TEST_CASE("fork_join waits for all, then rethrows the lowest index's error", "[threads]") {
  std::atomic<int> finished{0};
  try {
    fork_join(4, [&](size_t i) {
      if (i == 3) throw std::runtime_error("three");
      if (i == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        throw std::runtime_error("one");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ++finished;
    });
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    REQUIRE(std::string(e.what()) == "one");
  }
  REQUIRE(finished == 2);  // 0 and 2 ran to the end before the error came out
}
