#include "util/utf8.h"

#include <utf8.h>

namespace attnmt {

size_t find_invalid_utf8(std::string_view text) {
  const auto bad = utf8::find_invalid(text.begin(), text.end());
  return bad == text.end() ? std::string_view::npos : static_cast<size_t>(bad - text.begin());
}

size_t utf8_characters(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  return 4;
}

void append_utf8(std::string& out, uint32_t cp) { utf8::unchecked::append(cp, std::back_inserter(out)); }

}  // namespace attnmt
