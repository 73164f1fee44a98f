// Training options through the program: train.ema_decay (averaging only watches training: the
// trained weights are the plain run's, bit for bit; validation and best.pt use the averages;
// --resume goes across the setting either way) and model.share_embeddings (a model trained so is
// one file that translates; two vocabularies are refused).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "checkpoints.h"
#include "program.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt;
using namespace attnmt::test;

namespace {

// A save dir's validations (log.jsonl), by step.
std::map<int64_t, nlohmann::json> validations(const fs::path& save_dir) {
  std::map<int64_t, nlohmann::json> out;
  for (const auto& line : attnmt::read_lines((save_dir / "log.jsonl").string())) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("type", "") == "valid") out[j.at("step").get<int64_t>()] = j;
  }
  return out;
}

}  // namespace

TEST_CASE("train.ema_decay only watches training, validation and best.pt use the averages, resume crosses the setting",
          "[ema][e2e]") {
  auto dir = temp_dir("ema");
  write(dir / "c.yaml", tiny_config(dir / "plain", 21));
  // dropout on (the averages must not draw from the RNG), validations every 7 updates
  const std::string cfg = (dir / "c.yaml").string() +
                          " --set train.batch_size=8 --set train.valid_every=7 --set train.valid_metric=ppl"
                          " --set model.encoder.dropout=0.3 --set model.decoder.dropout=0.3";
  const std::string ema = " --set train.ema_decay=0.8";
  auto plain = run("train " + cfg);
  INFO(plain.output);
  REQUIRE(plain.status == 0);
  auto averaged = run("train " + cfg + ema + " --set train.save_dir=" + (dir / "ema").string());
  INFO(averaged.output);
  REQUIRE(averaged.status == 0);

  const auto plain_weights = checkpoint_tensors(dir / "plain" / "ckpt.21.pt");
  CHECK(trained_tensors(dir / "plain" / "ckpt.21.pt").empty());
  auto trained = trained_tensors(dir / "ema" / "ckpt.21.pt");
  REQUIRE(trained.size() > 10);
  for (const auto& [name, t] : trained) {
    INFO(name);
    CHECK(torch::equal(t, plain_weights.at(name)));  // the same training, bit for bit
  }
  // the model part holds other weights (the averages), validated: other perplexities
  const auto averages = checkpoint_tensors(dir / "ema" / "ckpt.21.pt");
  int differ = 0;
  for (const auto& [name, t] : trained) differ += torch::equal(t, averages.at(name)) ? 0 : 1;
  CHECK(differ > 0);
  const auto averaged_validations = validations(dir / "ema");
  const auto plain_validations = validations(dir / "plain");
  REQUIRE(averaged_validations.count(21));
  REQUIRE(plain_validations.count(21));
  CHECK(averaged_validations.at(21).at("valid_ppl").get<double>() !=
        plain_validations.at(21).at("valid_ppl").get<double>());
  // best.pt: the averages of the last validation that gave a new best
  int64_t best = -1;
  for (const auto& [step, v] : averaged_validations) {
    if (v.value("best", false)) best = step;
  }
  REQUIRE(best > 0);
  INFO("best at step " << best);
  const auto best_model = checkpoint_tensors(dir / "ema" / "best.pt");
  const auto at_best = checkpoint_tensors(dir / "ema" / ("ckpt." + std::to_string(best) + ".pt"));
  for (const auto& [name, t] : at_best) CHECK(torch::equal(t, best_model.at(name)));

  SECTION("a run with averages resumed without them goes on from its trained weights") {
    const std::string save = " --set train.save_dir=" + (dir / "off").string();
    REQUIRE(run("train " + cfg + ema + save + " --set train.max_steps=14").status == 0);
    auto resumed = run("train " + cfg + save + " --resume");
    INFO(resumed.output);
    REQUIRE(resumed.status == 0);
    CHECK(resumed.output.find("training goes on from its trained weights") != std::string::npos);
    check_same_tensors(dir / "plain" / "ckpt.21.pt", dir / "off" / "ckpt.21.pt");
  }
  SECTION("a run without averages resumed with them starts averaging from its weights") {
    const std::string save = " --set train.save_dir=" + (dir / "on").string();
    REQUIRE(run("train " + cfg + save + " --set train.max_steps=14").status == 0);
    auto resumed = run("train " + cfg + ema + save + " --resume");
    INFO(resumed.output);
    REQUIRE(resumed.status == 0);
    CHECK(resumed.output.find("the averages start from its weights") != std::string::npos);
    auto on = trained_tensors(dir / "on" / "ckpt.21.pt");
    REQUIRE(on.size() == trained.size());
    for (const auto& [name, t] : on) CHECK(torch::equal(t, plain_weights.at(name)));
  }
  fs::remove_all(dir);
}

TEST_CASE("shared embeddings: trained, saved as one file and translated, refused without tokenizer.shared",
          "[e2e][shared-embeddings]") {
  auto dir = temp_dir("shared_embeddings");
  write(dir / "config.yaml", tiny_config(dir / "model", 40));
  auto train = run("train " + (dir / "config.yaml").string() +
                   " --set model.share_embeddings=true model.tie_embeddings=true");
  INFO(train.output);
  REQUIRE(train.status == 0);
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  auto translate = run("translate --model " + (dir / "model" / "best.pt").string() + " --input " + src +
                       " --output " + (dir / "out.en").string() + " --threads 1");
  INFO(translate.output);
  REQUIRE(translate.status == 0);
  CHECK(attnmt::read_lines(src).size() == attnmt::read_lines((dir / "out.en").string()).size());

  auto refused = run("train " + (dir / "config.yaml").string() +
                     " --set model.share_embeddings=true tokenizer.shared=false train.save_dir=" +
                     (dir / "other").string());
  CHECK(refused.status == 2);
  CHECK_THAT(refused.output, Catch::Contains("model.share_embeddings") && Catch::Contains("tokenizer.shared"));
  fs::remove_all(dir);
}
