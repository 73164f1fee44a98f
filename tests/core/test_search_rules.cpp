// The rules every search follows (decode.min_length, max_length, no_repeat_ngram_size, forced
// prefixes) against hand-written step models (step_models.h), each checked by hand.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "decoding/search.h"
#include "decoding/token_rules.h"
#include "step_models.h"

using namespace attnmt;
using namespace attnmt::test;

namespace {

// After bos: a .6, b .4. After a: eos .5, a .2, b .3. After b: eos .9, a .06, b .04.
BigramModel short_ends() {
  return BigramModel({{2, {0, 0, 0, 0, 0.6, 0.4}}, {4, {0, 0, 0, 0.5, 0.2, 0.3}}, {5, {0, 0, 0, 0.9, 0.06, 0.04}}});
}

// a is always likeliest: after bos a .9, b .1; after a: a .7, eos .2, b .1; after b: eos 1.
BigramModel repeats() {
  return BigramModel({{2, {0, 0, 0, 0, 0.9, 0.1}}, {4, {0, 0, 0, 0.2, 0.7, 0.1}}, {5, {0, 0, 0, 1.0, 0, 0}}});
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
    auto o = unnormalised(beam);
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
    auto o = unnormalised(beam);
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
  auto o = unnormalised(1);
  o.max_length_ratio = 3;  // 11 tokens
  auto out = search(model, source(1), lengths(1), o);
  CHECK(out[0][0].tokens == std::vector<int64_t>(11, a));  // greedy: a a a ... cut
  o.no_repeat_ngram_size = 2;  // "a a" once: a a, then a would repeat it -> eos .2 (b .1)
  out = search(model, source(1), lengths(1), o);
  CHECK(out[0][0].tokens == std::vector<int64_t>{a, a});
  CHECK(out[0][0].log_prob == Approx(std::log(0.9 * 0.7 * 0.2)).epsilon(1e-6));
  for (int beam : {1, 2}) {
    o = unnormalised(beam);
    o.no_repeat_ngram_size = 1;  // no token twice: a, then eos .2 beats b .1 (then eos: .01)
    out = search(model, source(1), lengths(1), o);
    CHECK(out[0][0].tokens == std::vector<int64_t>{a});
    CHECK(out[0][0].log_prob == Approx(std::log(0.9 * 0.2)).epsilon(1e-6));
  }
  // Beam 3, 3-best, bigrams: no hypothesis holds a bigram twice.
  o = unnormalised(3);
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
  auto o = unnormalised(1);
  o.no_repeat_ngram_size = 1;
  auto out = search(two, source(1), lengths(1), o);
  CHECK(out[0][0].tokens == std::vector<int64_t>{a, b});  // a (first of a tie), then b
  CHECK_FALSE(out[0][0].finished);
  CHECK(out[0][0].log_prob == Approx(2 * std::log(0.5)).epsilon(1e-6));
  o = unnormalised(2);
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
    auto o = unnormalised(beam);
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
