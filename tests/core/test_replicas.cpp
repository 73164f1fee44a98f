// train.replicas: replicas in threads, each on a slice of the batch, sum to the gradient of one
// model on the whole batch; the replicas' parameters are the model's own storage; the random
// streams make dropout masks a function of (seed, rank, replica, step) alone.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <thread>

#include "runtime/random.h"
#include "model/seq2seq.h"
#include "model/loss.h"
#include "train/replicas.h"

using namespace attnmt;

namespace {

ModelConfig small_config() {
  ModelConfig config;
  config.embedding_size = 8;
  config.encoder.hidden_size = 6;
  config.decoder.hidden_size = 10;
  config.encoder.layers = config.decoder.layers = 2;
  config.encoder.dropout = config.decoder.dropout = 0.0;  // the same function in every replica
  return config;
}

// Sum of the label-smoothed loss of rows [begin, end) of the batch.
torch::Tensor loss_sum(Seq2Seq& model, const torch::Tensor& src, const torch::Tensor& len, const torch::Tensor& tin,
                       const torch::Tensor& tout, int64_t begin, int64_t end) {
  auto hidden = model->hidden_states(src.slice(0, begin, end), len.slice(0, begin, end), tin.slice(0, begin, end));
  return output_layer_loss(hidden, model->output_weight(), model->output_bias(), tout.slice(0, begin, end), 0, 0.1)
      .loss;
}

}  // namespace

TEST_CASE("two replicas in threads give one model's gradient on the whole batch", "[replicas]") {
  torch::manual_seed(11);
  const auto config = small_config();
  VocabSizes vocab;
  vocab.src = 20;
  vocab.tgt = 18;
  Seq2Seq model(config, vocab);
  model->train();
  auto src = torch::randint(4, 20, {6, 5}, torch::kLong);
  auto len = torch::tensor({5, 5, 4, 3, 3, 2}, torch::kLong);
  auto tin = torch::randint(4, 18, {6, 4}, torch::kLong);
  auto tout = torch::randint(4, 18, {6, 4}, torch::kLong);

  loss_sum(model, src, len, tin, tout, 0, 6).backward();
  std::vector<torch::Tensor> expected;
  for (auto& p : model->parameters()) {
    expected.push_back(p.grad().clone());
    p.mutable_grad().zero_();
  }

  Replicas replicas(model, config, 2, 1);
  REQUIRE(replicas.count() == 2);
  replicas.prepare();
  auto mine = model->parameters(), theirs = replicas.model(1)->parameters();
  for (size_t i = 0; i < mine.size(); ++i) REQUIRE(theirs[i].data_ptr() == mine[i].data_ptr());  // shared storage
  replicas.parallel([&](int r) { loss_sum(replicas.model(r), src, len, tin, tout, r * 3, r * 3 + 3).backward(); });
  replicas.reduce_gradients();
  for (size_t i = 0; i < mine.size(); ++i) {
    INFO("parameter " << i);
    REQUIRE(torch::allclose(mine[i].grad(), expected[i], 1e-5, 1e-6));
  }
  // An update of the model is the replicas' update too.
  {
    torch::NoGradGuard no_grad;
    mine[0].add_(1.0);
  }
  REQUIRE(torch::equal(theirs[0], mine[0]));
}

