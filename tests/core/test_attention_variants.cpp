// Each attention variant's defining property, on hand-made inputs (docs/attention.md).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <functional>

#include "attention/chunkwise.h"
#include "attention/milk.h"
#include "attention/hard.h"
#include "attention/local_p.h"
#include "attention/monotonic.h"
#include "attention/registry.h"
#include "util/error.h"

using namespace attnmt;

namespace {

const auto kDouble = torch::dtype(torch::kDouble);

std::shared_ptr<Attention> make(AttentionConfig config, int64_t query_size, int64_t memory_size) {
  auto attention = make_attention(config, query_size, memory_size);
  attention->to(torch::kDouble);
  attention->eval();
  return attention;
}

AttentionConfig config_of(const std::string& type) {
  AttentionConfig c;
  c.type = type;
  return c;
}

// multi_head's W_q, W_k, W_v and W_o, by their parameter names.
std::array<torch::Tensor, 4> projections(Attention& multi) {
  std::array<torch::Tensor, 4> w;
  const std::array<std::string, 4> names{"w_q.weight", "w_k.weight", "w_v.weight", "w_o.weight"};
  for (auto& p : multi.named_parameters()) {
    for (size_t i = 0; i < names.size(); ++i)
      if (p.key() == names[i]) w[i] = p.value();
  }
  return w;
}

torch::Tensor mask_of(const std::vector<int64_t>& lengths, int64_t S) {
  auto len = torch::tensor(lengths, torch::kLong);
  return torch::arange(S).unsqueeze(0) < len.unsqueeze(1);
}

// The hard monotonic stop (Raffel et al. 2017, algorithm 1) by hand: the first real position
// i >= from with p_i >= 0.5, or -1. p, mask: one sentence's [S].
int64_t first_stop(const torch::Tensor& p, const torch::Tensor& mask, int64_t from) {
  for (int64_t i = from; i < p.size(0); ++i) {
    if (mask[i].item<bool>() && p[i].item<double>() >= 0.5) return i;
  }
  return -1;
}

// Drives a hard-decoding monotonic head (monotonic, chunkwise) for 12 steps over 4 sentences of
// random states and queries. Each sentence's expected stop is computed by hand (first_stop, from
// where it stopped last); where there is none, the step must give no weight and no context, and
// every later step too. Otherwise check(b, stop, out, memory) tests the step. Returns how many
// times a stop moved right.
int64_t drive_hard_head(Attention& attention,
                        const std::function<void(int64_t, int64_t, const AttentionOutput&, const torch::Tensor&)>& check) {
  auto& monotonic = dynamic_cast<MonotonicAttention&>(attention);
  const int64_t B = 4, S = 9;
  auto memory = torch::randn({B, S, 4}, kDouble);
  auto mask = mask_of({9, 6, 3, 9}, S);
  auto mem = attention.prepare(memory, mask);
  auto state = attention.initial_state(mem);
  std::vector<int64_t> last(B, 0);  // alpha_0 is one-hot at position 0
  std::vector<bool> stopped(B, false);
  int64_t moves = 0;
  for (int64_t t = 0; t < 12; ++t) {
    auto query = torch::randn({B, 4}, kDouble) * 3;
    auto p = monotonic.selection_probabilities(query, mem);
    auto out = attention.forward(query, mem, state, t);
    state = out.state;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t stop = first_stop(p[b], mask[b], stopped[b] ? S : last[b]);
      INFO("t " << t << " b " << b);
      if (stop < 0) {
        REQUIRE(out.weights[b].abs().sum().item<double>() == 0.0);
        REQUIRE(out.context[b].abs().sum().item<double>() == 0.0);
        stopped[b] = true;
        continue;
      }
      REQUIRE(stop >= last[b]);
      check(b, stop, out, memory);
      moves += stop > last[b];
      last[b] = stop;
    }
  }
  return moves;
}

}  // namespace

TEST_CASE("local_m attends only inside [p_t - D, p_t + D] with p_t = min(t, S - 1)", "[attention][local_m]") {
  torch::manual_seed(3);
  auto config = config_of("local_m");
  config.window = 1;
  config.score = "dot";
  auto attention = make(config, 4, 4);
  const int64_t S = 7;
  auto memory = torch::randn({2, S, 4}, kDouble);
  auto mask = mask_of({7, 3}, S);
  auto query = torch::randn({2, 4}, kDouble);
  auto mem = attention->prepare(memory, mask);
  for (int64_t t = 0; t < 6; ++t) {
    auto out = attention->forward(query, mem, {}, t);
    for (int64_t b = 0; b < 2; ++b) {
      const int64_t len = b == 0 ? 7 : 3;
      const int64_t p = std::min(t, len - 1);
      // Hand-computed: softmax of q.h_i over the window only.
      std::vector<double> e;
      double total = 0;
      for (int64_t i = 0; i < S; ++i) {
        const bool inside = i < len && std::abs(i - p) <= 1;
        e.push_back(inside ? std::exp((query[b] * memory[b][i]).sum().item<double>()) : 0.0);
        total += e.back();
      }
      for (int64_t i = 0; i < S; ++i) {
        INFO("t " << t << " b " << b << " i " << i);
        const double w = out.weights[b][i].item<double>();
        if (e[i] == 0.0) {
          REQUIRE(w == 0.0);
        } else {
          REQUIRE(w == Approx(e[i] / total).epsilon(1e-12));
        }
      }
    }
    // Changing a state outside the window changes nothing.
    auto changed = memory.clone();
    const int64_t p0 = std::min<int64_t>(t, 6);
    const int64_t outside = p0 >= 3 ? 0 : 6;
    changed[0][outside] += 100.0;
    auto out2 = attention->forward(query, attention->prepare(changed, mask), {}, t);
    REQUIRE(torch::allclose(out2.weights[0], out.weights[0], 0, 0));
    REQUIRE(torch::allclose(out2.context[0], out.context[0], 0, 0));
  }
}

