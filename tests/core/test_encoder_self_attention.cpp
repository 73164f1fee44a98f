// model.encoder.self_attention: the blocks equal the formulas of docs/attention.md computed here
// by hand, padding never reaches a real position, the gradients match finite differences, and
// zero blocks leave the encoder as it was.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "config/config.h"
#include "finite_difference.h"
#include "model/encoder.h"

using attnmt::Encoder;
using attnmt::EncoderConfig;

namespace {

EncoderConfig small_config(int blocks, int heads) {
  EncoderConfig c;
  c.layers = 1;
  c.hidden_size = 6;  // 12 wide, bidirectional
  c.dropout = 0.0;
  c.self_attention.layers = blocks;
  c.self_attention.heads = heads;
  c.self_attention.dropout = 0.0;
  return c;
}

torch::Tensor param(const Encoder& e, const std::string& name) { return e->named_parameters()[name]; }

}  // namespace

TEST_CASE("encoder self-attention: the blocks are the formulas, computed by hand", "[model][self-attention]") {
  torch::manual_seed(3);
  const auto plain_config = small_config(0, 1);
  for (int heads : {1, 3}) {
    INFO("heads " << heads);
    torch::manual_seed(5);
    Encoder with(small_config(2, heads), 5);
    with->eval();
    torch::manual_seed(5);
    Encoder plain(plain_config, 5);  // the same RNN weights: drawn first, in the same order
    plain->eval();
    torch::NoGradGuard no_grad;
    const auto embedded = torch::randn({2, 4, 5});
    const auto lengths = torch::tensor({4, 2}, torch::kLong);
    auto x = plain->forward(embedded, lengths).states;  // [2, 4, 12]
    const auto mask = with->forward(embedded, lengths).mask;
    const int64_t D = 12, d = D / heads;
    for (int l = 0; l < 2; ++l) {
      const auto n = std::to_string(l);
      auto qkv = torch::matmul(x, param(with, "self_attn_qkv_" + n + ".weight").t()) + param(with, "self_attn_qkv_" + n + ".bias");
      auto y = torch::zeros_like(x);
      std::vector<torch::Tensor> per_head;
      for (int j = 0; j < heads; ++j) {
        auto q = qkv.slice(2, j * d, (j + 1) * d), k = qkv.slice(2, D + j * d, D + (j + 1) * d),
             v = qkv.slice(2, 2 * D + j * d, 2 * D + (j + 1) * d);
        auto e = torch::matmul(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(d));  // [B, S, S]
        e = e.masked_fill(mask.logical_not().unsqueeze(1), -INFINITY);
        per_head.push_back(torch::matmul(torch::softmax(e, 2), v));
      }
      y = torch::matmul(torch::cat(per_head, 2), param(with, "self_attn_out_" + n + ".weight").t()) +
          param(with, "self_attn_out_" + n + ".bias");
      auto z = x + y;
      auto mean = z.mean(2, true), var = z.var(2, false, true);
      x = (z - mean) / torch::sqrt(var + 1e-5) * param(with, "self_attn_norm_" + n + ".weight") +
          param(with, "self_attn_norm_" + n + ".bias");
    }
    CHECK(torch::allclose(with->forward(embedded, lengths).states, x, 1e-5, 1e-5));
  }
}

TEST_CASE("encoder self-attention: padding never reaches a real position", "[model][self-attention]") {
  torch::manual_seed(7);
  Encoder e(small_config(2, 4), 5);
  e->eval();
  torch::NoGradGuard no_grad;
  auto embedded = torch::randn({2, 6, 5});
  const auto lengths = torch::tensor({6, 3}, torch::kLong);
  const auto states = e->forward(embedded, lengths).states;
  // The short sentence alone, and with other padding: its real positions are the same.
  const auto alone = e->forward(embedded.slice(0, 1, 2).slice(1, 0, 3), torch::tensor({3}, torch::kLong)).states;
  CHECK(torch::allclose(states[1].slice(0, 0, 3), alone[0], 1e-6, 1e-6));
  auto other = embedded.clone();
  other[1].slice(0, 3, 6).normal_(0, 10);
  const auto again = e->forward(other, lengths).states;
  CHECK(torch::equal(again[1].slice(0, 0, 3), states[1].slice(0, 0, 3)));
  CHECK(torch::equal(again[0], states[0]));
}

TEST_CASE("encoder self-attention: finite-difference gradients in double", "[model][self-attention][gradcheck]") {
  torch::manual_seed(11);
  Encoder e(small_config(1, 2), 4);
  e->to(torch::kDouble);
  e->eval();  // no dropout; LibTorch's own LSTM (double)
  auto embedded = torch::randn({2, 3, 4}, torch::kDouble).requires_grad_(true);
  const auto lengths = torch::tensor({3, 2}, torch::kLong);
  const auto probe = torch::randn({2, 3, 12}, torch::kDouble);
  auto loss = [&] { return (e->forward(embedded, lengths).states * probe).sum(); };
  loss().backward();
  auto check = [&](const torch::Tensor& x, const std::string& what) {
    REQUIRE(x.grad().defined());
    attnmt::test::check_central_differences(x, x.grad().clone(), loss, what);
  };
  check(embedded, "embedded");
  for (auto& p : e->named_parameters()) {
    if (p.key().rfind("self_attn", 0) == 0) check(p.value(), p.key());
  }
}

TEST_CASE("encoder self-attention: zero blocks leave the encoder as it was", "[model][self-attention]") {
  auto names = [](const Encoder& e) {
    std::vector<std::string> out;
    for (const auto& p : e->named_parameters()) out.push_back(p.key());
    return out;
  };
  auto c = small_config(0, 4);
  torch::manual_seed(1);
  Encoder a(c, 5);
  c.self_attention.heads = 3;  // not used without blocks
  c.self_attention.dropout = 0.5;
  torch::manual_seed(1);
  Encoder b(c, 5);
  CHECK(names(a) == names(b));
  for (const auto& n : names(a)) CHECK(n.find("self_attn") == std::string::npos);
  a->train();
  b->train();
  torch::manual_seed(2);
  const auto embedded = torch::randn({2, 4, 5});
  const auto lengths = torch::tensor({4, 3}, torch::kLong);
  torch::manual_seed(9);
  const auto x = a->forward(embedded, lengths).states;
  torch::manual_seed(9);
  CHECK(torch::equal(x, b->forward(embedded, lengths).states));
}
