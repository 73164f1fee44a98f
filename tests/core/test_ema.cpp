// train.ema_decay (train/ema.h): the averages against the formula computed by hand in double, and
// the exchange with the model (tests/e2e/test_train_features.cpp trains with it).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "model/seq2seq.h"
#include "train/ema.h"
#include "small_models.h"

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