TEST_CASE("local_p: Gaussian around the predicted p_t, and p_t learns", "[attention][local_p]") {
  torch::manual_seed(4);
  auto config = config_of("local_p");
  config.window = 2;
  config.score = "dot";
  auto attention = make(config, 3, 3);
  auto& local_p = dynamic_cast<LocalPAttention&>(*attention);
  const int64_t S = 9;
  auto memory = torch::randn({2, S, 3}, kDouble);
  auto mask = mask_of({9, 5}, S);
  auto query = torch::randn({2, 3}, kDouble);
  auto mem = attention->prepare(memory, mask);
  auto out = attention->forward(query, mem, {}, 0);
  auto p = local_p.predict_position(query, mem);
  const double sigma = 1.0;  // D / 2
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t len = b == 0 ? 9 : 5;
    const double pt = p[b].item<double>();
    REQUIRE(pt >= 0.0);
    REQUIRE(pt <= static_cast<double>(len));
    std::vector<double> e(S, 0.0);
    double total = 0;
    for (int64_t i = 0; i < len; ++i) {
      if (std::abs(static_cast<double>(i) - pt) <= 2.0) {
        e[i] = std::exp((query[b] * memory[b][i]).sum().item<double>());
        total += e[i];
      }
    }
    for (int64_t i = 0; i < S; ++i) {
      const double gauss = std::exp(-(i - pt) * (i - pt) / (2 * sigma * sigma));
      INFO("b " << b << " i " << i);
      REQUIRE(out.weights[b][i].item<double>() == Approx(e[i] / total * gauss).epsilon(1e-10).margin(1e-15));
    }
  }
  // The position predictor gets gradient through the Gaussian.
  attention->zero_grad();
  auto mem2 = attention->prepare(memory, mask);
  attention->forward(query, mem2, {}, 0).context.sum().backward();
  for (auto& param : attention->named_parameters()) {
    INFO("parameter " << param.key());
    REQUIRE(param.value().grad().defined());
    REQUIRE(param.value().grad().abs().sum().item<double>() > 0.0);
  }
}

TEST_CASE("forced_forward divides by the exponentiated scores of earlier steps", "[attention][forced_forward]") {
  torch::manual_seed(5);
  auto config = config_of("forced_forward");
  config.score = "dot";
  auto attention = make(config, 3, 3);
  const int64_t S = 4;
  auto memory = torch::randn({1, S, 3}, kDouble);
  auto mask = mask_of({4}, S);
  auto queries = torch::randn({4, 1, 3}, kDouble);
  auto mem = attention->prepare(memory, mask);
  auto state = attention->initial_state(mem);
  std::vector<double> past(S, 0.0);  // sum_{j<t} exp(e_{j,i})
  for (int64_t t = 0; t < 4; ++t) {
    auto out = attention->forward(queries[t], mem, state, t);
    state = out.state;
    std::vector<double> e_prime(S);
    double total = 0;
    for (int64_t i = 0; i < S; ++i) {
      const double e = std::exp((queries[t][0] * memory[0][i]).sum().item<double>());
      e_prime[i] = t == 0 ? e : e / past[i];
      past[i] += e;
      total += e_prime[i];
    }
    for (int64_t i = 0; i < S; ++i) {
      INFO("t " << t << " i " << i);
      REQUIRE(out.weights[0][i].item<double>() == Approx(e_prime[i] / total).epsilon(1e-10));
    }
  }
  // The same query twice: the position it favoured the first time loses weight.
  auto state2 = attention->initial_state(mem);
  auto first = attention->forward(queries[0], mem, state2, 0);
  auto second = attention->forward(queries[0], mem, first.state, 1);
  const auto top = first.weights[0].argmax().item<int64_t>();
  REQUIRE(second.weights[0][top].item<double>() < first.weights[0][top].item<double>());
}

TEST_CASE("monotonic: the closed form equals the recursive definition", "[attention][monotonic]") {
  torch::manual_seed(6);
  const int64_t B = 3, S = 7;
  auto p = torch::rand({B, S}, kDouble);
  auto previous = torch::softmax(torch::randn({B, S}, kDouble), 1);
  auto alpha = monotonic_expected_alignment(p, previous);
  for (int64_t b = 0; b < B; ++b) {
    // q_i = (1 - p_{i-1}) q_{i-1} + alpha_{t-1,i},  alpha_{t,i} = p_i q_i  (Raffel et al., eq. 13-14)
    double q = 0;
    for (int64_t i = 0; i < S; ++i) {
      q = (i == 0 ? 0.0 : (1 - p[b][i - 1].item<double>()) * q) + previous[b][i].item<double>();
      INFO("b " << b << " i " << i);
      REQUIRE(alpha[b][i].item<double>() == Approx(p[b][i].item<double>() * q).epsilon(1e-9));
    }
  }
}

TEST_CASE("monotonic: the expected alignment keeps its mass when positions left of the focus have p near 1",
          "[attention][monotonic]") {
  // prod_{l<2} (1 - p_l) = 1e-14 is under the paper's 1e-10 clamp, but the recursion never uses it:
  // the mass sits at position 2, so alpha_2 = p_2 = 0.3 and alpha_3 = p_3 (1 - p_2) = 0.35 (by hand).
  auto p = torch::tensor({{1 - 1e-7, 1 - 1e-7, 0.3, 0.5}}, kDouble);
  auto previous = torch::tensor({{0.0, 0.0, 1.0, 0.0}}, kDouble);
  auto alpha = monotonic_expected_alignment(p, previous);
  CHECK(alpha[0][0].item<double>() == Approx(0.0).margin(1e-20));
  CHECK(alpha[0][1].item<double>() == Approx(0.0).margin(1e-20));
  CHECK(alpha[0][2].item<double>() == Approx(0.3).epsilon(1e-9));
  CHECK(alpha[0][3].item<double>() == Approx(0.35).epsilon(1e-9));
}

