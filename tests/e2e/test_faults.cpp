// Faults lose nothing: exact --resume, SIGTERM/SIGINT, the save-dir lock, diverging training,
// a save that cannot be written. Through the real program (scripts/kill_test.sh does the
// random SIGKILLs).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "checkpoints.h"
#include "program.h"
#include "io/model_file.h"
#include "util/error.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

bool all_finite(const fs::path& checkpoint) {
  auto m = attnmt::load_model(checkpoint.parent_path().string(), checkpoint.string(), "cpu");
  for (const auto& p : m.model->parameters()) {
    if (!torch::isfinite(p).all().item<bool>()) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("resume is exact: N steps, stop, --resume to M == M steps straight", "[reliability][e2e]") {
  auto dir = temp_dir("exact_resume");
  // dropout on (the RNG must be restored), Adam (its moments too), validation every 7 updates;
  // 30 pairs in batches of 8 = 4 batches per epoch, so the stop falls inside an epoch.
  // Also with the step-numbered schedule (warm-up, inverse square root), decoupled weight decay and
  // word dropout (its masks from the restored RNG). And with BPE-dropout (its draws seeded by the
  // update, so the resumed run segments each pair as the straight run did). And with averaged
  // weights (the averages and the trained weights both restored).
  const std::string extra = GENERATE(std::string(""),
                                     std::string(" --set train.lr_schedule=inverse_sqrt --set train.warmup_steps=10"
                                                 " --set train.weight_decay=0.01 --set model.encoder.word_dropout=0.2"
                                                 " --set model.decoder.word_dropout=0.2"),
                                     std::string(" --set data.src_bpe_dropout=0.2 --set data.tgt_bpe_dropout=0.2"),
                                     std::string(" --set train.ema_decay=0.8"));
  INFO("settings:" << extra);
  write(dir / "c.yaml", tiny_config(dir / "straight", 21));
  const std::string cfg = (dir / "c.yaml").string() +
                          " --set train.batch_size=8 --set train.valid_every=7"
                          " --set model.encoder.dropout=0.3 --set model.decoder.dropout=0.3" + extra;
  auto straight = run("train " + cfg);
  INFO(straight.output);
  REQUIRE(straight.status == 0);
  if (extra.find("bpe_dropout") != std::string::npos) CHECK(straight.output.find("BPE-dropout: source 0.2") != std::string::npos);
  auto first = run("train " + cfg + " --set train.max_steps=14 --set train.save_dir=" + (dir / "resumed").string());
  REQUIRE(first.status == 0);
  auto second = run("train " + cfg + " --resume --set train.save_dir=" + (dir / "resumed").string());
  INFO(second.output);
  REQUIRE(second.status == 0);
  REQUIRE(second.output.find("resumed from") != std::string::npos);

  // After 7 more updates, equal parameters need equal Adam moments too.
  check_same_tensors(dir / "straight" / "ckpt.21.pt", dir / "resumed" / "ckpt.21.pt");
  fs::remove_all(dir);
}

TEST_CASE("resume is exact with weighted corpora and batch windows, and maps the token cache", "[reliability][e2e]") {
  auto dir = temp_dir("exact_resume_corpora");
  // A second corpus (10 of the 30 pairs) with twice the weight; batches sorted in windows of 12.
  const std::string data = ATTNMT_TEST_DATA_DIR;
  const auto de = attnmt::read_lines(data + "/tiny.de"), en = attnmt::read_lines(data + "/tiny.en");
  std::string small_de, small_en;
  for (size_t i = 0; i < 10; ++i) {
    small_de += de[i] + "\n";
    small_en += en[i] + "\n";
  }
  write(dir / "small.de", small_de);
  write(dir / "small.en", small_en);
  std::string config = tiny_config(dir / "straight", 21);
  const std::string one = "  train: {src: " + data + "/tiny.de, tgt: " + data + "/tiny.en}\n";
  REQUIRE(config.find(one) != std::string::npos);
  config.replace(config.find(one), one.size(),
                 "  train:\n    - {src: " + data + "/tiny.de, tgt: " + data + "/tiny.en}\n    - {src: " +
                     (dir / "small.de").string() + ", tgt: " + (dir / "small.en").string() +
                     ", weight: 2}\n  batch_window: 12\n");
  write(dir / "c.yaml", config);
  const std::string cfg = (dir / "c.yaml").string() +
                          " --set train.batch_size=8 --set model.encoder.dropout=0.3 --set model.decoder.dropout=0.3";
  auto straight = run("train " + cfg);
  INFO(straight.output);
  REQUIRE(straight.status == 0);
  // 40 pairs an epoch: a third from the 30-pair corpus, two thirds from the 10-pair one.
  CHECK(straight.output.find("weight 1 -> 13 pairs per epoch") != std::string::npos);
  CHECK(straight.output.find("weight 2 -> 27 pairs per epoch (2.70 passes") != std::string::npos);
  CHECK(straight.output.find("tokenizing") != std::string::npos);
  auto first = run("train " + cfg + " --set train.max_steps=14 --set train.save_dir=" + (dir / "resumed").string());
  REQUIRE(first.status == 0);
  auto second = run("train " + cfg + " --resume --set train.save_dir=" + (dir / "resumed").string());
  INFO(second.output);
  REQUIRE(second.status == 0);
  // The resumed run reads no text: both corpora come from their caches.
  CHECK(second.output.find("tokenizing") == std::string::npos);
  CHECK(second.output.find("counted") == std::string::npos);
  size_t mapped = 0;
  for (size_t at = 0; (at = second.output.find("from the token cache", at)) != std::string::npos; ++at) ++mapped;
  CHECK(mapped == 2);
  check_same_tensors(dir / "straight" / "ckpt.21.pt", dir / "resumed" / "ckpt.21.pt");
  fs::remove_all(dir);
}

TEST_CASE("a token cache that cannot be written (a full disk): one line naming it, no partial file",
          "[reliability][e2e]") {
  auto dir = temp_dir("cache_full");
  write(dir / "c.yaml", tiny_config(dir / "model", 5));
  // A file-size limit makes the cache's write fail as a full disk would (EFBIG instead of ENOSPC);
  // the tokenizer model (400 pieces) fits under it, Multi30k's 29,000 pairs as ids do not.
  const std::string data = std::string(ATTNMT_SOURCE_DIR) + "/data/multi30k/";
  const auto out = shell("ulimit -f 300; trap \"\" XFSZ; " + std::string(ATTNMT_BINARY) + " train " +
                         (dir / "c.yaml").string() + " --set data.train.src=" + data + "train.de.gz --set data.train.tgt=" +
                         data + "train.en.gz --set data.cache_dir=" + (dir / "cache").string() + "; echo exit=$?");
  INFO(out);
  CHECK(out.find("exit=2") != std::string::npos);
  CHECK(out.find("attnmt: error: cannot write '" + (dir / "cache").string() + "/train.de.gz.train.en.gz.") != std::string::npos);
  CHECK(out.find("File too large (the token cache: set data.cache_dir to a place with room)") != std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir / "cache")) CHECK(entry.path().extension() == ".lock");
  fs::remove_all(dir);
}

TEST_CASE("resume is exact from a stop between validations, with the plateau schedule on", "[reliability][e2e]") {
  // The end-of-run validation at a stop between scheduled ones (here at 35, validations every 10)
  // must not count toward the plateau schedule: with lr_patience 1 it would halve the learning rate
  // there, and the resumed run would go on with another one than the straight run. bf16 with
  // train.allow_slow_bf16: the same numerics on every CPU (emulated where it has no bf16 kernel).
  for (const std::string variant : {"fp32, 1 thread", "bf16, 2 threads"}) {
    DYNAMIC_SECTION(variant) {
      const bool bf16 = variant.rfind("bf16", 0) == 0;
      auto dir = temp_dir("exact_resume_plateau");
      write(dir / "c.yaml", tiny_config(dir / "straight", 60));
      // Validated on the pairs the other way round: its perplexity rises as training fits the
      // training pairs, so the plateau schedule halves the learning rate.
      const std::string data = ATTNMT_TEST_DATA_DIR;
      const std::string cfg = (dir / "c.yaml").string() +
                              " --set train.batch_size=8 --set train.valid_every=10 --set train.lr_schedule=plateau"
                              " --set train.lr_patience=1 --set train.valid_metric=ppl --set train.learning_rate=0.03"
                              " --set data.valid.src=" + data + "/tiny.en --set data.valid.tgt=" + data + "/tiny.de" +
                              " --set model.encoder.dropout=0.3 --set model.decoder.dropout=0.3" +
                              std::string(bf16 ? " --set train.precision=bf16 --set train.allow_slow_bf16=true --set threads=2" : "");
      auto straight = run("train " + cfg);
      INFO(straight.output);
      REQUIRE(straight.status == 0);
      const auto resumed_dir = (dir / "resumed").string();
      auto first = run("train " + cfg + " --set train.max_steps=35 --set train.save_dir=" + resumed_dir);
      INFO(first.output);
      REQUIRE(first.status == 0);
      REQUIRE(first.output.find("(end of run)") != std::string::npos);
      auto second = run("train " + cfg + " --resume --set train.save_dir=" + resumed_dir);
      INFO(second.output);
      REQUIRE(second.status == 0);

      const attnmt::CheckpointFile a((dir / "straight" / "ckpt.60.pt").string());
      const attnmt::CheckpointFile b((dir / "resumed" / "ckpt.60.pt").string());
      // The schedule decayed somewhere (else this test would not see a difference).
      CHECK(a.header().progress.learning_rate < 0.03);
      CHECK(a.header().progress.learning_rate == b.header().progress.learning_rate);
      CHECK(a.header().progress.lr_bad_validations == b.header().progress.lr_bad_validations);
      CHECK(a.header().progress.best_score == b.header().progress.best_score);
      check_same_tensors(dir / "straight" / "ckpt.60.pt", dir / "resumed" / "ckpt.60.pt");
      fs::remove_all(dir);
    }
  }
}

TEST_CASE("resuming a finished run changes nothing, a raised limit continues it", "[reliability][e2e]") {
  auto dir = temp_dir("resume_finished");
  write(dir / "c.yaml", tiny_config(dir / "model", 12));
  const std::string cfg = (dir / "c.yaml").string() + " --set train.valid_every=5 --set train.lr_patience=1";
  REQUIRE(run("train " + cfg).status == 0);
  auto snapshot = [&] {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::directory_iterator(dir / "model")) files[e.path().filename().string()] = attnmt::read_file(e.path().string());
    return files;
  };
  const auto before = snapshot();
  for (int i = 0; i < 2; ++i) {
    auto again = run("train " + cfg + " --resume");
    INFO(again.output);
    CHECK(again.status == 0);
    CHECK_THAT(again.output, Catch::Contains("is finished") && Catch::Contains("train.max_steps reached at step 12"));
    CHECK(snapshot() == before);
  }
  auto more = run("train " + cfg + " --resume --set train.max_steps=15");
  INFO(more.output);
  CHECK(more.status == 0);
  CHECK(more.output.find("resumed from") != std::string::npos);
  CHECK(fs::exists(dir / "model" / "ckpt.15.pt"));
  fs::remove_all(dir);
}

