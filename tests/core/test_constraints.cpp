// Lexically constrained decoding (decoding/constraints.h) against hand-written step models: the
// constraint bookkeeping, the bank sizes, and outputs that hold every phrase, scored as the model
// scores them.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "decoding/constraints.h"
#include "decoding/search.h"
#include "step_models.h"

using namespace attnmt;
using namespace attnmt::test;

namespace {

constexpr int64_t eos = 3;

// garden_path()'s table: after bos a .6, b .4; after a eos .4, a .3, b .3; after b eos .9, a .05, b .05.
const std::map<int64_t, std::vector<double>> kTable{
    {2, {0, 0, 0, 0, 0.6, 0.4}}, {4, {0, 0, 0, 0.4, 0.3, 0.3}}, {5, {0, 0, 0, 0.9, 0.05, 0.05}}};

// log P(tokens, eos if finished) under kTable, by hand.
double log_prob_of(const std::vector<int64_t>& tokens, bool finished) {
  double lp = 0;
  int64_t prev = 2;
  for (int64_t t : tokens) {
    lp += std::log(kTable.at(prev)[t]);
    prev = t;
  }
  return finished ? lp + std::log(kTable.at(prev)[eos]) : lp;
}

bool contains(const std::vector<int64_t>& tokens, const std::vector<int64_t>& phrase) {
  return std::search(tokens.begin(), tokens.end(), phrase.begin(), phrase.end()) != tokens.end();
}

std::vector<Hypothesis> decode(const Phrases& phrases, const SearchOptions& o) {
  auto model = garden_path();
  Guides guides(1);
  guides[0].constraints = phrases;
  return search(model, source(1), lengths(1), o, guides)[0];
}

}  // namespace

TEST_CASE("constraint state: progress, a phrase left half-done, a phrase met unprompted", "[search][constraints]") {
  const Phrases phrases{{7, 8, 9}, {6}};
  ConstraintState s(phrases);
  CHECK(s.met_tokens() == 0);
  CHECK(s.progress_tokens(phrases) == std::vector<int64_t>{7, 6});
  s = s.advance(phrases, 7).advance(phrases, 8);
  CHECK(s.met_tokens() == 2);
  CHECK(s.progress_tokens(phrases) == std::vector<int64_t>{9});  // only the phrase in progress
  auto left = s.advance(phrases, 6);  // leaves 7 8 half-done: its progress is undone, 6 is met
  CHECK(left.met_tokens() == 1);
  CHECK_FALSE(left.all_met());
  CHECK(left.progress_tokens(phrases) == std::vector<int64_t>{7});
  s = s.advance(phrases, 9);
  CHECK(s.met_tokens() == 3);
  CHECK(s.progress_tokens(phrases) == std::vector<int64_t>{6});
  s = s.advance(phrases, 6);
  CHECK(s.all_met());
  CHECK(s.met_tokens() == 4);
  CHECK(s.progress_tokens(phrases).empty());
}

TEST_CASE("bank sizes: beam / banks each, the remainder to the most advanced", "[search][constraints]") {
  CHECK(bank_sizes(5, 3) == std::vector<int64_t>{1, 2, 2});
  CHECK(bank_sizes(6, 3) == std::vector<int64_t>{2, 2, 2});
  CHECK(bank_sizes(2, 4) == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(bank_sizes(4, 1) == std::vector<int64_t>{4});
}

TEST_CASE("constrained search: every output holds every phrase, scored as the model scores it", "[search][constraints]") {
  // Without constraints beam 2 finds "b" (.36). By hand, the likeliest sequences holding
  //   {a}: "a" (.24);  {b b}: "b b" (.4 * .05 * .9 = .018);  {a} and {b}: "a b" (.6 * .3 * .9 = .162).
  const std::vector<std::pair<Phrases, std::vector<int64_t>>> cases{
      {{{a}}, {a}}, {{{b, b}}, {b, b}}, {{{a}, {b}}, {a, b}}, {{{b}, {a}}, {a, b}}};
  for (const auto& [phrases, best] : cases) {
    for (int beam : {1, 2, 3, 5}) {
      auto o = unnormalised(beam);
      o.n_best = beam;
      const auto out = decode(phrases, o);
      REQUIRE_FALSE(out.empty());
      if (beam >= 3) CHECK(out[0].tokens == best);
      for (const auto& h : out) {
        CHECK(h.finished);
        CHECK(h.constraints_met);
        for (const auto& p : phrases) CHECK(contains(h.tokens, p));
        // (a beam wider than the sequences the model allows fills up with tokens of probability ~0)
        if (h.log_prob > -1e8) CHECK(h.log_prob == Approx(log_prob_of(h.tokens, true)).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("constrained search: a phrase that cannot fit finishes unmet and says so", "[search][constraints]") {
  auto o = unnormalised(3);
  o.max_length = 2;
  const auto out = decode({{b, b, b}}, o);
  REQUIRE_FALSE(out.empty());
  CHECK_FALSE(out[0].constraints_met);
  CHECK_FALSE(out[0].finished);  // cut at the maximum length: eos is barred until the phrase is met
  CHECK(out[0].tokens.size() == 2);
}

TEST_CASE("constrained search: sentences without constraints in the batch, and attention rows", "[search][constraints]") {
  auto model = garden_path();
  auto o = unnormalised(2);
  o.return_attention = true;
  Guides guides(2);
  guides[1].constraints = {{b, b}};
  const auto out = search(model, source(2), lengths(2), o, guides);
  CHECK(out[0][0].tokens == std::vector<int64_t>{b});  // as unconstrained beam search finds it
  CHECK(out[1][0].tokens == std::vector<int64_t>{b, b});
  CHECK(out[1][0].attention.size() == 3);  // b, b, eos
}