TEST_CASE("monotonic: hard decoding picks the first p >= 0.5 and never moves left", "[attention][monotonic]") {
  torch::manual_seed(7);
  auto config = config_of("monotonic");
  config.hard_decode = true;
  config.score_bias_init = 0.0;  // p near 0.5: choices vary step to step
  auto attention = make(config, 4, 4);
  REQUIRE(attention->named_parameters()["r"].item<double>() == 0.0);
  const int64_t moves = drive_hard_head(*attention, [](int64_t b, int64_t stop, const AttentionOutput& out,
                                                      const torch::Tensor& memory) {
    auto row = out.weights[b];
    REQUIRE(row.sum().item<double>() == 1.0);
    REQUIRE(row[stop].item<double>() == 1.0);
    REQUIRE(torch::allclose(out.context[b], memory[b][stop]));
  });
  REQUIRE(moves > 0);  // the test exercised moving right
  CHECK(make(config_of("monotonic"), 4, 4)->named_parameters()["r"].item<double>() == -4.0);  // the default
}

// Three sentences of 7, 5 and 1 real positions (S = 7): an expected alignment alpha that sums to
// 0.8 and soft energies u, as the head and the energy of chunkwise and milk give them.
struct SoftInputs {
  torch::Tensor mask, alpha, u;
};
SoftInputs soft_inputs(uint64_t seed) {
  torch::manual_seed(seed);
  SoftInputs in;
  in.mask = mask_of({7, 5, 1}, 7);
  in.alpha = torch::rand({3, 7}, kDouble).masked_fill(in.mask.logical_not(), 0.0);
  in.alpha = in.alpha / (in.alpha.sum(1, true) * 1.25);
  in.u = torch::randn({3, 7}, kDouble) * 3;
  return in;
}

TEST_CASE("chunkwise: beta equals MoChA's eq. 13 summed term by term", "[attention][chunkwise]") {
  const int64_t B = 3, S = 7;
  const auto [mask, alpha, u] = soft_inputs(12);
  for (const int64_t w : {1, 2, 3, 9}) {
    auto beta = chunkwise_weights(alpha, u, mask, w);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = mask[b].sum().item<int64_t>();
      double total = 0;
      for (int64_t k = 0; k < S; ++k) {
        // beta_k = sum_{j=k}^{k+w-1} alpha_j exp(u_k) / sum_{l=j-w+1}^{j} exp(u_l), over real positions
        double expected = 0;
        for (int64_t j = k; j < std::min(k + w, n); ++j) {
          double chunk = 0;
          for (int64_t l = std::max<int64_t>(0, j - w + 1); l <= j; ++l) chunk += std::exp(u[b][l].item<double>());
          expected += alpha[b][j].item<double>() * std::exp(u[b][k].item<double>()) / chunk;
        }
        if (k >= n) expected = 0;
        INFO("w " << w << " b " << b << " k " << k);
        REQUIRE(beta[b][k].item<double>() == Approx(expected).margin(1e-12));
        if (k >= n) REQUIRE(beta[b][k].item<double>() == 0.0);  // padding: exactly zero
        total += beta[b][k].item<double>();
      }
      REQUIRE(total == Approx(alpha[b].sum().item<double>()).epsilon(1e-12));  // sum beta = sum alpha
    }
    if (w == 1) REQUIRE(torch::allclose(beta, alpha, 0, 1e-15));  // a chunk of one: beta = alpha
  }
}

TEST_CASE("chunkwise: hard decoding is a softmax over the chunk ending at the monotonic stop", "[attention][chunkwise]") {
  torch::manual_seed(13);
  for (const int64_t w : {1, 3}) {
    INFO("w " << w);
    auto config = config_of("chunkwise");
    config.chunk_size = static_cast<int>(w);
    config.score_bias_init = 0.0;  // p near 0.5: the stop moves
    auto attention = make(config, 4, 4);
    const int64_t moves = drive_hard_head(*attention, [&](int64_t b, int64_t stop, const AttentionOutput& out,
                                                         const torch::Tensor& memory) {
      auto row = out.weights[b];
      const int64_t first = std::max<int64_t>(0, stop - w + 1);
      REQUIRE(row.narrow(0, first, stop - first + 1).sum().item<double>() == Approx(1.0).epsilon(1e-12));
      for (int64_t k = 0; k < row.size(0); ++k) {
        if (k < first || k > stop) REQUIRE(row[k].item<double>() == 0.0);  // outside the chunk: exactly 0
        else REQUIRE(row[k].item<double>() > 0.0);
      }
      REQUIRE(torch::allclose(out.context[b], torch::matmul(row, memory[b])));
      // the state is the monotonic head's (one-hot at the stop), not the chunk's weights
      REQUIRE(out.state.tensors.at(0)[b][stop].item<double>() == 1.0);
    });
    REQUIRE(moves > 0);
  }
}

