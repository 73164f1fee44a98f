// train.ema_decay (train/ema.h): the averages against the formula computed by hand in double, the
// exchange with the model, and through the program: averaging only watches training (the trained
// weights are the plain run's, bit for bit), validation and best.pt use the averages, and --resume
// goes across the setting either way.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoints.h"
#include "program.h"
#include "model/seq2seq.h"
#include "train/ema.h"
#include "util/text_io.h"
#include "small_models.h"

namespace fs = std::filesystem;
using namespace attnmt;
using namespace attnmt::test;

namespace {

Seq2Seq small_model() {
  torch::manual_seed(7);
  VocabSizes vocab;
  vocab.src = 13;
  vocab.tgt = 11;
  return Seq2Seq(test::sized_config(8, 6, 10), vocab);
}

std::vector<torch::Tensor> doubles(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> out;
  for (const auto& t : ts) out.push_back(t.detach().to(torch::kFloat64));
  return out;
}

void check_close(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& expected) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("parameter " << i);
    CHECK(torch::allclose(got[i].to(torch::kFloat64), expected[i], /*rtol=*/1e-6, /*atol=*/1e-7));
  }
}

void check_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("parameter " << i);
    CHECK(torch::equal(a[i], b[i]));
  }
}

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> out;
  for (const auto& t : ts) out.push_back(t.detach().clone());
  return out;
}

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

TEST_CASE("train.ema_decay: the averages are a <- d a + (1 - d) p, d = min(decay, (1 + t) / (10 + t))", "[ema]") {
  auto model = small_model();
  const auto parameters = model->parameters();
  ParameterAverage average(model, /*decay=*/0.3);
  CHECK(average.decay_at(1) == Approx(2.0 / 11));  // the warm-up's term is the smaller one
  CHECK(average.decay_at(2) == Approx(3.0 / 12));
  CHECK(average.decay_at(3) == Approx(0.3));       // 4 / 13 > 0.3
  CHECK(average.decay_at(1000) == Approx(0.3));

  auto expected = doubles(parameters);  // the averages start as the parameters
  torch::manual_seed(11);
  for (int64_t t = 1; t <= 6; ++t) {
    {
      torch::NoGradGuard no_grad;
      for (auto& p : parameters) p.add_(torch::randn_like(p));  // an "update"
    }
    average.update(t);
    const double d = std::min(0.3, (1.0 + static_cast<double>(t)) / (10.0 + static_cast<double>(t)));
    const auto now = doubles(parameters);
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = d * expected[i] + (1 - d) * now[i];
    INFO("after update " << t);
    check_close(average.outside(), expected);
  }

  // exchange: the model holds the averages, the trained weights wait outside; twice is the identity
  const auto trained = clones(parameters);
  const auto averages = clones(average.outside());
  {
    AveragesInModel in_model(&average);
    check_equal(parameters, averages);
    REQUIRE(in_model.trained_weights() != nullptr);
    check_equal(*in_model.trained_weights(), trained);
  }
  check_equal(parameters, trained);
  check_equal(average.outside(), averages);
  AveragesInModel none(nullptr);  // no averaging: nothing moves
  CHECK(none.trained_weights() == nullptr);
  check_equal(parameters, trained);

  average.restart();
  check_equal(average.outside(), trained);
}

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