TEST_CASE("random streams: the same seed gives the same dropout mask on any thread", "[replicas]") {
  auto x = torch::ones({64, 32});
  torch::Tensor a, b, c;
  {
    RandomStreamScope stream(replica_stream_seed(1234, 0, 1, 7));
    a = stream_dropout(x, 0.3, true);
  }
  std::thread([&] {
    RandomStreamScope stream(replica_stream_seed(1234, 0, 1, 7));
    b = stream_dropout(x, 0.3, true);
  }).join();
  {
    RandomStreamScope stream(replica_stream_seed(1234, 0, 1, 8));  // the next step: another mask
    c = stream_dropout(x, 0.3, true);
  }
  REQUIRE(torch::equal(a, b));
  REQUIRE_FALSE(torch::equal(a, c));
  // Inverted dropout: kept values are scaled by 1 / (1 - p), about 30% are dropped.
  auto kept = a.ne(0);
  REQUIRE(torch::allclose(a.masked_select(kept), torch::full({kept.sum().item<int64_t>()}, 1 / 0.7)));
  REQUIRE(kept.to(torch::kFloat).mean().item<double>() == Approx(0.7).margin(0.03));
  REQUIRE(torch::equal(stream_dropout(x, 0.3, false), x));
  REQUIRE(replica_stream_seed(1234, 0, 0, 7) != replica_stream_seed(1234, 0, 1, 7));
  // The gradient is the mask; the dtype is kept (bf16 under autocast); p = 0.9 drops ~90%.
  auto leaf = torch::ones({64, 32}, torch::requires_grad());
  torch::Tensor d;
  {
    RandomStreamScope stream(replica_stream_seed(1234, 0, 1, 7));
    d = stream_dropout(leaf, 0.3, true);
  }
  d.sum().backward();
  REQUIRE(torch::equal(leaf.grad(), a));
  REQUIRE(stream_dropout(x.to(torch::kBFloat16), 0.3, true).scalar_type() == torch::kBFloat16);
  REQUIRE(stream_dropout(torch::ones({100000}), 0.9, true).ne(0).to(torch::kFloat).mean().item<double>() ==
          Approx(0.1).margin(0.005));
}

TEST_CASE("dropout rebuilds its mask in backward: x * mask in every type and layout", "[replicas]") {
  // The mask, as LibTorch would apply it: the output for an input of ones (1 / (1 - p) or 0).
  const auto seed = replica_stream_seed(99, 0, 0, 3);
  auto dropout_with_seed = [&](const torch::Tensor& x) {
    RandomStreamScope stream(seed);
    return stream_dropout(x, 0.25, true);
  };
  const auto mask = dropout_with_seed(torch::ones({48, 70}, torch::kDouble));
  auto x = torch::randn({48, 70}, torch::kDouble);
  x.index_put_({0, 0}, std::nan(""));
  x.index_put_({1, 1}, std::numeric_limits<double>::infinity());
  for (const auto type : {torch::kFloat, torch::kBFloat16, torch::kDouble, torch::kHalf}) {
    INFO(type);
    const auto typed = x.to(type);
    const auto expected = typed * mask.to(type);  // LibTorch's product: NaN and inf * 0 stay NaN
    auto same_bits = [](const torch::Tensor& a, const torch::Tensor& b) {  // NaN where the other has NaN
      return torch::equal(a.isnan(), b.isnan()) && torch::equal(a.nan_to_num(0, 1e30, -1e30), b.nan_to_num(0, 1e30, -1e30));
    };
    CHECK(same_bits(dropout_with_seed(typed), expected));
    // A transposed (non-contiguous) input: element i is the i-th in logical order, as for x * mask.
    const auto transposed = typed.t().contiguous().t();
    REQUIRE_FALSE(transposed.is_contiguous());
    CHECK(same_bits(dropout_with_seed(transposed), expected));
    // Backward: the gradient is the upstream gradient times the same mask, rebuilt from the seed.
    auto leaf = torch::randn({48, 70}, torch::kDouble).to(type).requires_grad_();
    const auto upstream = torch::randn({48, 70}, torch::kDouble).to(type);
    dropout_with_seed(leaf).backward(upstream);
    CHECK(torch::equal(leaf.grad(), upstream * mask.to(type)));
  }
}

TEST_CASE("word dropout zeroes whole token vectors, scales the rest, and only in training", "[replicas][dropout]") {
  torch::manual_seed(5);
  auto x = torch::randn({40, 50, 8});  // [T, B, E]: 2,000 tokens
  torch::Tensor y;
  {
    RandomStreamScope stream(replica_stream_seed(99, 0, 0, 1));
    y = word_dropout(x, 0.25, true);
  }
  auto dropped = y.abs().sum(2).eq(0);  // [T, B]
  for (int64_t t = 0; t < 40; ++t) {
    for (int64_t b = 0; b < 50; ++b) {
      if (dropped[t][b].item<bool>()) continue;
      REQUIRE(torch::allclose(y[t][b], x[t][b] / 0.75));  // a kept token: all of it, scaled
    }
  }
  REQUIRE(dropped.to(torch::kFloat).mean().item<double>() == Approx(0.25).margin(0.03));
  REQUIRE(torch::equal(word_dropout(x, 0.25, false), x));
  REQUIRE(torch::equal(word_dropout(x, 0.0, true), x));
}