TEST_CASE("milk: beta equals MILk's eq. 5 summed term by term, and MoChA's with a chunk reaching the start",
          "[attention][milk]") {
  const int64_t B = 3, S = 7;
  const auto [mask, alpha, u] = soft_inputs(21);
  auto beta = milk_weights(alpha, u, mask);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = mask[b].sum().item<int64_t>();
    for (int64_t k = 0; k < S; ++k) {
      // beta_k = sum_{j>=k} alpha_j exp(u_k) / sum_{l<=j} exp(u_l), over real positions
      double expected = 0;
      for (int64_t j = k; j < n; ++j) {
        double prefix = 0;
        for (int64_t l = 0; l <= j; ++l) prefix += std::exp(u[b][l].item<double>());
        expected += alpha[b][j].item<double>() * std::exp(u[b][k].item<double>()) / prefix;
      }
      INFO("b " << b << " k " << k);
      REQUIRE(beta[b][k].item<double>() == Approx(expected).margin(1e-12));
      if (k >= n) REQUIRE(beta[b][k].item<double>() == 0.0);  // padding: exactly zero
    }
    REQUIRE(beta[b].sum().item<double>() == Approx(alpha[b].sum().item<double>()).epsilon(1e-12));
  }
  REQUIRE(torch::allclose(beta, chunkwise_weights(alpha, u, mask, S), 0, 1e-12));  // w = S: infinite lookback
}

TEST_CASE("milk: hard decoding is a softmax over every state up to the monotonic stop", "[attention][milk]") {
  torch::manual_seed(22);
  auto config = config_of("milk");
  config.score_bias_init = 0.0;  // p near 0.5: the stop moves
  auto attention = make(config, 4, 4);
  const int64_t moves = drive_hard_head(*attention, [&](int64_t b, int64_t stop, const AttentionOutput& out,
                                                       const torch::Tensor& memory) {
    auto row = out.weights[b];
    REQUIRE(row.narrow(0, 0, stop + 1).sum().item<double>() == Approx(1.0).epsilon(1e-12));
    for (int64_t k = 0; k < row.size(0); ++k) {
      if (k > stop) REQUIRE(row[k].item<double>() == 0.0);  // right of the stop: exactly 0
      else REQUIRE(row[k].item<double>() > 0.0);
    }
    REQUIRE(torch::allclose(out.context[b], torch::matmul(row, memory[b])));
    REQUIRE(out.state.tensors.at(0)[b][stop].item<double>() == 1.0);  // the head's state
  });
  REQUIRE(moves > 0);
}

TEST_CASE("milk and chunkwise: a hard stop's weights do not depend on the memory right of it (bit for bit)",
          "[attention][milk][chunkwise]") {
  // A stream that has read up to the stop and the whole sentence must give the same numbers
  // (decoding/streaming.h batches the hard head's policy on the whole memory): the soft weights'
  // exp is shifted by the largest energy the stop can reach, not by the row's.
  torch::manual_seed(5);
  const int64_t S = 9;
  for (const float scale : {1.0f, 40.0f}) {  // energies right of the stop far above those left of it
    auto u = torch::randn({1, S});
    u.narrow(1, 5, S - 5).mul_(scale).add_(scale);
    for (int64_t stop = 0; stop < 5; ++stop) {
      INFO("stop " << stop << ", scale " << scale);
      auto alpha = torch::zeros({1, S});
      alpha[0][stop] = 1;
      const auto mask = torch::ones({1, S}, torch::kBool);
      const int64_t read = stop + 1 + stop % 2;  // what a stream has read: the stop, or one more
      auto cut = [&](const torch::Tensor& t) { return t.narrow(1, 0, read).contiguous(); };
      const auto whole = milk_weights(alpha, u, mask);
      REQUIRE(torch::equal(whole.narrow(1, 0, read), milk_weights(cut(alpha), cut(u), cut(mask))));
      REQUIRE(whole.narrow(1, read, S - read).abs().sum().item<float>() == 0.0f);
      for (int64_t w : {1, 2, 4}) {
        const auto chunk = chunkwise_weights(alpha, u, mask, w);
        REQUIRE(torch::equal(chunk.narrow(1, 0, read), chunkwise_weights(cut(alpha), cut(u), cut(mask), w)));
      }
    }
    // A head that stopped nowhere weighs nothing (no NaN from an empty maximum).
    const auto none = milk_weights(torch::zeros({1, S}), u, torch::ones({1, S}, torch::kBool));
    REQUIRE(none.abs().sum().item<float>() == 0.0f);
    REQUIRE(chunkwise_weights(torch::zeros({1, S}), u, torch::ones({1, S}, torch::kBool), 2).abs().sum().item<float>() == 0.0f);
  }
}

TEST_CASE("milk: the latency loss is lambda times DAL of the head's expected delays", "[attention][milk]") {
  SECTION("DAL by hand") {
    // |x| = 4, |y| = 3 (1/gamma = 4/3); delays 2, 1, 4 (and a padded step that must not count):
    // g' = 2, max(1, 2 + 4/3) = 10/3, max(4, 10/3 + 4/3) = 14/3;
    // DAL = (2 + (10/3 - 4/3) + (14/3 - 8/3)) / 3 = 2.
    auto g = torch::tensor({{2.0, 1.0, 4.0, 9.0}}, kDouble);
    auto dal = differentiable_average_lagging(g, torch::tensor({4}), torch::tensor({3}));
    REQUIRE(dal.item<double>() == Approx(2.0).epsilon(1e-12));
    // Writing each token after reading all of the source: DAL = |x| (the wait-until-end policy).
    auto all = torch::full({1, 3}, 4.0, kDouble);
    REQUIRE(differentiable_average_lagging(all, torch::tensor({4}), torch::tensor({3})).item<double>() ==
            Approx(4.0).epsilon(1e-12));
  }
  SECTION("collected while training, a gradient for the head, nothing in eval") {
    torch::manual_seed(23);
    auto config = config_of("milk");
    config.latency_loss = 0.5;
    auto attention = make(config, 4, 4);
    const int64_t B = 2, S = 5;
    auto mask = mask_of({5, 3}, S);
    auto memory = attention->prepare(torch::randn({B, S, 4}, kDouble), mask);
    attention->train();
    auto state = attention->initial_state(memory);
    std::vector<torch::Tensor> alphas;
    for (int64_t t = 0; t < 3; ++t) {
      auto out = attention->forward(torch::randn({B, 4}, kDouble), memory, state, t);
      state = out.state;
      alphas.push_back(out.state.tensors.at(0));
    }
    const auto lengths = torch::tensor({3, 2});
    auto loss = attention->take_auxiliary_loss(torch::zeros({B}, kDouble), lengths);
    REQUIRE(loss.defined());
    // The same from the alignments: g_t = sum_j j alpha_j + (1 - sum alpha) |x|.
    std::vector<torch::Tensor> delays;
    const auto x = mask.sum(1).to(kDouble);
    for (const auto& a : alphas) {
      delays.push_back((a * torch::arange(1, S + 1, a.options())).sum(1) + (1 - a.sum(1)) * x);
    }
    auto expected = 0.5 * differentiable_average_lagging(torch::stack(delays, 1), x, lengths).sum();
    REQUIRE(loss.item<double>() == Approx(expected.item<double>()).epsilon(1e-12));
    loss.backward();
    REQUIRE(attention->named_parameters()["r"].grad().defined());
    REQUIRE(attention->named_parameters()["r"].grad().abs().item<double>() > 0);
    REQUIRE_FALSE(attention->take_auxiliary_loss(torch::zeros({B}, kDouble), lengths).defined());  // taken
    attention->eval();
    attention->forward(torch::randn({B, 4}, kDouble), memory, attention->initial_state(memory), 0);
    REQUIRE_FALSE(attention->take_auxiliary_loss(torch::zeros({B}, kDouble), lengths).defined());
  }
}