TEST_CASE("SIGTERM and SIGINT save a checkpoint and exit 0 within seconds", "[reliability][e2e]") {
  const char* signal = GENERATE("TERM", "INT");
  auto dir = temp_dir(std::string("signal_") + signal);
  write(dir / "c.yaml", tiny_config(dir / "m", 1000000));
  const std::string log = (dir / "log").string();
  // bash gives background jobs SIGINT ignored; a training takes it all the same (util/signals.h)
  const auto out = shell(std::string(ATTNMT_BINARY) + " train " + (dir / "c.yaml").string() +
                         " --set train.report_every=20 > " + log + " 2>&1 & L=$!; " +
                         "for i in $(seq 300); do grep -q \"step 40 \" " + log + " && break; sleep 0.1; done; " +
                         "t0=$(date +%s%N); kill -" + signal + " $L; wait $L; rc=$?; " +
                         "echo \"rc=$rc ms=$(( ($(date +%s%N) - t0) / 1000000 ))\"");
  const auto text = attnmt::read_file(log);
  INFO(out << text);
  CHECK(out.find("rc=0 ") != std::string::npos);
  const auto ms = std::stol(out.substr(out.find("ms=") + 3));
  CHECK(ms < 5000);
  CHECK(text.find(std::string("SIG") + signal + " received: saved step") != std::string::npos);
  const auto checkpoints = attnmt::list_step_checkpoints((dir / "m").string());
  REQUIRE(checkpoints.size() == 1);
  // and training goes on from it
  const auto step = std::stol(fs::path(checkpoints.front()).stem().extension().string().substr(1));
  auto resumed = run("train " + (dir / "c.yaml").string() + " --resume --set train.max_steps=" + std::to_string(step + 5));
  INFO(resumed.output);
  CHECK(resumed.status == 0);
  fs::remove_all(dir);
}

