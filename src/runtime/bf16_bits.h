// float -> bfloat16 (its 16 bits), rounding to nearest even, in plain integer arithmetic, so that
// loops writing bfloat16 vectorise (GCC, -O3; keep the store in a loop of its own: next to float
// stores in one loop it stopped vectorising). NaN is not kept apart (a NaN loss skips the update).
#pragma once
#include <cstdint>
#include <cstring>

namespace attnmt {

inline uint16_t bf16_bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace attnmt
