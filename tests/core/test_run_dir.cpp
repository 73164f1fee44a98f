// A training run's directory (train/run_dir.h) and its log.jsonl records (io/train_log.h).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io/train_log.h"
#include "train/run_dir.h"
#include "util/error.h"

using namespace attnmt;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("attnmt_run_dir_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

void touch(const fs::path& p) { std::ofstream(p) << "x"; }

}  // namespace

TEST_CASE("log.jsonl records: the lines training writes, read back field by field", "[train][log]") {
  TrainRecord t;
  t.step = 100;
  t.epoch = 1;
  t.loss = 7.5;
  t.ppl = 1303.25;
  t.lr = 0.0004;
  t.tgt_tokens_per_sec = 4405.5;
  t.elapsed = 21.25;
  // The keys in the order nlohmann::json writes an object (sorted), as every log so far has them.
  CHECK(train_log_line(t) == R"({"elapsed":21.25,"epoch":1,"loss":7.5,"lr":0.0004,"ppl":1303.25,"step":100,)"
                             R"("tgt_tokens_per_sec":4405.5,"type":"train"})");
  t.allreduce_share = 0.25;
  CHECK(train_log_line(t).find(R"("allreduce_share":0.25)") != std::string::npos);

  ValidRecord v;
  v.step = 1000;
  v.epoch = 3;
  v.valid_ppl = 23.5;
  v.lr = 0.002;
  v.elapsed = 200;
  v.best = true;
  CHECK(train_log_line(v) == R"({"best":true,"elapsed":200.0,"epoch":3,"lr":0.002,"scheduled":true,"step":1000,)"
                             R"("type":"valid","valid_ppl":23.5})");  // no BLEU keys under valid_metric: ppl
  v.valid_bleu = 19.25;
  v.valid_chrf = 36.5;
  v.scheduled = false;

  TestRecord test;
  test.step = 7200;
  test.test_bleu = 41.0;
  test.test_chrf = 59.5;
  test.beam_size = 5;
  test.sentences = 1000;
  test.decode_seconds = 12.5;
  test.checkpoint = "runs/x/best.pt";
  StartRecord start;
  start.parameters = 9491264;
  start.attention = "multi_head";
  start.cpu_flags = "avx2 fma";

  const auto dir = fresh_dir("log");
  fs::create_directories(dir);
  const auto path = (dir / "log.jsonl").string();
  {
    TrainLogWriter writer(path);
    writer.write(start);
    writer.write(t);
    writer.write(v);
  }
  {
    std::ofstream(path, std::ios::app) << "{\"step\": 5, \"typ\n"  // a kill mid-write
                                       << "{\"type\":\"something_else\",\"step\":1}\n"
                                       << "{\"type\":\"train\",\"step\":\"x\"}\n";  // a field of the wrong type
    TrainLogWriter(path).write(test);  // a resumed run appends
  }
  const auto log = read_train_log(path);
  REQUIRE(log);
  CHECK(log->skipped_lines == 3);
  REQUIRE(log->records.size() == 4);
  const auto starts = log->all<StartRecord>();
  REQUIRE(starts.size() == 1);
  CHECK(starts[0].parameters == 9491264);
  CHECK(starts[0].attention == "multi_head");
  CHECK(starts[0].cpu_flags == "avx2 fma");
  const auto trains = log->all<TrainRecord>();
  REQUIRE(trains.size() == 1);
  CHECK(trains[0].step == 100);
  CHECK(trains[0].tgt_tokens_per_sec == 4405.5);
  CHECK(trains[0].allreduce_share == std::optional<double>(0.25));
  const auto valids = log->all<ValidRecord>();
  REQUIRE(valids.size() == 1);
  CHECK(valids[0].valid_bleu == std::optional<double>(19.25));
  CHECK(valids[0].valid_chrf == std::optional<double>(36.5));
  CHECK_FALSE(valids[0].scheduled);
  CHECK(valids[0].best);
  const auto tests = log->all<TestRecord>();
  REQUIRE(tests.size() == 1);
  CHECK(tests[0].test_bleu == 41.0);
  CHECK(tests[0].checkpoint == "runs/x/best.pt");
  CHECK(std::holds_alternative<TestRecord>(log->records.back()));  // file order

  CHECK_FALSE(read_train_log((dir / "missing.jsonl").string()));
  fs::remove_all(dir);
}

TEST_CASE("every committed run log reads with no line skipped", "[train][log]") {
  int files = 0;
  for (const char* folder : {"results/recipe_logs", "results/zoo_logs"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(ATTNMT_SOURCE_DIR) / folder)) {
      if (entry.path().extension() != ".jsonl") continue;
      INFO(entry.path().string());
      const auto log = read_train_log(entry.path().string());
      REQUIRE(log);
      CHECK(log->skipped_lines == 0);
      CHECK_FALSE(log->all<TrainRecord>().empty());
      ++files;
    }
  }
  CHECK(files > 50);
}

TEST_CASE("the run directory: one training at a time, and what a killed run left", "[train][run_dir]") {
  const auto dir = fresh_dir("lock");
  CHECK_FALSE(save_dir_holder(dir.string()));  // creates nothing
  CHECK_FALSE(fs::exists(dir));
  {
    RunDir run(dir.string());
    CHECK(fs::is_directory(dir));
    CHECK(save_dir_holder(dir.string()) == std::optional<std::string>(std::to_string(::getpid())));
    // flock locks belong to the open file: a second RunDir in this process is refused as another
    // process would be.
    REQUIRE_THROWS_WITH(RunDir(dir.string()),
                        "train.save_dir '" + dir.string() + "' is in use by another attnmt train (pid " +
                            std::to_string(::getpid()) + ")");

    touch(dir / "best.pt.tmp.4242");
    touch(dir / "ckpt.100.pt.tmp.17");
    for (int step : {100, 200, 300, 400, 1000}) touch(run.step_checkpoint(step));
    touch(dir / "ckpt.x.pt");  // not a step checkpoint: kept
    run.remove_stale_temp_files();
    CHECK_FALSE(fs::exists(dir / "best.pt.tmp.4242"));
    CHECK_FALSE(fs::exists(dir / "ckpt.100.pt.tmp.17"));
    run.keep_step_checkpoints(3);  // the newest by step, not by name
    CHECK(fs::exists(dir / "ckpt.1000.pt"));
    CHECK(fs::exists(dir / "ckpt.400.pt"));
    CHECK(fs::exists(dir / "ckpt.300.pt"));
    CHECK_FALSE(fs::exists(dir / "ckpt.200.pt"));
    CHECK_FALSE(fs::exists(dir / "ckpt.100.pt"));
    CHECK(fs::exists(dir / "ckpt.x.pt"));
    CHECK(run.best_checkpoint() == (dir / "best.pt").string());
    run.log().write(TrainRecord{});
    CHECK(fs::file_size(dir / "log.jsonl") > 0);
  }
  CHECK_FALSE(fs::exists(dir / "train.lock"));  // released and removed with the run
  CHECK_FALSE(save_dir_holder(dir.string()));
  { RunDir again(dir.string()); }  // free again
  fs::remove_all(dir);
}
