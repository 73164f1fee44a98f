// The server's batching without HTTP: CLIENTS threads in this process, each submitting one
// sentence at a time to serve's Batcher (the one `attnmt serve` runs) and waiting for it, as the
// load test's clients do (scripts/load_test.sh), for SECONDS per round; static and continuous
// batching alternate round by round. Prints per round and mode: sentences/s, p50/p99 latency.
// What it leaves out (HTTP, JSON) is the same in both modes; what it keeps is what differs.
// Built on demand and run by scripts/bench_batching.sh (the load test's sentences); directly:
//   build/bench_batching MODEL INPUT [CLIENTS=32] [SECONDS=8] [ROUNDS=3] [THREADS=2] [MAX_BATCH=0]
//       [MODES=static,continuous]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "decoding/seq2seq_step_model.h"
#include "decoding/translator.h"
#include "io/model_file.h"
#include "runtime/compute.h"
#include "serve/batcher.h"

using namespace attnmt;
using Clock = std::chrono::steady_clock;

namespace {

int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL INPUT [CLIENTS] [SECONDS] [ROUNDS] [THREADS] [MAX_BATCH] [MODES]\n", argv[0]);
    return 2;
  }
  const std::string model_path = argv[1];
  const int clients = argc > 3 ? std::stoi(argv[3]) : 32;
  const double seconds = argc > 4 ? std::stod(argv[4]) : 8;
  const int rounds = argc > 5 ? std::stoi(argv[5]) : 3;
  const int threads = argc > 6 ? std::stoi(argv[6]) : 2;
  const size_t max_batch = argc > 7 ? std::stoul(argv[7]) : 0;
  const std::string modes = argc > 8 ? argv[8] : "static,continuous";
  std::vector<std::string> lines;
  {
    std::ifstream in(argv[2]);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  if (lines.empty()) {
    std::fprintf(stderr, "bench_batching: no sentences in %s\n", argv[2]);
    return 2;
  }
  auto loaded = load_model(model_path, "", "");
  configure_compute(threads, loaded.config.gemm);
  auto step = make_step_model(loaded.model, loaded.config.decode, loaded.lexicon);
  ServedModel served{"m", loaded.checkpoint, step.get(), &loaded.tokenizers, translate_options(loaded.config.decode)};
  RequestOptions options;
  options.beam_size = served.defaults.search.beam_size;

  for (int round = 0; round < rounds; ++round) {
    for (const bool continuous : {false, true}) {
      if (modes.find(continuous ? "continuous" : "static") == std::string::npos) continue;
      BatcherLimits limits;
      limits.continuous = continuous;
      limits.max_batch_sentences = max_batch;
      limits.max_queue_sentences = 4096;
      limits.max_wait_ms = 5;
      Batcher batcher(limits, nullptr);
      std::atomic<size_t> next{0};
      std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
      const auto start = Clock::now();
      const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
      std::vector<std::thread> pool;
      for (int c = 0; c < clients; ++c) {
        pool.emplace_back([&, c] {
          while (Clock::now() < end) {
            const auto& line = lines[next++ % lines.size()];
            const auto t0 = Clock::now();
            auto pending = batcher.submit(served, options, {line});
            if (!pending || !pending->wait_until(t0 + std::chrono::seconds(60))) std::abort();
            latencies[static_cast<size_t>(c)].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
          }
        });
      }
      for (auto& t : pool) t.join();
      const double wall = std::chrono::duration<double>(Clock::now() - start).count();
      std::vector<double> all;
      for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
      std::sort(all.begin(), all.end());
      auto at = [&](double q) { return 1000 * all[std::min(all.size() - 1, static_cast<size_t>(q * all.size()))]; };
      std::printf("round %d %-10s %7.1f sentences/s  p50 %6.1f ms  p99 %6.1f ms  (%zu sentences)\n", round,
                  continuous ? "continuous" : "static", all.size() / wall, at(0.5), at(0.99), all.size());
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_batching: %s\n", e.what());
    return 1;
  }
}