TEST_CASE("luong_location: weights depend on the query only", "[attention][luong_location]") {
  torch::manual_seed(8);
  auto config = config_of("luong_location");
  config.max_positions = 3;
  auto attention = make(config, 4, 5);
  const int64_t S = 5;
  auto query = torch::randn({2, 4}, kDouble);
  auto mask = mask_of({5, 2}, S);
  auto a = attention->forward(query, attention->prepare(torch::randn({2, S, 5}, kDouble), mask), {}, 0);
  auto b = attention->forward(query, attention->prepare(torch::randn({2, S, 5}, kDouble), mask), {}, 0);
  REQUIRE(torch::allclose(a.weights, b.weights, 0, 0));
  // Positions 3 and 4 (beyond max_positions) share position 2's score: equal weights.
  REQUIRE(a.weights[0][3].item<double>() == a.weights[0][2].item<double>());
  REQUIRE(a.weights[0][4].item<double>() == a.weights[0][2].item<double>());
  REQUIRE(a.weights[1][2].item<double>() == 0.0);
}

TEST_CASE("scaled_dot is dot attention on q / sqrt(d)", "[attention][scaled_dot]") {
  torch::manual_seed(9);
  auto scaled = make(config_of("scaled_dot"), 4, 4);
  auto dot = make(config_of("luong_dot"), 4, 4);
  auto memory = torch::randn({2, 5, 4}, kDouble);
  auto mask = mask_of({5, 3}, 5);
  auto query = torch::randn({2, 4}, kDouble);
  auto a = scaled->forward(query, scaled->prepare(memory, mask), {}, 0);
  auto b = dot->forward(query / 2.0, dot->prepare(memory, mask), {}, 0);
  REQUIRE(torch::allclose(a.weights, b.weights, 1e-12, 1e-14));
  REQUIRE(torch::allclose(a.context, b.context, 1e-12, 1e-14));
}

TEST_CASE("coverage: the state sums past weights and the loss is sum min(alpha, cov)", "[attention][coverage]") {
  torch::manual_seed(10);
  auto config = config_of("bahdanau");
  config.coverage = true;
  config.coverage_loss = 0.5;
  auto attention = make(config, 4, 4);
  attention->train();  // the loss is a training term
  auto memory = torch::randn({2, 5, 4}, kDouble);
  auto mask = mask_of({5, 4}, 5);
  auto mem = attention->prepare(memory, mask);
  auto state = attention->initial_state(mem);
  auto coverage = torch::zeros({2, 5}, kDouble);
  double expected_loss = 0, expected_short = 0;  // all 4 steps of both rows; row 1 cut to 2 steps
  std::vector<torch::Tensor> queries;
  for (int64_t t = 0; t < 4; ++t) {
    queries.push_back(torch::randn({2, 4}, kDouble));
    auto out = attention->forward(queries.back(), mem, state, t);
    auto per_row = torch::minimum(out.weights, coverage).sum(1);
    expected_loss += per_row.sum().item<double>();
    expected_short += per_row[0].item<double>() + (t < 2 ? per_row[1].item<double>() : 0.0);
    coverage = coverage + out.weights;
    state = out.state;
    REQUIRE(torch::allclose(state.tensors.at(0), coverage, 1e-12, 1e-14));
  }
  REQUIRE(expected_loss > 0);
  const auto full = torch::full({2}, 4, torch::kLong);
  REQUIRE(attention->take_auxiliary_loss(torch::zeros({2}, kDouble), full).item<double>() ==
          Approx(0.5 * expected_loss).epsilon(1e-12));
  REQUIRE_FALSE(attention->take_auxiliary_loss(torch::zeros({2}, kDouble), full).defined());  // taken: reset
  // Padded target steps (t >= the sentence's target length) do not count.
  state = attention->initial_state(mem);
  for (int64_t t = 0; t < 4; ++t) state = attention->forward(queries[t], mem, state, t).state;
  REQUIRE(expected_short < expected_loss);
  REQUIRE(attention->take_auxiliary_loss(torch::zeros({2}, kDouble), torch::tensor({4, 2}, torch::kLong))
              .item<double>() == Approx(0.5 * expected_short).epsilon(1e-12));
  // The coverage term enters the score: the same query with another coverage scores differently.
  auto q = torch::randn({2, 4}, kDouble);
  auto fresh = attention->forward(q, mem, attention->initial_state(mem), 0);
  auto covered = attention->forward(q, mem, state, 0);
  REQUIRE_FALSE(torch::allclose(fresh.weights, covered.weights));
}