TEST_CASE("SIGTERM in the middle of an epoch, then --resume: the straight run, bit for bit", "[reliability][e2e]") {
  // Batches of 2 pairs: 15 updates an epoch, validations every 25, dropout on, the plateau
  // schedule on; the signal lands wherever the training is after step 40.
  // Also with the cosine schedule (its length is max_steps, so a run is stopped by a signal, not
  // by a lower max_steps), warm-up, decoupled weight decay, word dropout and averaged weights.
  auto dir = temp_dir("signal_exact");
  const std::string schedule = GENERATE(std::string(" --set train.lr_schedule=plateau --set train.lr_patience=1"),
                                        std::string(" --set train.lr_schedule=cosine --set train.warmup_steps=20"
                                                    " --set train.weight_decay=0.01 --set model.decoder.word_dropout=0.2"
                                                    " --set train.ema_decay=0.9"));
  INFO("settings:" << schedule);
  write(dir / "c.yaml", tiny_config(dir / "straight", 150));
  const std::string cfg = (dir / "c.yaml").string() +
                          " --set train.batch_size=2 --set train.valid_every=25 --set train.report_every=20" +
                          schedule + " --set model.encoder.dropout=0.3 --set model.decoder.dropout=0.3";
  auto straight = run("train " + cfg);
  INFO(straight.output);
  REQUIRE(straight.status == 0);
  const auto stopped_dir = dir / "stopped";
  const std::string log = (dir / "log").string();
  const auto out = shell(std::string(ATTNMT_BINARY) + " train " + cfg + " --set train.save_dir=" +
                         stopped_dir.string() + " > " + log + " 2>&1 & L=$!; " +
                         "for i in $(seq 300); do grep -q \"step 40 \" " + log + " && break; sleep 0.05; done; " +
                         "kill -TERM $L; wait $L; echo rc=$?");
  const auto text = attnmt::read_file(log);
  INFO(out << text);
  REQUIRE(out.find("rc=0") != std::string::npos);
  REQUIRE(text.find("SIGTERM received: saved step") != std::string::npos);
  const auto saved = attnmt::list_step_checkpoints(stopped_dir.string());  // newest first
  REQUIRE(!saved.empty());
  const attnmt::CheckpointFile stop(saved.front());
  const auto& at = stop.header().progress;
  INFO("stopped at step " << at.step << ", batch " << at.batch_in_epoch << " of epoch " << at.epoch + 1);
  REQUIRE(at.step < 150);
  // Where the signal landed (almost always inside an epoch and between validations: 14 of 15
  // updates end inside one) is in the log above.
  auto resumed = run("train " + cfg + " --resume --set train.save_dir=" + stopped_dir.string());
  INFO(resumed.output);
  REQUIRE(resumed.status == 0);
  REQUIRE(resumed.output.find("resumed from") != std::string::npos);
  const attnmt::CheckpointFile a((dir / "straight" / "ckpt.150.pt").string());
  const attnmt::CheckpointFile b((stopped_dir / "ckpt.150.pt").string());
  CHECK(a.header().progress.learning_rate == b.header().progress.learning_rate);
  CHECK(a.header().progress.best_score == b.header().progress.best_score);
  check_same_tensors(dir / "straight" / "ckpt.150.pt", stopped_dir / "ckpt.150.pt");
  fs::remove_all(dir);
}

