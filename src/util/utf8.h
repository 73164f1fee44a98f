// UTF-8 in one place: whether text is well-formed (utfcpp's check, Unicode's Table 3-7: no
// overlong forms, no surrogates, nothing above U+10FFFF, no truncated sequence), how many
// characters it holds, how long a sequence is from its first byte, and a code point's bytes.
// Torch-free; utfcpp (Debian's libutfcpp-dev, header-only) stays behind utf8.cpp.
// eval/metrics.cpp decodes on its own: sacreBLEU's character classes read a malformed byte as a
// character of its own, which a validating decoder does not do.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attnmt {

// The offset of the first byte that does not begin a well-formed sequence; npos when all is well.
size_t find_invalid_utf8(std::string_view text);

// The characters of well-formed text (its bytes that are not continuation bytes: for malformed
// text a count that never reads past the end). What a terminal column or a label's width counts.
size_t utf8_characters(std::string_view text);

// The bytes of the sequence that begins with `lead` (1-4), for well-formed text.
size_t utf8_sequence_length(unsigned char lead);

// Appends code point `cp` (< 0x110000) as UTF-8; surrogates are written as their 3-byte form (as
// Python's "surrogatepass" does: pickles may hold them).
void append_utf8(std::string& out, uint32_t cp);

}  // namespace attnmt