TEST_CASE("coverage is refused for scores other than concat", "[attention][coverage]") {
  auto config = config_of("luong_general");
  config.coverage = true;
  REQUIRE_THROWS_AS(make_attention(config, 4, 4), InputError);
}

TEST_CASE("multi_head with one head and identity projections equals scaled_dot", "[attention][multi_head]") {
  torch::manual_seed(11);
  auto config = config_of("multi_head");
  config.heads = 1;
  auto multi = make(config, 4, 4);
  {
    torch::NoGradGuard no_grad;
    for (auto& param : multi->named_parameters()) param.value().copy_(torch::eye(4, kDouble));
  }
  auto scaled = make(config_of("scaled_dot"), 4, 4);
  auto memory = torch::randn({3, 6, 4}, kDouble);
  auto mask = mask_of({6, 2, 5}, 6);
  auto query = torch::randn({3, 4}, kDouble);
  auto a = multi->forward(query, multi->prepare(memory, mask), {}, 0);
  auto b = scaled->forward(query, scaled->prepare(memory, mask), {}, 0);
  REQUIRE(torch::allclose(a.weights, b.weights, 1e-12, 1e-14));
  REQUIRE(torch::allclose(a.context, b.context, 1e-12, 1e-14));
}

TEST_CASE("multi_head reports the mean of its heads' weights", "[attention][multi_head]") {
  torch::manual_seed(12);
  auto config = config_of("multi_head");
  config.heads = 2;
  auto multi = make(config, 4, 6);
  auto memory = torch::randn({1, 5, 6}, kDouble);
  auto mask = mask_of({5}, 5);
  auto query = torch::randn({1, 4}, kDouble);
  auto out = multi->forward(query, multi->prepare(memory, mask), {}, 0);
  // By hand: per-head projections are the row blocks of W_q, W_k, W_v.
  const auto [wq, wk, wv, wo] = projections(*multi);
  auto q = torch::matmul(wq, query[0]);  // [4]
  auto k = torch::matmul(memory[0], wk.t());  // [5, 4]
  auto v = torch::matmul(memory[0], wv.t());  // [5, 6]
  torch::Tensor mean = torch::zeros({5}, kDouble);
  std::vector<torch::Tensor> heads;
  for (int64_t h = 0; h < 2; ++h) {
    auto e = torch::matmul(k.narrow(1, 2 * h, 2), q.narrow(0, 2 * h, 2)) / std::sqrt(2.0);
    auto w = torch::softmax(e, 0);
    mean = mean + w / 2.0;
    heads.push_back(torch::matmul(w, v.narrow(1, 3 * h, 3)));
  }
  REQUIRE(torch::allclose(out.weights[0], mean, 1e-12, 1e-14));
  REQUIRE(torch::allclose(out.context[0], torch::matmul(wo, torch::cat(heads)), 1e-12, 1e-14));
}

// Each of the 16 keep/drop masks of a head's 4 weights, scaled as inverted dropout keeps them:
// the one whose weighted sum of the head's values is `out` (within rounding), or an empty tensor.
torch::Tensor dropped_weights(const torch::Tensor& weights, const torch::Tensor& values, const torch::Tensor& out,
                              double p) {
  for (int mask = 0; mask < 16; ++mask) {
    auto w = weights.clone();
    for (int64_t i = 0; i < 4; ++i) w[i] = (mask >> i & 1) ? weights[i] / (1 - p) : torch::zeros({}, kDouble);
    if (torch::allclose(torch::matmul(w, values), out, 1e-9, 1e-11)) return w;
  }
  return {};
}

TEST_CASE("multi_head: attention dropout drops each head's weights while training, none when decoding",
          "[attention][multi_head]") {
  torch::manual_seed(14);
  auto config = config_of("multi_head");
  config.heads = 2;
  config.dropout = 0.5;
  auto multi = make(config, 4, 6);  // in eval mode
  auto memory = torch::randn({1, 4, 6}, kDouble);
  auto mem = multi->prepare(memory, mask_of({4}, 4));
  auto query = torch::randn({1, 4}, kDouble);
  const auto decoding = multi->forward(query, mem, {}, 0);
  const auto [wq, wk, wv, wo] = projections(*multi);
  // Each head's weights and values by hand, as in the test above.
  auto q = torch::matmul(wq, query[0]);
  auto k = torch::matmul(memory[0], wk.t());
  auto v = torch::matmul(memory[0], wv.t());
  std::vector<torch::Tensor> weights, values;
  for (int64_t h = 0; h < 2; ++h) {
    weights.push_back(torch::softmax(torch::matmul(k.narrow(1, 2 * h, 2), q.narrow(0, 2 * h, 2)) / std::sqrt(2.0), 0));
    values.push_back(v.narrow(1, 3 * h, 3));
  }
  const auto full = torch::cat({torch::matmul(weights[0], values[0]), torch::matmul(weights[1], values[1])});
  REQUIRE(torch::allclose(decoding.context[0], torch::matmul(wo, full), 1e-12, 1e-14));  // nothing dropped

  multi->train();
  const int draws = 400;
  int64_t kept = 0, differed = 0;
  for (int d = 0; d < draws; ++d) {
    auto out = multi->forward(query, mem, {}, 0);
    REQUIRE(torch::allclose(out.weights, decoding.weights, 1e-12, 1e-14));  // reported before dropout
    // W_o is square: its inverse recovers the heads' joined outputs from the context.
    auto joined = torch::linalg::solve(wo, out.context[0].unsqueeze(1), true).squeeze(1);
    for (int64_t h = 0; h < 2; ++h) {
      auto w = dropped_weights(weights[h], values[h], joined.narrow(0, 3 * h, 3), 0.5);
      REQUIRE(w.defined());  // each weight either dropped or kept and scaled by 1 / (1 - p)
      kept += (w != 0).sum().item<int64_t>();
    }
    if (!torch::allclose(out.context, decoding.context, 1e-9, 1e-11)) ++differed;
  }
  // 3,200 weights, each kept with probability 0.5: 1,600 +- 28 (one standard deviation).
  CHECK(kept > 1450);
  CHECK(kept < 1750);
  CHECK(differed > draws * 9 / 10);  // all 8 weights kept (1 in 256) is the only way to match
}