TEST_CASE("a training process's threads have SIGINT and SIGTERM blocked, but the one in sigwait",
          "[reliability][e2e]") {
  auto dir = temp_dir("sigblk");
  write(dir / "c.yaml", tiny_config(dir / "m", 1000000));
  const std::string log = (dir / "log").string();
  const auto out = shell(std::string(ATTNMT_BINARY) + " train " + (dir / "c.yaml").string() +
                         " --set train.report_every=20 --set threads=2 --set train.replicas=1 > " + log + " 2>&1 & L=$!; " +
                         "for i in $(seq 300); do grep -q \"step 20 \" " + log + " && break; sleep 0.1; done; " +
                         "for t in /proc/$L/task/*; do grep SigBlk: $t/status 2>/dev/null; done; kill -TERM $L; wait $L");
  INFO(out << attnmt::read_file(log));
  int blocked = 0, unblocked = 0;  // sigwait unblocks the signals it waits for while it waits
  for (size_t at = out.find("SigBlk:"); at != std::string::npos; at = out.find("SigBlk:", at + 1)) {
    const auto mask = std::stoull(out.substr(at + 7), nullptr, 16);
    const bool both = ((mask >> (SIGINT - 1)) & 1) && ((mask >> (SIGTERM - 1)) & 1);
    ++(both ? blocked : unblocked);
  }
  CHECK(unblocked == 1);
  CHECK(blocked >= 2);  // the main thread and OpenMP's second thread at least
  fs::remove_all(dir);
}

