// Minimum Bayes risk reordering (decoding/mbr.h) against hand-computed expectations.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "decoding/mbr.h"
#include "eval/metrics.h"

using namespace attnmt;

namespace {

// sentence BLEU("a b c d", "a b c e"): precisions 3/4, 2/3, 1/2 and, with no 4-gram match, the
// exp smoothing's 1 / (2 * 1); brevity penalty 1.
const double kNearBleu = 100.0 * std::pow(0.75 * (2.0 / 3.0) * 0.5 * 0.5, 0.25);

}  // namespace

TEST_CASE("mbr: expected sentence BLEU, weighted by the model or uniform", "[mbr]") {
  REQUIRE(kNearBleu == Approx(59.4604).epsilon(1e-5));
  CHECK(bleu_from_stats(bleu_sentence_stats("a b c d", "a b c e")).score == Approx(kNearBleu));

  const std::vector<std::string> texts{"x y z w", "a b c d", "a b c e"};
  // P = 0.4, 0.3, 0.3: the likeliest shares no word with the others.
  const std::vector<double> log_probs{std::log(0.4), std::log(0.3), std::log(0.3)};
  auto e = mbr_expected_utility(texts, log_probs, false, MbrMetric::bleu);
  REQUIRE(e.size() == 3);
  CHECK(e[0] == Approx(0.4 * 100.0));
  CHECK(e[1] == Approx(0.3 * 100.0 + 0.3 * kNearBleu));
  CHECK(e[2] == Approx(e[1]));
  // Log-probabilities need not be normalised: only their differences count.
  auto shifted = mbr_expected_utility(texts, {log_probs[0] - 50, log_probs[1] - 50, log_probs[2] - 50}, false,
                                      MbrMetric::bleu);
  for (size_t i = 0; i < 3; ++i) CHECK(shifted[i] == Approx(e[i]));
  // Uniform (samples): the model's probabilities are ignored.
  e = mbr_expected_utility(texts, log_probs, true, MbrMetric::bleu);
  CHECK(e[0] == Approx(100.0 / 3));
  CHECK(e[1] == Approx((100.0 + kNearBleu) / 3));

  // chrF: each pair as sacreBLEU's corpus chrF of one sentence.
  e = mbr_expected_utility(texts, log_probs, true, MbrMetric::chrf);
  for (size_t i = 0; i < 3; ++i) {
    double sum = 0;
    for (const auto& ref : texts) sum += corpus_chrf({texts[i]}, {ref}).score;
    CHECK(e[i] == Approx(sum / 3));
  }
}

TEST_CASE("mbr: the list reordered by expected utility, which becomes the score", "[mbr]") {
  std::vector<Translation> list(4);
  const std::vector<std::string> texts{"x y z w", "a b c d", "a b c e", "a b c d"};
  const std::vector<double> probs{0.4, 0.2, 0.25, 0.15};
  for (size_t i = 0; i < list.size(); ++i) {
    list[i].text = texts[i];
    list[i].log_prob = std::log(probs[i]);
    list[i].score = -1.0 - static_cast<double>(i);
  }
  mbr_rerank(list, false, MbrMetric::bleu);
  // "a b c d": 0.35 * 100 + 0.25 * BLEU(d, e); "a b c e": 0.25 * 100 + 0.35 * BLEU(e, d) (the
  // same BLEU); the two "a b c d" tie and keep the search's order; the likeliest, unlike the
  // rest, comes last.
  REQUIRE(list.size() == 4);
  CHECK(list[0].text == "a b c d");
  CHECK(list[0].log_prob == Approx(std::log(0.2)));
  CHECK(list[1].text == "a b c d");
  CHECK(list[1].log_prob == Approx(std::log(0.15)));
  CHECK(list[2].text == "a b c e");
  CHECK(list[3].text == "x y z w");
  CHECK(list[0].score == Approx(0.35 * 100 + 0.25 * kNearBleu));
  CHECK(list[1].score == list[0].score);
  CHECK(list[2].score == Approx(0.25 * 100 + 0.35 * kNearBleu));
  CHECK(list[3].score == Approx(40.0));
  // Uniform: "a b c d" is twice in the list, so it leads with (2 * 100 + BLEU) / 4.
  mbr_rerank(list, true, MbrMetric::bleu);
  CHECK(list[0].text == "a b c d");
  CHECK(list[0].score == Approx((200.0 + kNearBleu) / 4));
  CHECK(list[2].score == Approx((100.0 + 2 * kNearBleu) / 4));
  CHECK(list[3].score == Approx(25.0));

  std::vector<Translation> empty;
  mbr_rerank(empty, false, MbrMetric::chrf);
  CHECK(empty.empty());
}