TEST_CASE("key_value scores the first half of each direction and reads the second", "[attention][key_value]") {
  torch::manual_seed(13);
  auto config = config_of("key_value");
  config.score = "dot";
  auto attention = make(config, 4, 8);  // memory [forward 4; backward 4]
  REQUIRE(attention->context_size() == 4);
  auto memory = torch::randn({2, 4, 8}, kDouble);
  auto mask = mask_of({4, 3}, 4);
  auto query = torch::randn({2, 4}, kDouble);
  auto out = attention->forward(query, attention->prepare(memory, mask), {}, 0);
  // keys: forward[0:2] and backward[0:2]; values: forward[2:4] and backward[2:4].
  auto keys = torch::cat({memory.narrow(2, 0, 2), memory.narrow(2, 4, 2)}, 2);
  auto values = torch::cat({memory.narrow(2, 2, 2), memory.narrow(2, 6, 2)}, 2);
  auto expected = masked_softmax((keys * query.unsqueeze(1)).sum(2), mask);
  REQUIRE(torch::allclose(out.weights, expected, 1e-12, 1e-14));
  REQUIRE(torch::allclose(out.context, (expected.unsqueeze(2) * values).sum(1), 1e-12, 1e-14));
  // A value unit never changes the weights; a key unit never enters the context directly.
  auto moved = memory.clone();
  moved.narrow(2, 6, 2).add_(3.0);  // backward value units
  auto again = attention->forward(query, attention->prepare(moved, mask), {}, 0);
  REQUIRE(torch::allclose(again.weights, out.weights, 0, 0));
  config.score = "general";
  REQUIRE_THROWS_WITH(make(config, 4, 6), Catch::Contains("multiple of 4"));
}

TEST_CASE("static attention: one alpha per sentence from its first and last states", "[attention][static]") {
  torch::manual_seed(14);
  auto attention = make(config_of("static"), 4, 4);
  auto memory = torch::randn({2, 5, 4}, kDouble);
  auto mask = mask_of({5, 3}, 5);
  auto mem = attention->prepare(memory, mask);
  auto a = attention->forward(torch::randn({2, 4}, kDouble), mem, {}, 0);
  auto b = attention->forward(torch::randn({2, 4}, kDouble), mem, {}, 7);
  REQUIRE(torch::allclose(a.weights, b.weights, 0, 0));
  REQUIRE(torch::allclose(a.context, b.context, 0, 0));
  torch::Tensor wu = attention->named_parameters()["w_u.weight"];
  for (int64_t s = 0; s < 2; ++s) {
    const int64_t len = s == 0 ? 5 : 3;
    auto u = torch::matmul(wu, torch::cat({memory[s][len - 1], memory[s][0]}));
    auto expected = torch::softmax(torch::matmul(memory[s].narrow(0, 0, len), u), 0);
    REQUIRE(torch::allclose(a.weights[s].narrow(0, 0, len), expected, 1e-12, 1e-14));
  }
}

TEST_CASE("area attention: mean keys and summed values over spans of 1..A", "[attention][area]") {
  torch::manual_seed(15);
  auto config = config_of("area");
  config.max_area = 2;
  config.score = "dot";
  auto attention = make(config, 3, 3);
  auto memory = torch::randn({1, 4, 3}, kDouble);
  auto mask = mask_of({3}, 4);  // real positions 0..2: areas {0},{1},{2},{0,1},{1,2}
  auto query = torch::randn({1, 3}, kDouble);
  auto out = attention->forward(query, attention->prepare(memory, mask), {}, 0);
  auto h = memory[0];
  std::vector<std::vector<int64_t>> areas = {{0}, {1}, {2}, {0, 1}, {1, 2}};
  std::vector<double> e;
  double total = 0;
  for (const auto& area : areas) {
    auto key = torch::zeros({3}, kDouble);
    for (auto i : area) key = key + h[i] / static_cast<double>(area.size());
    e.push_back(std::exp(torch::dot(key, query[0]).item<double>()));
    total += e.back();
  }
  auto context = torch::zeros({3}, kDouble);
  std::vector<double> spread(4, 0.0);
  for (size_t a = 0; a < areas.size(); ++a) {
    for (auto i : areas[a]) {
      context = context + (e[a] / total) * h[i];
      spread[i] += e[a] / total / static_cast<double>(areas[a].size());
    }
  }
  REQUIRE(torch::allclose(out.context[0], context, 1e-12, 1e-14));
  for (int64_t i = 0; i < 4; ++i) REQUIRE(out.weights[0][i].item<double>() == Approx(spread[i]).epsilon(1e-10).margin(1e-15));
  REQUIRE(out.weights[0][3].item<double>() == 0.0);
}