TEST_CASE("a second training on the same save dir is refused, naming the first's pid", "[reliability][e2e]") {
  auto dir = temp_dir("lock");
  write(dir / "c.yaml", tiny_config(dir / "m", 1000000));
  const std::string log = (dir / "log").string();
  const auto out = shell(std::string(ATTNMT_BINARY) + " train " + (dir / "c.yaml").string() +
                         " --set train.report_every=20 > " + log + " 2>&1 & L=$!; " +
                         "for i in $(seq 300); do grep -q \"step 20 \" " + log + " && break; sleep 0.1; done; " +
                         ATTNMT_BINARY + " train " + (dir / "c.yaml").string() + " --resume; echo \"rc=$? first=$L\"; " +
                         "kill -TERM $L; wait $L");
  INFO(out);
  CHECK(out.find("rc=2 ") != std::string::npos);
  const auto first = out.substr(out.find("first=") + 6);
  CHECK(out.find("is in use by another attnmt train (pid " + first.substr(0, first.find('\n')) + ")") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("diverging training: non-finite updates are skipped, counted, then stop, no NaN checkpoint",
          "[reliability][e2e]") {
  auto dir = temp_dir("diverge");
  write(dir / "c.yaml", tiny_config(dir / "m", 1000));
  // SGD at 1e38 without clipping: the parameters overflow after the first update and every loss
  // after is Inf/NaN. Validation (and a checkpoint) every update.
  auto r = run("train " + (dir / "c.yaml").string() +
               " --set train.optimizer=sgd --set train.learning_rate=1e38 --set train.clip_norm=0"
               " --set train.valid_every=1 --set train.valid_metric=ppl");
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("update skipped (10 in a row)") != std::string::npos);
  CHECK(r.output.find("attnmt: error: training diverged: 10 non-finite losses or gradients in a row") !=
        std::string::npos);
  const auto checkpoints = attnmt::list_step_checkpoints((dir / "m").string());
  REQUIRE(!checkpoints.empty());
  for (const auto& c : checkpoints) {
    INFO(c);
    CHECK(all_finite(c));
  }
  fs::remove_all(dir);
}

TEST_CASE("a checkpoint that cannot be written: clear error, the previous one intact", "[reliability][e2e]") {
  auto dir = temp_dir("full_disk");
  write(dir / "c.yaml", tiny_config(dir / "m", 4));
  const std::string cfg = (dir / "c.yaml").string();
  auto first = run("train " + cfg);
  REQUIRE(first.status == 0);
  const auto before = attnmt::read_file((dir / "m" / "ckpt.4.pt").string());
  // A file-size limit below a checkpoint's size stands in for a full disk: write() fails with
  // EFBIG (SIGXFSZ ignored) exactly where ENOSPC would.
  const auto limit_kb = before.size() / 1024 / 2;
  const auto out = shell("trap \"\" XFSZ; ulimit -f " + std::to_string(limit_kb) + "; " + ATTNMT_BINARY + " train " +
                         cfg + " --resume --set train.max_steps=8; echo rc=$?");
  INFO(out);
  CHECK(out.find("rc=1") != std::string::npos);
  CHECK(out.find("attnmt: error: cannot write '") != std::string::npos);
  CHECK(out.find("File too large") != std::string::npos);
  // the previous checkpoint is untouched and still resumes
  CHECK(attnmt::read_file((dir / "m" / "ckpt.4.pt").string()) == before);
  auto again = run("train " + cfg + " --resume --set train.max_steps=8");
  INFO(again.output);
  CHECK(again.status == 0);
  CHECK(fs::exists(dir / "m" / "ckpt.8.pt"));
  fs::remove_all(dir);
}

TEST_CASE("best.pt is for decoding: the model without the optimizer, and resuming from it is refused",
          "[reliability][e2e]") {
  auto dir = temp_dir("best_model_only");
  write(dir / "c.yaml", tiny_config(dir / "m", 4));
  auto r = run("train " + (dir / "c.yaml").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto best = (dir / "m" / "best.pt").string();
  const auto step = (dir / "m" / "ckpt.4.pt").string();
  attnmt::CheckpointFile best_file(best), step_file(step);
  CHECK(best_file.header().progress.step == step_file.header().progress.step);
  // Adam keeps two moments per parameter: a step checkpoint is about three models, best.pt one
  CHECK(fs::file_size(step) > 2.5 * fs::file_size(best));
  auto model = attnmt::Seq2Seq(best_file.header().config.model, best_file.header().vocab);
  best_file.load_state(model, nullptr, /*restore_rng=*/false);
  const auto stepped = checkpoint_tensors(dir / "m" / "ckpt.4.pt");
  for (const auto& p : model->named_parameters()) {
    INFO(p.key());
    CHECK(torch::equal(p.value(), stepped.at(p.key())));
  }
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(0.01));
  try {
    best_file.load_state(model, &adam, /*restore_rng=*/false);
    FAIL("loading an optimizer from best.pt did not fail");
  } catch (const attnmt::InputError& e) {
    CHECK(std::string(e.what()).find("has no optimizer state") != std::string::npos);
  }
  fs::remove_all(dir);
}

// A file listing of `dir` (relative paths, sorted), empty when it does not exist.
static std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("train --resume with no checkpoint is refused before any work, the save dir left as it was",
          "[reliability][e2e]") {
  auto dir = temp_dir("resume_nothing");
  // a save dir that does not exist: still does not, after
  write(dir / "t.yaml", tiny_config(dir / "absent", 20));
  auto r = run("train " + (dir / "t.yaml").string() + " --resume");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Matchers::Contains("--resume: no checkpoint in train.save_dir") &&
                           Catch::Matchers::Contains("nothing was done"));
  CHECK(!fs::exists(dir / "absent"));
  // a save dir with other files (no checkpoint): the same files, and nothing else, after
  fs::create_directories(dir / "other");
  write(dir / "other" / "notes.txt", "kept\n");
  write(dir / "t2.yaml", tiny_config(dir / "other", 20));
  const auto before = listing(dir / "other");
  r = run("train " + (dir / "t2.yaml").string() + " --resume");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Matchers::Contains("no checkpoint"));
  CHECK(listing(dir / "other") == before);  // no spm.model, no cache/, no train.log
  // only damaged checkpoints: refused the same way
  write(dir / "other" / "ckpt.10.pt", "not a checkpoint");
  r = run("train " + (dir / "t2.yaml").string() + " --resume");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Matchers::Contains("no loadable checkpoint"));
  CHECK(!fs::exists(dir / "other" / "spm.model"));
  CHECK(!fs::exists(dir / "other" / "cache"));
  fs::remove_all(dir);
}
