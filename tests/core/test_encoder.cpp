// The encoder's padded batches against each sentence alone: every sentence, run unpadded through
// the encoder's own LSTM modules layer by layer (the backward direction on the reversed
// sentence), gives the same states and final states as its row of the padded batch.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "model/encoder.h"

using namespace attnmt;

namespace {

torch::nn::LSTM module(Encoder& encoder, const std::string& name) {
  const auto children = encoder->named_children();
  auto m = std::dynamic_pointer_cast<torch::nn::LSTMImpl>(children[name]);
  REQUIRE(m);
  return torch::nn::LSTM(m);
}

// The reference for sentence b: layer by layer, whole unpadded sentence, at::lstm.
torch::Tensor reference_states(Encoder& encoder, const torch::Tensor& x, int64_t layers) {
  auto in = x.unsqueeze(0);  // [1, L, E]
  for (int64_t l = 0; l < layers; ++l) {
    auto fwd = std::get<0>(module(encoder, "fwd_" + std::to_string(l))->forward(in));
    auto bwd = std::get<0>(module(encoder, "bwd_" + std::to_string(l))->forward(in.flip(1))).flip(1);
    in = torch::cat({fwd, bwd}, 2);
  }
  return in.squeeze(0);
}

// A 2-layer bidirectional encoder (12 per direction) over 10-wide embeddings, in eval mode.
Encoder small_encoder(uint64_t seed, RnnType rnn = RnnType::lstm) {
  torch::manual_seed(seed);
  EncoderConfig config;
  config.rnn = rnn;
  config.layers = 2;
  config.hidden_size = 12;
  config.dropout = 0.0;
  Encoder encoder(config, 10);
  encoder->eval();
  return encoder;
}

}  // namespace

TEST_CASE("encoder: a padded batch equals each sentence encoded alone (padding never reaches a real position)",
          "[model]") {
  auto encoder = small_encoder(7);
  const std::vector<int64_t> lengths{5, 3, 1};
  auto embedded = torch::randn({3, 5, 10});
  auto out = encoder->forward(embedded, torch::tensor(lengths));
  REQUIRE(out.states.sizes() == torch::IntArrayRef({3, 5, 24}));
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t L = lengths[static_cast<size_t>(b)];
    auto expected = reference_states(encoder, embedded[b].narrow(0, 0, L), 2);
    INFO("sentence " << b);
    CHECK(torch::allclose(out.states[b].narrow(0, 0, L), expected, 1e-5, 1e-6));
    // final_h: forward's last real token, backward's first token, of the top layer
    auto final_expected = torch::cat({expected[L - 1].narrow(0, 0, 12), expected[0].narrow(0, 12, 12)});
    CHECK(torch::allclose(out.final_h[b], final_expected, 1e-5, 1e-6));
  }
}

TEST_CASE("encoder on packed weights (decoding) equals its LibTorch LSTMs", "[model][packed]") {
  auto encoder = small_encoder(11);
  torch::NoGradGuard no_grad;
  const auto lengths = torch::tensor({7, 3, 1, 5}, torch::kLong);
  auto embedded = torch::randn({4, 7, 10});
  auto plain = encoder->forward(embedded, lengths);
  const auto fp32 = encoder->products(ExecutionMode::packed(ProductPrecision::kFp32));
  REQUIRE(fp32.ih.size() == 4);  // 2 layers x 2 directions
  auto packed = encoder->forward(embedded, lengths, fp32);
  auto mask = plain.mask.unsqueeze(2);  // padding positions are never read
  CHECK((plain.states - packed.states).masked_fill(~mask, 0).abs().max().item<double>() < 1e-5);
  CHECK((plain.final_h - packed.final_h).abs().max().item<double>() < 1e-5);
  CHECK(torch::equal(plain.mask, packed.mask));
  // bf16: the products' operands rounded to bfloat16 (8 significant bits), states stay fp32.
  const auto bf16 = encoder->products(ExecutionMode::packed(ProductPrecision::kBf16));
  auto half = encoder->forward(embedded, lengths, bf16);
  REQUIRE(half.states.scalar_type() == torch::kFloat);
  const double diff = (plain.states - half.states).masked_fill(~mask, 0).abs().max().item<double>();
  CHECK(diff < 0.03);
  if (is_packed(*bf16.ih[0])) CHECK(diff > 0);  // it does run in bfloat16

  // A GRU encoder has nothing to pack and runs as before.
  auto gru = small_encoder(12, RnnType::gru);
  const auto none = gru->products(ExecutionMode::packed(ProductPrecision::kFp32));
  REQUIRE(none.ih.empty());
  CHECK(torch::equal(gru->forward(embedded, lengths).states, gru->forward(embedded, lengths, none).states));
}
