// Random sampling (decode.sampling, temperature, top_k, top_p, epsilon, seed) against a
// hand-written step model (step_models.h): the draws' shares against the probabilities by hand.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "decoding/search.h"
#include "step_models.h"

using namespace attnmt;
using namespace attnmt::test;

namespace {

}  // namespace

TEST_CASE("sampling draws from the model's distribution, tempered and cut as asked", "[search][sampling]") {
  auto model = garden_path();
  auto o = unnormalised(1);
  o.sampling = true;
  o.n_best = 4000;
  // The share of samples that are exactly `tokens`.
  auto share = [&](const SearchOptions& options, const std::vector<int64_t>& tokens) {
    const auto out = search(model, source(1), lengths(1), options);
    REQUIRE(out[0].size() == static_cast<size_t>(options.n_best));
    double hits = 0;
    for (const auto& h : out[0]) hits += h.tokens == tokens;
    return hits / options.n_best;
  };
  // 4,000 samples: a share's standard deviation is <= 0.008; 0.04 is 5 of them.
  CHECK(share(o, {b}) == Approx(0.36).margin(0.04));
  CHECK(share(o, {a}) == Approx(0.24).margin(0.04));
  CHECK(share(o, {a, a}) == Approx(0.6 * 0.3 * 0.4).margin(0.04));
  auto cold = o;
  cold.temperature = 0.5;  // p^2, renormalised: first token a .36 / (.36 + .16)
  auto out = search(model, source(1), lengths(1), cold);
  double first_a = 0;
  for (const auto& h : out[0]) first_a += h.tokens.at(0) == a;
  CHECK(first_a / cold.n_best == Approx(0.36 / 0.52).margin(0.04));
  auto top1 = o;
  top1.top_k = 1;  // always the likeliest: a, then eos
  CHECK(share(top1, {a}) == 1.0);
  auto nucleus = o;
  nucleus.top_p = 0.5;  // first: a alone (.6 >= .5); after a: eos .4 + a .3 (a before b on the tie)
  CHECK(share(nucleus, {a}) == Approx(0.4 / 0.7).margin(0.04));
  CHECK(share(nucleus, {a, b}) == 0.0);
  auto eps = o;
  eps.epsilon = 0.1;  // after b: eos alone (a and b .05 are cut); after bos and after a nothing is cut
  CHECK(share(eps, {b}) == Approx(0.4).margin(0.04));
  CHECK(share(eps, {a}) == Approx(0.24).margin(0.04));
  eps.epsilon = 0.35;  // after a: eos alone (.4; a and b .3 are cut)
  CHECK(share(eps, {a}) == Approx(0.6).margin(0.04));
  CHECK(share(eps, {a, a}) + share(eps, {a, b}) == 0.0);
  eps.epsilon = 0.95;  // above every token's probability: the likeliest alone, a then eos
  CHECK(share(eps, {a}) == 1.0);
  // A sample's score is its log-probability under the model (not the tempered one).
  const auto cold_samples = search(model, source(1), lengths(1), cold);  // kept: [0] of a temporary would dangle
  for (const auto& h : cold_samples[0]) {
    if (h.tokens == std::vector<int64_t>{b}) CHECK(h.log_prob == Approx(std::log(0.36)).epsilon(1e-6));
  }
}

TEST_CASE("sampling is reproducible for a seed, whatever the batch", "[search][sampling]") {
  auto model = garden_path();
  auto o = unnormalised(1);
  o.sampling = true;
  o.n_best = 20;
  auto tokens = [](const std::vector<Hypothesis>& hs) {
    std::vector<std::vector<int64_t>> out;
    for (const auto& h : hs) out.push_back(h.tokens);
    return out;
  };
  Guides alone(1);
  alone[0].id = 7;
  Guides batch(3);
  batch[0].id = 3;
  batch[1].id = 7;
  batch[2].id = 9;
  const auto x = tokens(search(model, source(1), lengths(1), o, alone)[0]);
  CHECK(tokens(search(model, source(1), lengths(1), o, alone)[0]) == x);
  CHECK(tokens(search(model, source(3), lengths(3), o, batch)[1]) == x);  // line 7 in another batch
  CHECK(tokens(search(model, source(3), lengths(3), o, batch)[0]) != x);  // another line
  o.seed = 2;
  CHECK(tokens(search(model, source(1), lengths(1), o, alone)[0]) != x);
}

TEST_CASE("sampling: log-probabilities that differ by rounding alone draw the same tokens", "[search][sampling]") {
  // a and b tie but for 2e-6 either way, a difference that another batch size or BLAS can make. A
  // cut sorts the pool by likelihood; a draw walking that order would give most samples the other
  // token of the two.
  auto tie = [](double pa, double pb) {
    return BigramModel({{2, {0, 0, 0, 0.1, pa, pb}}, {4, {0, 0, 0, 1.0, 0, 0}}, {5, {0, 0, 0, 1.0, 0, 0}}});
  };
  auto a_first = tie(0.450002, 0.449998), b_first = tie(0.449998, 0.450002);
  // One sample for each of 200 lines (a search returns a line's samples best first, so one each
  // keeps them apart).
  auto o = unnormalised(1);
  o.sampling = true;
  Guides lines(200);
  for (size_t i = 0; i < lines.size(); ++i) lines[i].id = i;
  for (const std::string cut : {"top_k", "top_p"}) {
    auto options = o;
    if (cut == "top_k") options.top_k = 2;  // a and b
    else options.top_p = 0.8;               // a and b (.45 + .45)
    const auto x = search(a_first, source(200), lengths(200), options, lines);
    const auto y = search(b_first, source(200), lengths(200), options, lines);
    int same = 0, starts_with_a = 0;
    for (size_t i = 0; i < 200; ++i) {
      same += x[i][0].tokens == y[i][0].tokens;
      starts_with_a += x[i][0].tokens.at(0) == a;
    }
    INFO(cut);
    CHECK(same == 200);
    CHECK(starts_with_a > 70);  // both drawn, about half each
    CHECK(starts_with_a < 130);
  }
}
