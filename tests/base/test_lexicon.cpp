// The vocabulary shortlist's lexicon (data/lexicon.h): IBM Model 1 against values computed by hand,
// the shortlist of a batch, and the file format with its errors.
#include <catch2/catch.hpp>
#include <filesystem>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "data/lexicon.h"
#include "util/error.h"

using namespace attnmt;

namespace {

// das=0 Haus=1 Buch=2 ein=3 | the=0 house=1 book=2 a=3
const std::vector<std::vector<int>> kSrc = {{0, 1}, {0, 2}, {3, 2}};
const std::vector<std::vector<int>> kTgt = {{0, 1}, {0, 2}, {3, 2}};

float prob(const Lexicon& lex, int e, int f) {
  for (const auto& [t, p] : lex.row(e)) {
    if (t == f) return p;
  }
  return -1;
}

std::string message_for_missing(const std::string& path) {
  try {
    read_lexicon(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
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
  REQUIRE(lex.row(0).size() == 3);
  CHECK(lex.row(0)[0].target == 0);
  CHECK(lex.row(0)[1].target == 1);
  CHECK(lex.row(0)[2].target == 2);
}

TEST_CASE("IBM Model 1: EM finds each word's translation, rows sum to at most 1", "[lexicon]") {
  const auto lex = train_lexicon(kSrc, kTgt, 4, 4, /*iterations=*/20, /*keep=*/10);
  for (int e = 0; e < 4; ++e) {
    INFO("source word " << e);
    REQUIRE_FALSE(lex.row(e).empty());
    CHECK(lex.row(e)[0].target == e);  // das->the, Haus->house, ...
    double sum = 0;
    for (const auto& [f, p] : lex.row(e)) sum += p;
    CHECK(sum == Approx(1.0));  // everything kept: the whole row
  }
  CHECK(prob(lex, 1, 1) > 0.9);  // house is the only word Haus explains that das does not
  // frequency: the and book twice, house and a once (ties by id)
  CHECK(lex.frequent == std::vector<int>{0, 2, 1, 3});
  // keep cuts the rows
  const auto short_rows = train_lexicon(kSrc, kTgt, 4, 4, 20, /*keep=*/1);
  for (int e = 0; e < 4; ++e) CHECK(short_rows.row(e).size() <= 1);
}

TEST_CASE("IBM Model 1 skips ids out of range and empty sides", "[lexicon]") {
  const auto lex = train_lexicon({{0, 9, -1}, {}}, {{1, 7}, {1}}, 2, 4, 3, 10);
  CHECK(lex.row_start.size() == 3);
  CHECK(lex.row(2).empty());  // out of range
  CHECK(prob(lex, 0, 1) == Approx(1.0));  // 7 is out of the target range; 9 and -1 of the source's
  CHECK(lex.frequent == std::vector<int>{1});
  CHECK_THROWS_AS(train_lexicon({{0}}, {}, 2, 2, 1, 1), InputError);
}

TEST_CASE("shortlist: frequent, best translations, always, rounded with more frequent ids", "[lexicon]") {
  const auto lex = Lexicon::from_rows(3, 12, {5, 4, 3, 2, 1}, {{{9, 0.6f}, {8, 0.3f}, {7, 0.1f}}, {{11, 1.0f}}, {}});
  CHECK(lex.shortlist({0}, 2, 1, {}) == std::vector<int>{4, 5, 9});
  CHECK(lex.shortlist({0, 1, 2, 99, -3}, 0, 2, {0}) == std::vector<int>{0, 8, 9, 11});
  // rounding to 4: {4, 5, 9} + the next most frequent id (3)
  CHECK(lex.shortlist({0}, 2, 1, {}, 4) == std::vector<int>{3, 4, 5, 9});
  // rounding beyond the frequent list: any unused ids, lowest first
  CHECK(lex.shortlist({1}, 5, 1, {}, 8) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 11});
  // more than the vocabulary: everything
  CHECK(lex.shortlist({}, 0, 0, {2}, 64).size() == 12);
}

TEST_CASE("lexicon file: written and read back, bad files are named with what is wrong", "[lexicon]") {
  const auto lex = train_lexicon(kSrc, kTgt, 4, 4, 5, 10);
  const auto path = temp_path("lexicon.bin");
  write_lexicon(lex, path);
  const auto back = read_lexicon(path);
  CHECK(back.src_vocab == 4);
  CHECK(back.tgt_vocab == 4);
  CHECK(back.frequent == lex.frequent);
  CHECK(back.row_start == lex.row_start);
  REQUIRE(back.entries.size() == lex.entries.size());
  for (size_t k = 0; k < lex.entries.size(); ++k) {  // exact: the floats are stored as they are
    CHECK(back.entries[k].target == lex.entries[k].target);
    CHECK(back.entries[k].prob == lex.entries[k].prob);
  }
  std::string good;
  {
    std::ifstream in(path, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // header 8 + 16 bytes, frequent 4 ids, row index 5, then (id, prob) pairs
  const size_t frequent_at = 24, rows_at = frequent_at + 4 * 4, entries_at = rows_at + 5 * 4;
  REQUIRE(good.size() == entries_at + 8 * lex.entries.size());
  auto message_for = [&](const std::string& bytes) -> std::string {
    std::ofstream(path, std::ios::binary) << bytes;
    try {
      read_lexicon(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  auto with_int = [&](size_t at, int32_t v) {
    auto b = good;
    std::memcpy(&b[at], &v, 4);
    return b;
  };
  CHECK_THAT(message_for("hello"), Catch::Contains(path) && Catch::Contains("not an attnmt lexicon"));
  CHECK_THAT(message_for(good.substr(0, 20)), Catch::Contains("truncated in the header"));
  CHECK_THAT(message_for(with_int(8, 2)), Catch::Contains("version 2"));
  CHECK_THAT(message_for(with_int(12, 0)), Catch::Contains("bad sizes"));
  CHECK_THAT(message_for(with_int(frequent_at, 9)), Catch::Contains("frequent target id 9 out of range"));
  CHECK_THAT(message_for(with_int(rows_at + 8, 0)), Catch::Contains("bad row index at source id 1"));
  CHECK_THAT(message_for(with_int(entries_at, 7)), Catch::Contains("target id 7 out of range at source id 0"));
  {
    auto b = good;
    const float nan = std::nanf("");
    std::memcpy(&b[entries_at + 4], &nan, 4);
    CHECK_THAT(message_for(b), Catch::Contains("bad probability at source id 0"));
  }
  CHECK_THAT(message_for(good.substr(0, good.size() - 3)), Catch::Contains("truncated in the translations"));
  CHECK_THAT(message_for(good + "x"), Catch::Contains("1 bytes after the end"));
  CHECK(message_for(good).empty());
  std::filesystem::remove(path);
  CHECK_THAT(message_for_missing(path), Catch::Contains("cannot open") && Catch::Contains("attnmt lexicon --model"));
}
