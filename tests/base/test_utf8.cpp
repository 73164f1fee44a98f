// util/utf8.h against the definition: Unicode's Table 3-7 ("Well-Formed UTF-8 Byte Sequences"),
// written here as its byte ranges, over every 1- and 2-byte string, every 3-byte string, and the
// 4-byte strings that begin with each lead byte and a sample of what follows; the encoder against
// hand-written bytes and a decode of what it wrote.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "util/utf8.h"

using namespace attnmt;

namespace {

// The length of the well-formed sequence at s[i] by Table 3-7's rows, 0 if none begins there.
size_t table_3_7(const std::string& s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto in = [&](size_t k, int lo, int hi) { return k < s.size() && at(k) >= lo && at(k) <= hi; };
  const int b = at(i);
  if (b <= 0x7F) return 1;
  if (b >= 0xC2 && b <= 0xDF) return in(i + 1, 0x80, 0xBF) ? 2 : 0;
  if (b == 0xE0) return in(i + 1, 0xA0, 0xBF) && in(i + 2, 0x80, 0xBF) ? 3 : 0;
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return in(i + 1, 0x80, 0xBF) && in(i + 2, 0x80, 0xBF) ? 3 : 0;
  if (b == 0xED) return in(i + 1, 0x80, 0x9F) && in(i + 2, 0x80, 0xBF) ? 3 : 0;
  if (b == 0xF0) return in(i + 1, 0x90, 0xBF) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF) ? 4 : 0;
  if (b >= 0xF1 && b <= 0xF3) return in(i + 1, 0x80, 0xBF) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF) ? 4 : 0;
  if (b == 0xF4) return in(i + 1, 0x80, 0x8F) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF) ? 4 : 0;
  return 0;
}

size_t reference_find_invalid(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = table_3_7(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string::npos;
}

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s += static_cast<char>(c);
  return s;
}

}  // namespace

TEST_CASE("find_invalid_utf8 agrees with Table 3-7 on every string of up to 3 bytes", "[utf8]") {
  size_t checked = 0, invalid = 0;
  std::string s;
  for (int a = 0; a < 256; ++a) {
    s = bytes({a});
    REQUIRE(find_invalid_utf8(s) == reference_find_invalid(s));
    for (int b = 0; b < 256; ++b) {
      s = bytes({a, b});
      REQUIRE(find_invalid_utf8(s) == reference_find_invalid(s));
      // Three bytes: every string whose first byte is not ASCII (ASCII + 2 bytes is the case above).
      if (a < 0x80) continue;
      for (int c = 0; c < 256; ++c) {
        s = bytes({a, b, c});
        const size_t want = reference_find_invalid(s);
        if (find_invalid_utf8(s) != want) FAIL("bytes " << a << " " << b << " " << c << ": want " << want);
        invalid += want != std::string::npos;
        ++checked;
      }
    }
  }
  CHECK(checked == 128u * 256u * 256u);
  CHECK(invalid > 0);
}

TEST_CASE("find_invalid_utf8 on 4-byte sequences: each lead byte, the limits of its second byte", "[utf8]") {
  for (int lead = 0xF0; lead <= 0xFF; ++lead) {
    for (int second = 0x70; second <= 0xC0; ++second) {
      for (int third : {0x7F, 0x80, 0xBF, 0xC0}) {
        for (int fourth : {0x7F, 0x80, 0xBF, 0xC0}) {
          const std::string s = "ab" + bytes({lead, second, third, fourth}) + "z";
          REQUIRE(find_invalid_utf8(s) == reference_find_invalid(s));
        }
      }
    }
  }
  // Named cases: the offset is the first byte of the sequence that fails.
  CHECK(find_invalid_utf8("Grüße") == std::string::npos);
  CHECK(find_invalid_utf8(bytes({'x', 0xC0, 0x80})) == 1);              // overlong NUL
  CHECK(find_invalid_utf8(bytes({'x', 'y', 0xED, 0xA0, 0x80})) == 2);   // a surrogate (U+D800)
  CHECK(find_invalid_utf8(bytes({0xF4, 0x90, 0x80, 0x80})) == 0);       // U+110000
  CHECK(find_invalid_utf8(bytes({'a', 0xE2, 0x82})) == 1);              // truncated
  CHECK(find_invalid_utf8(bytes({0xF0, 0x9F, 0x98, 0x80})) == std::string::npos);  // U+1F600
}

TEST_CASE("utf8_characters and utf8_sequence_length", "[utf8]") {
  CHECK(utf8_characters("") == 0);
  CHECK(utf8_characters("abc") == 3);
  CHECK(utf8_characters("Grüße, 東京 😀") == 11);
  CHECK(utf8_characters(bytes({0x80, 0x80})) == 0);  // malformed: counted, never read past the end
  CHECK(utf8_sequence_length('a') == 1);
  CHECK(utf8_sequence_length(0xC3) == 2);
  CHECK(utf8_sequence_length(0xE6) == 3);
  CHECK(utf8_sequence_length(0xF0) == 4);
}

TEST_CASE("append_utf8 writes each code point's bytes, surrogates in their 3-byte form", "[utf8]") {
  const std::vector<std::pair<uint32_t, std::string>> cases = {
      {0x24, "$"}, {0xA2, bytes({0xC2, 0xA2})}, {0x7FF, bytes({0xDF, 0xBF})}, {0x800, bytes({0xE0, 0xA0, 0x80})},
      {0x20AC, bytes({0xE2, 0x82, 0xAC})}, {0xD800, bytes({0xED, 0xA0, 0x80})}, {0xFFFF, bytes({0xEF, 0xBF, 0xBF})},
      {0x10000, bytes({0xF0, 0x90, 0x80, 0x80})}, {0x10348, bytes({0xF0, 0x90, 0x8D, 0x88})},
      {0x10FFFF, bytes({0xF4, 0x8F, 0xBF, 0xBF})}};
  for (const auto& [cp, want] : cases) {
    std::string out = "x";
    append_utf8(out, cp);
    CHECK(out == "x" + want);
    CHECK(utf8_sequence_length(static_cast<unsigned char>(want[0])) == want.size());
  }
}
