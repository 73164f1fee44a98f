// Data-parallel training through the real program: 2 processes on 127.0.0.1 (c10d Gloo).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <string>

#include "checkpoints.h"
#include "program.h"
#include "io/model_file.h"
#include "train/distributed.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

// max |a - b| over all parameters of two checkpoints of the same architecture.
double max_parameter_difference(const fs::path& a, const fs::path& b) {
  auto ma = attnmt::load_model(a.parent_path().string(), a.string(), "cpu");
  auto mb = attnmt::load_model(b.parent_path().string(), b.string(), "cpu");
  auto pa = ma.model->named_parameters();
  auto pb = mb.model->named_parameters();
  REQUIRE(pa.size() == pb.size());
  double worst = 0;
  for (const auto& item : pa) {
    const auto* other = pb.find(item.key());
    REQUIRE(other);
    worst = std::max(worst, (item.value() - *other).abs().max().item<double>());
  }
  return worst;
}

}  // namespace

TEST_CASE("distributed: shard_batch splits a global batch without overlap or loss", "[distributed]") {
  std::vector<size_t> batch{7, 3, 9, 1, 4};
  CHECK(attnmt::shard_batch(batch, 0, 2) == std::vector<size_t>{7, 3});
  CHECK(attnmt::shard_batch(batch, 1, 2) == std::vector<size_t>{9, 1, 4});
  CHECK(attnmt::shard_batch(batch, 0, 1) == batch);
  // more ranks than examples: some get nothing, none gets one twice
  std::vector<size_t> seen;
  for (int r = 0; r < 8; ++r) {
    for (auto i : attnmt::shard_batch(batch, r, 8)) seen.push_back(i);
  }
  CHECK(seen == batch);
}

