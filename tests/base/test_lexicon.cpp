// The vocabulary shortlist's lexicon (data/lexicon.h): IBM Model 1 against values computed by hand,
// the shortlist of a batch, and the file format with its errors.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "data/lexicon.h"
#include "util/error.h"

using namespace attnmt;

namespace {

// das=0 Haus=1 Buch=2 ein=3 | the=0 house=1 book=2 a=3
const std::vector<std::vector<int>> kSrc = {{0, 1}, {0, 2}, {3, 2}};
const std::vector<std::vector<int>> kTgt = {{0, 1}, {0, 2}, {3, 2}};

float prob(const Lexicon& lex, int e, int f) {
  for (const auto& [t, p] : lex.translations[static_cast<size_t>(e)]) {
    if (t == f) return p;
  }
  return -1;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("attnmt_test_" + name)).string();
}

}  // namespace

TEST_CASE("IBM Model 1: one EM iteration from uniform values, by hand", "[lexicon]") {
  // Every target word of a pair has 3 candidates (the empty word and 2 source words), each
  // getting 1/3. das: c(the)=1/3+1/3, c(house)=1/3, c(book)=1/3 -> t = 1/2, 1/4, 1/4.
  // Buch: c(book)=2/3, c(the)=1/3, c(a)=1/3 -> 1/2, 1/4, 1/4. Haus: c(the)=c(house)=1/3 -> 1/2 each.
  const auto lex = train_lexicon(kSrc, kTgt, 4, 4, /*iterations=*/1, /*keep=*/10);
  CHECK(prob(lex, 0, 0) == Approx(0.5));
  CHECK(prob(lex, 0, 1) == Approx(0.25));
  CHECK(prob(lex, 0, 2) == Approx(0.25));
  CHECK(prob(lex, 2, 2) == Approx(0.5));
  CHECK(prob(lex, 2, 3) == Approx(0.25));
  CHECK(prob(lex, 1, 0) == Approx(0.5));
  CHECK(prob(lex, 1, 1) == Approx(0.5));
  CHECK(prob(lex, 1, 2) == -1);  // never together
  // most probable first, ties by id
  REQUIRE(lex.translations[0].size() == 3);
  CHECK(lex.translations[0][0].first == 0);
  CHECK(lex.translations[0][1].first == 1);
  CHECK(lex.translations[0][2].first == 2);
}

TEST_CASE("IBM Model 1: EM finds each word's translation, rows sum to at most 1", "[lexicon]") {
  const auto lex = train_lexicon(kSrc, kTgt, 4, 4, /*iterations=*/20, /*keep=*/10);
  for (int e = 0; e < 4; ++e) {
    INFO("source word " << e);
    REQUIRE_FALSE(lex.translations[static_cast<size_t>(e)].empty());
    CHECK(lex.translations[static_cast<size_t>(e)].front().first == e);  // das->the, Haus->house, ...
    double sum = 0;
    for (const auto& [f, p] : lex.translations[static_cast<size_t>(e)]) sum += p;
    CHECK(sum == Approx(1.0));  // everything kept: the whole row
  }
  CHECK(prob(lex, 1, 1) > 0.9);  // house is the only word Haus explains that das does not
  // frequency: the and book twice, house and a once (ties by id)
  CHECK(lex.frequent == std::vector<int>{0, 2, 1, 3});
  // keep cuts the rows
  const auto short_rows = train_lexicon(kSrc, kTgt, 4, 4, 20, /*keep=*/1);
  for (const auto& row : short_rows.translations) CHECK(row.size() <= 1);
}

TEST_CASE("IBM Model 1 skips ids out of range and empty sides", "[lexicon]") {
  const auto lex = train_lexicon({{0, 9, -1}, {}}, {{1, 7}, {1}}, 2, 4, 3, 10);
  CHECK(lex.translations.size() == 2);
  CHECK(prob(lex, 0, 1) == Approx(1.0));  // 7 is out of the target range; 9 and -1 of the source's
  CHECK(lex.frequent == std::vector<int>{1});
  CHECK_THROWS_AS(train_lexicon({{0}}, {}, 2, 2, 1, 1), InputError);
}

TEST_CASE("shortlist: frequent, best translations, always, rounded with more frequent ids", "[lexicon]") {
  Lexicon lex;
  lex.src_vocab = 3;
  lex.tgt_vocab = 12;
  lex.frequent = {5, 4, 3, 2, 1};
  lex.translations = {{{9, 0.6f}, {8, 0.3f}, {7, 0.1f}}, {{11, 1.0f}}, {}};
  CHECK(lex.shortlist({0}, 2, 1, {}) == std::vector<int>{4, 5, 9});
  CHECK(lex.shortlist({0, 1, 2, 99, -3}, 0, 2, {0}) == std::vector<int>{0, 8, 9, 11});
  // rounding to 4: {4, 5, 9} + the next most frequent id (3)
  CHECK(lex.shortlist({0}, 2, 1, {}, 4) == std::vector<int>{3, 4, 5, 9});
  // rounding beyond the frequent list: any unused ids, lowest first
  CHECK(lex.shortlist({1}, 5, 1, {}, 8) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 11});
  // more than the vocabulary: everything
  CHECK(lex.shortlist({}, 0, 0, {2}, 64).size() == 12);
}

TEST_CASE("lexicon file: written and read back, bad files name the line", "[lexicon]") {
  const auto lex = train_lexicon(kSrc, kTgt, 4, 4, 5, 10);
  const auto path = temp_path("lexicon.txt");
  write_lexicon(lex, path);
  const auto back = read_lexicon(path);
  CHECK(back.src_vocab == 4);
  CHECK(back.tgt_vocab == 4);
  CHECK(back.frequent == lex.frequent);
  REQUIRE(back.translations.size() == lex.translations.size());
  for (size_t e = 0; e < lex.translations.size(); ++e) {
    REQUIRE(back.translations[e].size() == lex.translations[e].size());
    for (size_t k = 0; k < lex.translations[e].size(); ++k) {
      CHECK(back.translations[e][k].first == lex.translations[e][k].first);
      CHECK(back.translations[e][k].second == Approx(lex.translations[e][k].second).epsilon(1e-3));
    }
  }
  auto write = [&](const std::string& text) {
    std::ofstream(path) << text;
  };
  auto message = [&]() -> std::string {
    try {
      read_lexicon(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  write("hello\n");
  CHECK_THAT(message(), Catch::Contains("line 1") && Catch::Contains("not an attnmt lexicon"));
  write("attnmt-lexicon 1 4 4\nfrequent 2 1\n");
  CHECK_THAT(message(), Catch::Contains("line 2"));
  write("attnmt-lexicon 1 4 4\nfrequent 1 1\n0 1 2:0.5\n7 1 1:0.5\n");
  CHECK_THAT(message(), Catch::Contains("line 4") && Catch::Contains("source id"));
  write("attnmt-lexicon 1 4 4\nfrequent 1 1\n0 1 9:0.5\n");
  CHECK_THAT(message(), Catch::Contains("line 3") && Catch::Contains("out of range"));
  write("attnmt-lexicon 1 4 4\nfrequent 1 1\n0 2 1:0.5\n");
  CHECK_THAT(message(), Catch::Contains("line 3") && Catch::Contains("TARGET:PROB"));
  write("attnmt-lexicon 1 4 4\n");
  CHECK_THAT(message(), Catch::Contains("end of file"));
  std::filesystem::remove(path);
  CHECK_THAT(message(), Catch::Contains("cannot open") && Catch::Contains("attnmt lexicon --model"));
}