TEST_CASE("hard attention: argmax when decoding, half the sentences sampled, REINFORCE on the score only",
          "[attention][hard]") {
  torch::manual_seed(16);
  auto config = config_of("hard");
  config.score = "general";
  auto attention = make(config, 3, 3);
  const int64_t N = 4000;
  auto memory = torch::randn({1, 4, 3}, kDouble).expand({N, 4, 3}).contiguous();
  auto mask = mask_of(std::vector<int64_t>(N, 3), 4);
  auto query = torch::randn({1, 3}, kDouble).expand({N, 3}).contiguous().set_requires_grad(true);
  auto w_a = attention->named_parameters()["w_a.weight"].detach();  // [Dq, Dm]
  auto alpha_of = [&](const torch::Tensor& q) {
    return masked_softmax((torch::matmul(memory, w_a.t()) * q.unsqueeze(1)).sum(2), mask);  // [N, 4]
  };
  auto alpha = alpha_of(query.detach());
  auto mem = attention->prepare(memory, mask);

  auto decoded = attention->forward(query, mem, {}, 0);
  REQUIRE(decoded.weights[0].argmax().item<int64_t>() == alpha[0].argmax().item<int64_t>());
  REQUIRE(decoded.weights.sum(1).min().item<double>() == 1.0);
  REQUIRE(torch::allclose(decoded.context[0], memory[0][alpha[0].argmax().item<int64_t>()]));

  attention->train();
  auto out = attention->forward(query, mem, {}, 0);
  auto weights = out.weights.detach();
  // A sampled row reports one-hot weights and the chosen state; the others alpha and sum_i alpha_i h_i.
  auto sampled = std::get<0>(weights.max(1)).eq(1.0);  // [N] (alpha has no weight of 1 here)
  REQUIRE(alpha.max().item<double>() < 0.99);
  const double share = sampled.to(kDouble).mean().item<double>();
  REQUIRE(share == Approx(1 - HardAttention::kExpectedValueShare).margin(0.03));
  auto k = weights.argmax(1);
  for (int64_t n = 0; n < 200; ++n) {
    INFO("row " << n);
    if (sampled[n].item<bool>()) {
      REQUIRE(torch::allclose(out.context[n], memory[0][k[n].item<int64_t>()]));
    } else {
      REQUIRE(torch::allclose(weights[n], alpha[n]));
      REQUIRE(torch::allclose(out.context[n], torch::matmul(alpha[n], memory[0])));
    }
  }
  auto frequency = weights.masked_select(sampled.unsqueeze(1)).view({-1, 4}).mean(0);  // [4]
  for (int64_t i = 0; i < 4; ++i) {
    INFO("position " << i);
    REQUIRE(frequency[i].item<double>() == Approx(alpha[0][i].item<double>()).margin(0.03));
  }
  REQUIRE(frequency[3].item<double>() == 0.0);  // padding is never sampled
  // The surrogate loss by hand: baseline = mean reward on the first batch, the advantage divided by
  // the batch's standard deviation, log-probabilities of the sampled rows only.
  auto reward = torch::linspace(-3.0, -1.0, N, kDouble);
  auto log_alpha = alpha.clamp_min(1e-30).log();
  auto log_prob = log_alpha.gather(1, k.unsqueeze(1)).squeeze(1) * sampled.to(kDouble);
  auto entropy = -(alpha * log_alpha).sum(1);
  auto advantage = (reward - reward.mean()) / (reward.std().item<double>() + 1e-6);
  const double expected = (-(advantage * log_prob).sum() - HardAttention::kEntropyBonus * entropy.sum()).item<double>();
  auto loss = attention->take_auxiliary_loss(reward, torch::ones({N}, torch::kLong));
  REQUIRE(loss.item<double>() == Approx(expected).epsilon(1e-9));
  loss.backward();
  auto grad = attention->named_parameters()["w_a.weight"].grad();
  REQUIRE(grad.defined());
  REQUIRE(grad.abs().sum().item<double>() > 0.0);
  // The REINFORCE term does not reach the decoder state: the query's gradient is the entropy bonus's.
  auto q = query.detach().clone().set_requires_grad(true);
  auto a = alpha_of(q);
  (HardAttention::kEntropyBonus * (a * a.clamp_min(1e-30).log()).sum()).backward();
  REQUIRE(torch::allclose(query.grad(), q.grad(), 1e-9, 1e-12));
}

TEST_CASE("forward attention follows Zhang et al.'s recursion and moves one step at most", "[attention][forward]") {
  torch::manual_seed(17);
  auto config = config_of("forward");
  config.score = "dot";
  auto attention = make(config, 3, 3);
  auto memory = torch::randn({2, 6, 3}, kDouble);
  auto mask = mask_of({6, 4}, 6);
  auto mem = attention->prepare(memory, mask);
  auto state = attention->initial_state(mem);
  for (int64_t t = 0; t < 5; ++t) {
    auto query = torch::randn({2, 3}, kDouble);
    auto previous = state.tensors.at(0);
    auto u = state.tensors.at(1);
    auto out = attention->forward(query, mem, state, t);
    auto y = masked_softmax((memory * query.unsqueeze(1)).sum(2), mask);
    for (int64_t b = 0; b < 2; ++b) {
      std::vector<double> hat(6);
      double total = 0;
      const double ub = u[b][0].item<double>();
      for (int64_t i = 0; i < 6; ++i) {
        const double left = i > 0 ? previous[b][i - 1].item<double>() : 0.0;
        hat[i] = ((1 - ub) * previous[b][i].item<double>() + ub * left) * y[b][i].item<double>();
        total += hat[i];
      }
      for (int64_t i = 0; i < 6; ++i) {
        INFO("t " << t << " b " << b << " i " << i);
        REQUIRE(out.weights[b][i].item<double>() == Approx(hat[i] / total).epsilon(1e-10).margin(1e-15));
        // Reachable only from positions <= t: nothing beyond t + 1 (alpha_0 at position 0).
        if (i > t + 1) REQUIRE(out.weights[b][i].item<double>() == 0.0);
      }
    }
    state = out.state;
  }
}
