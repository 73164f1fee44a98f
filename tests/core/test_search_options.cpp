// decode.* search options against hand-written step models (step_models.h): min/max length,
// no_repeat_ngram_size, forced prefixes, sampling, and ensembles, each checked by hand.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "decoding/ensemble.h"
#include "decoding/search.h"
#include "decoding/token_rules.h"
#include "step_models.h"

using namespace attnmt;
using namespace attnmt::test;

namespace {

constexpr int64_t a = 4, b = 5;

// After bos: a .6, b .4. After a: eos .5, a .2, b .3. After b: eos .9, a .06, b .04.
BigramModel short_ends() {
  return BigramModel({{2, {0, 0, 0, 0, 0.6, 0.4}}, {4, {0, 0, 0, 0.5, 0.2, 0.3}}, {5, {0, 0, 0, 0.9, 0.06, 0.04}}});
}

// a is always likeliest: after bos a .9, b .1; after a: a .7, eos .2, b .1; after b: eos 1.
BigramModel repeats() {
  return BigramModel({{2, {0, 0, 0, 0, 0.9, 0.1}}, {4, {0, 0, 0, 0.2, 0.7, 0.1}}, {5, {0, 0, 0, 1.0, 0, 0}}});
}

SearchOptions plain(int beam) {
  SearchOptions o;
  o.beam_size = beam;
  o.length_penalty = 0;
  return o;
}

}  // namespace

TEST_CASE("token rules: the tokens that would repeat an n-gram", "[search][rules]") {
  const std::vector<int64_t> h{7, 8, 9, 7, 8};
  CHECK(TokenRules::repeating_tokens(h, 3) == std::vector<int64_t>{9});      // 7 8 9 seen; the context is 7 8
  CHECK(TokenRules::repeating_tokens(h, 2) == std::vector<int64_t>{9});      // 8 9 seen; the context is 8
  CHECK(TokenRules::repeating_tokens(h, 1) == std::vector<int64_t>{7, 8, 9, 7, 8});
  CHECK(TokenRules::repeating_tokens(h, 6).empty());
  CHECK(TokenRules::repeating_tokens({}, 2).empty());
}

TEST_CASE("min_length: no eos before N tokens, the other tokens' log-probabilities unchanged", "[search][rules]") {
  auto model = short_ends();
  for (int beam : {1, 2}) {
    auto o = plain(beam);
    auto out = search(model, source(1), lengths(1), o);
    CHECK(out[0][0].tokens == std::vector<int64_t>{beam == 1 ? a : b});  // greedy: a eos (.3); beam: b eos (.36)
    o.min_length = 2;
    out = search(model, source(1), lengths(1), o);
    // greedy: a (.6), eos barred -> b (.3), eos (.9); beam: "a b" .162 beats "a a" .06, "b a" .024...
    CHECK(out[0][0].tokens == std::vector<int64_t>{a, b});
    CHECK(out[0][0].log_prob == Approx(std::log(0.6 * 0.3 * 0.9)).epsilon(1e-6));
    CHECK(out[0][0].finished);
  }
}

TEST_CASE("max_length caps the tokens besides the ratio", "[search][rules]") {
  BigramModel loop({{2, {0, 0, 0, 0, 1.0, 0}}, {4, {0, 0, 0, 0, 1.0, 0}}});
  for (int beam : {1, 3}) {
    auto o = plain(beam);
    o.max_length = 3;
    auto out = search(loop, source(1), lengths(1), o);
    CHECK(out[0][0].tokens.size() == 3);
    CHECK_FALSE(out[0][0].finished);
    o.max_length = 100;  // the ratio's limit (2 * 2 + 5 = 9) is the smaller
    CHECK(search(loop, source(1), lengths(1), o)[0][0].tokens.size() == 9);
  }
}

