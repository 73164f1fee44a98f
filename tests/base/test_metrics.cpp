// BLEU and chrF against sacreBLEU 2.6.0 (tests/data/sacrebleu/expected.json), plus hand-checked
// 13a tokenization and edge cases.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/metrics.h"
#include "util/error.h"

namespace {

const std::string kDataDir = std::string(ATTNMT_TEST_DATA_DIR) + "/sacrebleu/";

std::vector<std::string> read_test_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

nlohmann::json read_expected() {
  std::ifstream in(kDataDir + "expected.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("BLEU and chrF equal sacreBLEU 2.6.0 on every stored case", "[metrics]") {
  const nlohmann::json expected = read_expected();
  REQUIRE(expected.at("cases").size() >= 8);
  for (const auto& c : expected.at("cases")) {
    const std::string name = c.at("case").get<std::string>();
    SECTION(name) {
      const auto hyps = read_test_lines(kDataDir + name + ".hyp");
      const auto refs = read_test_lines(kDataDir + name + ".ref");
      const attnmt::BleuResult bleu = attnmt::corpus_bleu(hyps, refs);
      CHECK(bleu.score == Approx(c.at("bleu").get<double>()).margin(0.01));
      CHECK(bleu.counts == c.at("counts").get<std::vector<long>>());
      CHECK(bleu.totals == c.at("totals").get<std::vector<long>>());
      CHECK(bleu.bp == Approx(c.at("bp").get<double>()).margin(1e-5));
      CHECK(bleu.sys_len == c.at("sys_len").get<long>());
      CHECK(bleu.ref_len == c.at("ref_len").get<long>());
      const attnmt::ChrfResult chrf = attnmt::corpus_chrf(hyps, refs);
      CHECK(chrf.score == Approx(c.at("chrf").get<double>()).margin(0.01));
    }
  }
}

TEST_CASE("signatures follow sacreBLEU's, without its version", "[metrics]") {
  const nlohmann::json expected = read_expected();
  const auto strip_version = [](std::string s) { return s.substr(0, s.rfind("|version:")); };
  CHECK(attnmt::BleuResult{}.signature() == strip_version(expected.at("bleu_signature")));
  CHECK(attnmt::ChrfResult{}.signature() == strip_version(expected.at("chrf_signature")));
}

TEST_CASE("13a tokenization, hand-checked", "[metrics][tokenize]") {
  using attnmt::tokenize_13a;
  CHECK(tokenize_13a("") == "");
  CHECK(tokenize_13a("   ") == "");
  CHECK(tokenize_13a("Hello world") == "Hello world");
  CHECK(tokenize_13a("  two   spaces\there ") == "two spaces here");
  // Quotes and brackets are tokens; the apostrophe is not split.
  CHECK(tokenize_13a("He said \"hi\" (twice).") == "He said \" hi \" ( twice ) .");
  CHECK(tokenize_13a("It's a dog's life") == "It's a dog's life");
  // HTML entities, replaced in order: &quot; &amp; &lt; &gt;.
  CHECK(tokenize_13a("&quot;x&quot;") == "\" x \"");
  CHECK(tokenize_13a("A &amp; B") == "A & B");
  CHECK(tokenize_13a("a&lt;b&gt;c") == "a < b > c");
  CHECK(tokenize_13a("&amp;lt;") == "<");
  CHECK(tokenize_13a("x <skipped> y") == "x y");
  // Period and comma stay inside numbers, split elsewhere.
  CHECK(tokenize_13a("1,000.5") == "1,000.5");
  CHECK(tokenize_13a("costs 1,000.5 euros.") == "costs 1,000.5 euros .");
  CHECK(tokenize_13a("end.") == "end .");
  CHECK(tokenize_13a("a,b") == "a , b");
  CHECK(tokenize_13a("x.y") == "x . y");
  CHECK(tokenize_13a("5.") == "5 .");
  CHECK(tokenize_13a(".5") == ". 5");  // preceded by the padding space
  CHECK(tokenize_13a("etc...") == "etc . . .");
  // Hyphen: split only after a digit.
  CHECK(tokenize_13a("3-4") == "3 - 4");
  CHECK(tokenize_13a("well-known") == "well-known");
  CHECK(tokenize_13a("a-3") == "a-3");
  CHECK(tokenize_13a("$5 or 50%!") == "$ 5 or 50 % !");
  // UTF-8 passes through; a non-breaking space separates tokens as in Python's str.split().
  CHECK(tokenize_13a("„Test“ café.") == "„Test“ café .");
  CHECK(tokenize_13a("a\xC2\xA0" "b") == "a b");
  CHECK(tokenize_13a("12,50 € / kg.") == "12,50 € / kg .");
}

TEST_CASE("BLEU edge cases", "[metrics]") {
  SECTION("empty corpus") {
    const auto bleu = attnmt::corpus_bleu({}, {});
    CHECK(bleu.score == 0.0);
    CHECK(bleu.bp == 1.0);
    CHECK(bleu.sys_len == 0);
    CHECK(attnmt::corpus_chrf({}, {}).score == 0.0);
  }
  SECTION("empty hypothesis") {
    const auto bleu = attnmt::corpus_bleu({""}, {"a b c"});
    CHECK(bleu.score == 0.0);
    CHECK(bleu.bp == 0.0);
    CHECK(bleu.ref_len == 3);
    CHECK(bleu.totals == std::vector<long>{0, 0, 0, 0});
    CHECK(attnmt::corpus_chrf({""}, {"a b c"}).score == 0.0);
  }
  SECTION("hypothesis shorter than 4 tokens scores 0 even when identical") {
    const auto bleu = attnmt::corpus_bleu({"the cat ."}, {"the cat ."});
    CHECK(bleu.counts == std::vector<long>{3, 2, 1, 0});
    CHECK(bleu.totals == std::vector<long>{3, 2, 1, 0});
    CHECK(bleu.score == 0.0);
    CHECK(attnmt::corpus_chrf({"the cat ."}, {"the cat ."}).score == Approx(100.0));
  }
  SECTION("exp smoothing for orders without matches") {
    // 5 tokens, unigrams and bigrams match, no trigram or 4-gram does.
    const auto bleu = attnmt::corpus_bleu({"a b x c d"}, {"a b y c d"});
    CHECK(bleu.counts == std::vector<long>{4, 2, 0, 0});
    CHECK(bleu.totals == std::vector<long>{5, 4, 3, 2});
    // precisions 80, 50, 100/(2*3), 100/(4*2)
    const double expected = std::exp((std::log(80.0) + std::log(50.0) + std::log(100.0 / 6) +
                                      std::log(100.0 / 8)) / 4);
    CHECK(bleu.score == Approx(expected));
    CHECK(bleu.format() ==
          "BLEU = 30.21 80.0/50.0/16.7/12.5 (BP = 1.000 ratio = 1.000 hyp_len = 5 ref_len = 5)");
  }
  SECTION("no match at all") {
    const auto bleu = attnmt::corpus_bleu({"x y z w v"}, {"a b c d e"});
    CHECK(bleu.score == 0.0);
    CHECK(bleu.precisions == std::vector<double>{0, 0, 0, 0});
  }
}

TEST_CASE("different sizes are an InputError", "[metrics]") {
  const std::vector<std::string> two{"a", "b"}, three{"a", "b", "c"};
  CHECK_THROWS_AS(attnmt::corpus_bleu(two, three), attnmt::InputError);
  CHECK_THROWS_WITH(attnmt::corpus_bleu(two, three),
                    "hypothesis has 2 lines but reference has 3");
  CHECK_THROWS_WITH(attnmt::corpus_chrf(three, two),
                    "hypothesis has 3 lines but reference has 2");
}

TEST_CASE("chrF counts code points, not bytes", "[metrics]") {
  // "é" is 2 bytes; hypothesis and reference differ only in it, so byte n-grams would still
  // share the first byte. One differing character out of 3: unigram precision 2/3.
  const auto chrf = attnmt::corpus_chrf({"aéb"}, {"aèb"});
  // orders: 1: 2/3, 2: 0/2, 3: 0/1 -> avg P = avg R = (2/3)/3 = 2/9
  CHECK(chrf.score == Approx(100.0 * 2.0 / 9.0));
  CHECK(chrf.format() == "chrF2 = 22.22");
}