TEST_CASE("distributed: 2 processes x batch B give the parameters of 1 process x batch 2B", "[distributed][e2e]") {
  if (!attnmt::distributed_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
    return;
  }
  // No dropout (masks are drawn per process); 12 updates = 4 epochs of 3 global batches of 10.
  // Both optimizers: SGD shows the summed gradients equal the big batch's; Adam (at its default
  // learning rate) shows the whole update does. Adam divides by sqrt(v) + 1e-8, so for the few
  // weights whose gradient is ~1e-8 the float rounding of a 5 + 5 sum instead of a 10-row sum is
  // amplified up to the learning rate: its differences are ~lr x 1e-3 (seen: 1.5e-6 after 1 step and
  // 4.6e-6 after 12 at lr 1e-3; SGD: 7e-9 after 12 at lr 0.5).
  const auto [optimizer, lr] = GENERATE(std::make_pair(std::string("adam"), 0.001), std::make_pair(std::string("sgd"), 0.5));
  auto dir = temp_dir("dist_equal_" + optimizer);
  write(dir / "c.yaml", tiny_config(dir / "one", 12));
  const std::string cfg =
      (dir / "c.yaml").string() + " --set train.optimizer=" + optimizer + " --set train.learning_rate=" + std::to_string(lr);
  auto one = run("train " + cfg + " --set train.batch_size=10");
  INFO(one.output);
  REQUIRE(one.status == 0);
  auto two = run("train " + cfg + " --nproc 2 --set train.batch_size=5 --set train.save_dir=" + (dir / "two").string());
  INFO(two.output);
  REQUIRE(two.status == 0);
  REQUIRE(two.output.find("2 processes, gloo, batch 5 per process") != std::string::npos);
  // the control: one process with batch 5 is a different run
  auto small = run("train " + cfg + " --set train.batch_size=5 --set train.save_dir=" + (dir / "small").string());
  REQUIRE(small.status == 0);

  const double diff = max_parameter_difference(dir / "one" / "ckpt.12.pt", dir / "two" / "ckpt.12.pt");
  const double control = max_parameter_difference(dir / "one" / "ckpt.12.pt", dir / "small" / "ckpt.12.pt");
  INFO(optimizer << ": max |2 x B - 1 x 2B| = " << diff << ", max |1 x B - 1 x 2B| = " << control);
  CHECK(diff <= 1e-5);
  CHECK(control > 1e-3);
  // distributed.compress fp16: the gradients travel as scaled fp16 (11-bit mantissas): near the
  // exact sum, and not equal to it (the key does something).
  auto half = run("train " + cfg + " --nproc 2 --set train.batch_size=5 --set distributed.compress=fp16 --set train.save_dir=" +
                  (dir / "half").string());
  INFO(half.output);
  REQUIRE(half.status == 0);
  const double fp16_diff = max_parameter_difference(dir / "one" / "ckpt.12.pt", dir / "half" / "ckpt.12.pt");
  INFO("max |2 x B fp16 - 1 x 2B| = " << fp16_diff);
  CHECK(fp16_diff > diff);
  CHECK(fp16_diff < control / 10);
  // rank 0 alone writes the log, and says how many processes trained
  const auto log = attnmt::read_file((dir / "two" / "log.jsonl").string());
  CHECK(log.find("\"processes\":2") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("BPE-dropout: 2 processes x B and 2 replicas x B give the parameters of 1 x 2B", "[distributed][e2e]") {
  if (!attnmt::distributed_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
    return;
  }
  // The draws are seeded by (seed, update, pair): every process and replica segments its pairs as
  // one process on the whole batch does, and the loss is normalised by the whole batch's dropped
  // target tokens, so the splits train one model's updates.
  auto dir = temp_dir("dist_bpe_dropout");
  write(dir / "c.yaml", tiny_config(dir / "one", 12));
  const std::string plain_cfg = (dir / "c.yaml").string() + " --set train.learning_rate=0.001";
  const std::string cfg = plain_cfg + " --set data.src_bpe_dropout=0.3 --set data.tgt_bpe_dropout=0.3";
  auto one = run("train " + cfg + " --set train.batch_size=10");
  INFO(one.output);
  REQUIRE(one.status == 0);
  REQUIRE(one.output.find("BPE-dropout: source 0.3") != std::string::npos);
  auto two = run("train " + cfg + " --nproc 2 --set train.batch_size=5 --set train.save_dir=" + (dir / "two").string());
  INFO(two.output);
  REQUIRE(two.status == 0);
  auto replicas = run("train " + cfg + " --set train.batch_size=10 --set threads=2 --set train.replicas=2" +
                      " --set train.save_dir=" + (dir / "replicas").string());
  INFO(replicas.output);
  REQUIRE(replicas.status == 0);
  // the control: the same run without BPE-dropout ends elsewhere
  auto plain = run("train " + plain_cfg + " --set train.batch_size=10 --set train.save_dir=" + (dir / "plain").string());
  REQUIRE(plain.status == 0);

  const auto ckpt = [&](const char* name) { return dir / name / "ckpt.12.pt"; };
  const double processes = max_parameter_difference(ckpt("one"), ckpt("two"));
  const double threads = max_parameter_difference(ckpt("one"), ckpt("replicas"));
  const double control = max_parameter_difference(ckpt("one"), ckpt("plain"));
  INFO("max |2 processes - 1| = " << processes << ", |2 replicas - 1| = " << threads << ", |no BPE-dropout - 1| = " << control);
  CHECK(processes <= 1e-5);
  CHECK(threads <= 1e-5);
  CHECK(control > 1e-3);
  fs::remove_all(dir);
}

TEST_CASE("distributed: resume with another number of processes", "[distributed][e2e]") {
  if (!attnmt::distributed_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
    return;
  }
  auto dir = temp_dir("dist_resume");
  write(dir / "c.yaml", tiny_config(dir / "m", 2));
  const std::string cfg = (dir / "c.yaml").string();
  auto first = run("train " + cfg + " --nproc 2 --set train.batch_size=4");
  INFO(first.output);
  REQUIRE(first.status == 0);
  // 2 x 4 sentences per update: the checkpoint is after 16 of epoch 1's 30 pairs; one process
  // with batch 4 goes on at its 5th batch
  auto single = run("train " + cfg + " --resume --set train.batch_size=4 --set train.max_steps=8");
  INFO(single.output);
  REQUIRE(single.status == 0);
  CHECK(single.output.find("written by 2 process(es), this run has 1: epoch 1 resumes after batch 4 of 8") !=
        std::string::npos);
  CHECK(fs::exists(dir / "m" / "ckpt.8.pt"));
  auto again = run("train " + cfg + " --nproc 2 --resume --set train.batch_size=4 --set train.max_steps=12");
  INFO(again.output);
  REQUIRE(again.status == 0);
  CHECK(again.output.find("written by 1 process(es), this run has 2") != std::string::npos);
  CHECK(fs::exists(dir / "m" / "ckpt.12.pt"));
  fs::remove_all(dir);
}

TEST_CASE("distributed: a stop between validations and --resume give the straight run, bit for bit",
          "[distributed][e2e]") {
  if (!attnmt::distributed_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
    return;
  }
  // Dropout on: rank 1 draws its own masks, which must be drawn alike after the resume. 2 x 4
  // pairs per update, 30 pairs: the stop at 9 falls inside epoch 3, between validations (6, 12).
  auto dir = temp_dir("dist_exact");
  write(dir / "c.yaml", tiny_config(dir / "straight", 20));
  const std::string cfg = (dir / "c.yaml").string() +
                          " --nproc 2 --set train.batch_size=4 --set train.valid_every=6 --set train.lr_patience=1"
                          " --set model.encoder.dropout=0.3 --set model.decoder.dropout=0.3";
  auto straight = run("train " + cfg);
  INFO(straight.output);
  REQUIRE(straight.status == 0);
  const auto resumed_dir = (dir / "resumed").string();
  auto first = run("train " + cfg + " --set train.max_steps=9 --set train.save_dir=" + resumed_dir);
  INFO(first.output);
  REQUIRE(first.status == 0);
  auto second = run("train " + cfg + " --resume --set train.save_dir=" + resumed_dir);
  INFO(second.output);
  REQUIRE(second.status == 0);
  REQUIRE(second.output.find("resumed from") != std::string::npos);
  check_same_tensors(dir / "straight" / "ckpt.20.pt", dir / "resumed" / "ckpt.20.pt");
  fs::remove_all(dir);
}

TEST_CASE("distributed: a killed rank stops the others with an error, not a hang", "[distributed][e2e]") {
  if (!attnmt::distributed_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
    return;
  }
  auto dir = temp_dir("dist_kill");
  write(dir / "c.yaml", tiny_config(dir / "m", 1000000) + "distributed: {timeout: 20}\n");
  const std::string bin = ATTNMT_BINARY;
  const std::string cfg = (dir / "c.yaml").string();
  const std::string log = (dir / "log").string();
  const std::string wait_for_training =
      "for i in $(seq 300); do grep -q \"step 100 \" " + log + " && break; sleep 0.1; done; ";
  const std::string report = "t0=$(date +%s); wait $L; rc=$?; echo \"rc=$rc seconds=$(( $(date +%s) - t0 ))\"";

  SECTION("--nproc: the launcher names the killed rank, the survivor fails its collective") {
    const auto out = shell(bin + " train " + cfg + " --nproc 2 --set train.report_every=50 > " + log +
                           " 2>&1 & L=$!; " + wait_for_training +
                           "P=$(sed -n \"s/.*rank 1 of 2: pid \\([0-9]*\\).*/\\1/p\" " + log + "); kill -9 $P; " +
                           report);
    const auto text = attnmt::read_file(log);
    INFO(out << text);
    CHECK(out.find("rc=1 ") != std::string::npos);
    CHECK(text.find("attnmt: error: distributed: rank 1 of 2 died (signal 9); not restarted (--max-restarts 0)") != std::string::npos);
    CHECK(text.find("distributed: rank 0 of 2") != std::string::npos);
  }
  SECTION("--distributed (torchrun's variables): killing rank 0, the store's host, stops rank 1") {
    const auto out = shell("export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + $$ % 20000)) WORLD_SIZE=2; " +
                           std::string("RANK=0 ") + bin + " train " + cfg +
                           " --distributed --set train.report_every=50 > " + log + " 2>&1 & P0=$!; " +
                           "RANK=1 " + bin + " train " + cfg + " --distributed > " + log + ".1 2>&1 & L=$!; " +
                           wait_for_training + "kill -9 $P0; " + report);
    const auto text = attnmt::read_file(log + ".1");
    INFO(out << text);
    CHECK(out.find("rc=1 ") != std::string::npos);
    CHECK(text.find("attnmt: error: distributed: rank 1 of 2") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("distributed: SIGINT to the launcher saves a checkpoint and every rank exits 0", "[distributed][e2e]") {
  if (!attnmt::distributed_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without c10d/Gloo (libgloo-dev): skipped");
    return;
  }
  auto dir = temp_dir("dist_sigint");
  write(dir / "c.yaml", tiny_config(dir / "m", 1000000));
  const std::string log = (dir / "log").string();
  const auto out = shell(std::string(ATTNMT_BINARY) + " train " + (dir / "c.yaml").string() +
                         " --nproc 2 --set train.report_every=50 > " + log + " 2>&1 & L=$!; " +
                         "for i in $(seq 300); do grep -q \"step 100 \" " + log +
                         " && break; sleep 0.1; done; kill -INT $L; wait $L; echo rc=$?");
  const auto text = attnmt::read_file(log);
  INFO(out << text);
  CHECK(out.find("rc=0") != std::string::npos);
  CHECK(text.find("SIGINT received: saved step") != std::string::npos);
  CHECK(!attnmt::list_step_checkpoints((dir / "m").string()).empty());
  fs::remove_all(dir);
}

TEST_CASE("distributed: bad invocations are one-line errors", "[distributed][e2e]") {
  auto dir = temp_dir("dist_errors");
  write(dir / "c.yaml", tiny_config(dir / "m", 10));
  const std::string cfg = (dir / "c.yaml").string();
  SECTION("--distributed without torchrun's variables") {
    auto r = run("train " + cfg + " --distributed", "env -u RANK -u WORLD_SIZE");
    CHECK(r.status == 2);
    CHECK(r.output.find("attnmt: error: --distributed: environment variable RANK is not set") != std::string::npos);
  }
  SECTION("RANK not below WORLD_SIZE") {
    auto r = run("train " + cfg + " --distributed", "RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29555");
    CHECK(r.status == 2);
    CHECK(r.output.find("RANK=2 is not below WORLD_SIZE=2") != std::string::npos);
  }
  SECTION("--nproc with --distributed") {
    auto r = run("train " + cfg + " --nproc 2 --distributed");
    CHECK(r.status == 2);
  }
  fs::remove_all(dir);
}