TEST_CASE("no_repeat_ngram_size blocks repeated n-grams", "[search][rules]") {
  auto model = repeats();
  auto o = plain(1);
  o.max_length_ratio = 3;  // 11 tokens
  auto out = search(model, source(1), lengths(1), o);
  CHECK(out[0][0].tokens == std::vector<int64_t>(11, a));  // greedy: a a a ... cut
  o.no_repeat_ngram_size = 2;  // "a a" once: a a, then a would repeat it -> eos .2 (b .1)
  out = search(model, source(1), lengths(1), o);
  CHECK(out[0][0].tokens == std::vector<int64_t>{a, a});
  CHECK(out[0][0].log_prob == Approx(std::log(0.9 * 0.7 * 0.2)).epsilon(1e-6));
  for (int beam : {1, 2}) {
    o = plain(beam);
    o.no_repeat_ngram_size = 1;  // no token twice: a, then eos .2 beats b .1 (then eos: .01)
    out = search(model, source(1), lengths(1), o);
    CHECK(out[0][0].tokens == std::vector<int64_t>{a});
    CHECK(out[0][0].log_prob == Approx(std::log(0.9 * 0.2)).epsilon(1e-6));
  }
  // Beam 3, 3-best, bigrams: no hypothesis holds a bigram twice.
  o = plain(3);
  o.n_best = 3;
  o.no_repeat_ngram_size = 2;
  o.max_length_ratio = 3;
  out = search(model, source(1), lengths(1), o);
  REQUIRE(out[0].size() == 3);
  for (const auto& h : out[0]) {
    std::map<std::pair<int64_t, int64_t>, int> seen;
    for (size_t i = 0; i + 1 < h.tokens.size(); ++i) CHECK(++seen[{h.tokens[i], h.tokens[i + 1]}] == 1);
  }
}

TEST_CASE("a beam whose every candidate is blocked ends there, cut, not with a blocked token", "[search][rules]") {
  // Only a and b are scored (no eos column), .5 each: with no token twice, every hypothesis ends
  // after two tokens with nothing left to add.
  BigramModel two({{2, {0, 0, 0, 0, 0.5, 0.5}}, {4, {0, 0, 0, 0, 0.5, 0.5}}, {5, {0, 0, 0, 0, 0.5, 0.5}}}, {a, b});
  auto o = plain(1);
  o.no_repeat_ngram_size = 1;
  auto out = search(two, source(1), lengths(1), o);
  CHECK(out[0][0].tokens == std::vector<int64_t>{a, b});  // a (first of a tie), then b
  CHECK_FALSE(out[0][0].finished);
  CHECK(out[0][0].log_prob == Approx(2 * std::log(0.5)).epsilon(1e-6));
  o = plain(2);
  o.n_best = 2;
  o.no_repeat_ngram_size = 1;
  out = search(two, source(1), lengths(1), o);
  REQUIRE(out[0].size() == 2);
  for (const auto& h : out[0]) {
    CHECK(h.tokens.size() == 2);
    CHECK(h.tokens[0] != h.tokens[1]);
    CHECK_FALSE(h.finished);
  }
}

TEST_CASE("a prefix is forced, then search goes on, sentences without one are unchanged", "[search][rules]") {
  auto model = garden_path();  // greedy alone: "a" (.24); best: "b" (.36)
  for (int beam : {1, 2}) {
    auto o = plain(beam);
    Guides guides(2);
    guides[0].prefix = {b, b};  // b .4, b .05, then eos .9
    auto out = search(model, source(2), lengths(2), o, guides);
    CHECK(out[0][0].tokens == std::vector<int64_t>{b, b});
    CHECK(out[0][0].log_prob == Approx(std::log(0.4 * 0.05 * 0.9)).epsilon(1e-6));
    CHECK(out[1][0].tokens == std::vector<int64_t>{beam == 1 ? a : b});
    guides[1].prefix = {a};
    out = search(model, source(2), lengths(2), o, guides);
    CHECK(out[1][0].tokens == std::vector<int64_t>{a});
    CHECK(out[1][0].log_prob == Approx(std::log(0.6 * 0.4)).epsilon(1e-6));
  }
}

