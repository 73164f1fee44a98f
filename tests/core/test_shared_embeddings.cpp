// model.share_embeddings: the encoder and the decoder read one embedding matrix (with
// tie_embeddings, the output layer's too). The shared model computes what an unshared one holding
// the same matrix twice computes, and its gradient is the sum of the two uses' (the chain rule);
// tests/e2e/test_train_features.cpp trains and translates such a model.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <string>

#include "config/config.h"
#include "model/seq2seq.h"
#include "small_models.h"
#include "util/error.h"

using attnmt::InputError;
using attnmt::ModelConfig;
using attnmt::Seq2Seq;
using attnmt::VocabSizes;
using attnmt::test::max_abs_diff;

namespace {

ModelConfig small_config(bool share) {
  ModelConfig c;
  c.embedding_size = 16;
  c.encoder.hidden_size = 8;
  c.encoder.dropout = 0.0;
  c.decoder.hidden_size = 16;
  c.decoder.dropout = 0.0;
  c.attention.type = "luong_general";
  c.tie_embeddings = true;
  c.share_embeddings = share;
  return c;
}

VocabSizes vocab_of(int64_t src, int64_t tgt) {
  VocabSizes v;
  v.src = src;
  v.tgt = tgt;
  return v;
}


}  // namespace

TEST_CASE("shared embeddings: one matrix, the unshared model's outputs, the sum of both uses' gradients",
          "[model][shared-embeddings]") {
  const auto vocab = vocab_of(30, 30);
  torch::manual_seed(7);
  Seq2Seq shared(small_config(true), vocab);
  torch::manual_seed(7);
  Seq2Seq plain(small_config(false), vocab);

  auto sp = shared->named_parameters(), pp = plain->named_parameters();
  REQUIRE(sp.contains("src_embed.weight"));
  CHECK_FALSE(sp.contains("tgt_embed.weight"));
  REQUIRE(pp.contains("tgt_embed.weight"));
  CHECK(shared->parameter_count() == plain->parameter_count() - 30 * 16);
  // The same seed starts every parameter as the unshared model's (the matrix is its source
  // embeddings): a paired comparison.
  for (const auto& p : sp) {
    INFO(p.key());
    REQUIRE(pp.contains(p.key()));
    CHECK(torch::equal(p.value(), pp[p.key()]));
  }
  CHECK_FALSE(torch::equal(pp["src_embed.weight"], pp["tgt_embed.weight"]));
  // The unshared model with the same matrix on both sides.
  {
    torch::NoGradGuard no_grad;
    pp["tgt_embed.weight"].copy_(sp["src_embed.weight"]);
  }

  shared->eval();
  plain->eval();
  torch::manual_seed(11);
  auto src = torch::randint(4, 30, {3, 5}, torch::kLong);
  auto lengths = torch::tensor({5, 4, 2}, torch::kLong);
  src.index_put_({1, 4}, 0);
  src.index_put_({2, torch::indexing::Slice(2)}, 0);
  auto tgt = torch::randint(4, 30, {3, 6}, torch::kLong);
  auto a = shared->forward(src, lengths, tgt), b = plain->forward(src, lengths, tgt);
  REQUIRE(max_abs_diff(a, b) < 1e-5);

  const auto weights = torch::randn(a.sizes());
  (a * weights).sum().backward();
  (b * weights).sum().backward();
  const auto g = sp["src_embed.weight"].grad();
  const auto both = pp["src_embed.weight"].grad() + pp["tgt_embed.weight"].grad();
  REQUIRE(g.defined());
  CHECK(max_abs_diff(g, both) < 1e-5 * (1 + both.abs().max().item<double>()));
  // Neither use alone is the gradient: the source tokens and the target tokens both reach it.
  CHECK(max_abs_diff(g, pp["src_embed.weight"].grad()) > 1e-4);
  CHECK(max_abs_diff(g, pp["tgt_embed.weight"].grad()) > 1e-4);
}

TEST_CASE("shared embeddings: two vocabularies are refused, naming the key", "[model][shared-embeddings]") {
  try {
    Seq2Seq model(small_config(true), vocab_of(30, 40));
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("model.share_embeddings") && Catch::Contains("30") && Catch::Contains("40"));
  }
}
