// Ensembles (decoding/ensemble.h) of hand-written step models (step_models.h): the weighted mean of
// the members' log-probabilities, and a member's shortlist.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "decoding/ensemble.h"
#include "decoding/search.h"
#include "step_models.h"

using namespace attnmt;
using namespace attnmt::test;

namespace {

}  // namespace

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
  auto out = search(ensemble, source(2), lengths(2), unnormalised(1));
  CHECK(out[0][0].tokens == std::vector<int64_t>{b});
  CHECK(out[0][0].log_prob == Approx(combined(2, b) + combined(b, 3)).epsilon(1e-5));
  // Beam 2 ranks every sequence by the combined scores: the best of "a", "b", "a a", ... by hand.
  auto o = unnormalised(2);
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
  CHECK(search(ensemble, source(1), lengths(1), unnormalised(1))[0][0].tokens == std::vector<int64_t>{b});
}