TEST_CASE("sampling draws from the model's distribution, tempered and cut as asked", "[search][sampling]") {
  auto model = garden_path();
  auto o = plain(1);
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
  auto o = plain(1);
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
  auto o = plain(1);
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

TEST_CASE("an ensemble takes the weighted mean of its members' log-probabilities", "[search][ensemble]") {
  auto m1 = garden_path();
  // After bos: a .2, b .8. After a: eos .9, a .05, b .05. After b: eos .5, a .25, b .25.
  BigramModel m2({{2, {0, 0, 0, 0, 0.2, 0.8}}, {4, {0, 0, 0, 0.9, 0.05, 0.05}}, {5, {0, 0, 0, 0.5, 0.25, 0.25}}});
  const std::map<int64_t, std::vector<double>> p1{{2, {0, 0, 0, 0, 0.6, 0.4}}, {4, {0, 0, 0, 0.4, 0.3, 0.3}}, {5, {0, 0, 0, 0.9, 0.05, 0.05}}};
  const std::map<int64_t, std::vector<double>> p2{{2, {0, 0, 0, 0, 0.2, 0.8}}, {4, {0, 0, 0, 0.9, 0.05, 0.05}}, {5, {0, 0, 0, 0.5, 0.25, 0.25}}};
  // Weights 1 and 3: 0.25 and 0.75 once normalised.
  auto combined = [&](int64_t prev, int64_t token) {
    return 0.25 * std::log(p1.at(prev)[token]) + 0.75 * std::log(p2.at(prev)[token]);
  };
  EnsembleStepModel ensemble({&m1, &m2}, {1.0, 3.0}, 6);
  // The step itself: log-probabilities, not renormalised.
  auto state = ensemble.start(source(1), lengths(1));
  auto r = ensemble.step(torch::full({1}, 2, torch::kLong), *state, false);
  CHECK(r.log_probs);
  CHECK(r.logits[0][a].item<double>() == Approx(combined(2, a)).epsilon(1e-5));
  CHECK(r.logits[0][b].item<double>() == Approx(combined(2, b)).epsilon(1e-5));
  // Greedy: b (-0.40 vs -1.33), then eos (-0.55 vs -1.79 for a or b).
  auto out = search(ensemble, source(2), lengths(2), plain(1));
  CHECK(out[0][0].tokens == std::vector<int64_t>{b});
  CHECK(out[0][0].log_prob == Approx(combined(2, b) + combined(b, 3)).epsilon(1e-5));
  // Beam 2 ranks every sequence by the combined scores: the best of "a", "b", "a a", ... by hand.
  auto o = plain(2);
  o.n_best = 2;
  out = search(ensemble, source(1), lengths(1), o);
  const double s_a = combined(2, a) + combined(a, 3), s_b = combined(2, b) + combined(b, 3);
  CHECK(out[0][0].tokens == std::vector<int64_t>{b});
  CHECK(out[0][0].score == Approx(s_b).epsilon(1e-5));
  CHECK(out[0][1].tokens == std::vector<int64_t>{a});
  CHECK(out[0][1].score == Approx(s_a).epsilon(1e-5));
  // One member of weight 1 is that member.
  EnsembleStepModel one({&m1}, {1.0}, 6);
  auto alone = search(m1, source(1), lengths(1), o);
  auto as_ensemble = search(one, source(1), lengths(1), o);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(as_ensemble[0][i].tokens == alone[0][i].tokens);
    CHECK(as_ensemble[0][i].score == Approx(alone[0][i].score).epsilon(1e-6));
  }
}

TEST_CASE("an ensemble member's shortlist: tokens outside it get -inf from it", "[search][ensemble]") {
  auto full = garden_path();
  BigramModel listed({{2, {0, 0, 0, 0, 0.6, 0.4}}, {4, {0, 0, 0, 0.4, 0.3, 0.3}}, {5, {0, 0, 0, 0.9, 0.05, 0.05}}},
                     {3, b});  // scores eos and b only
  EnsembleStepModel ensemble({&full, &listed}, {1.0, 1.0}, 6);
  auto state = ensemble.start(source(1), lengths(1));
  auto r = ensemble.step(torch::full({1}, 2, torch::kLong), *state, false);
  CHECK(std::isinf(r.logits[0][a].item<float>()));
  // b: the full member's log .4 and the listed one's log(.4 / (.4 + 1e-9-ish)) = log 1
  CHECK(r.logits[0][b].item<double>() == Approx(0.5 * std::log(0.4)).epsilon(1e-5));
  CHECK(search(ensemble, source(1), lengths(1), plain(1))[0][0].tokens == std::vector<int64_t>{b});
}
