// SplitMix64 (Steele, Lea & Flood, 2014), and one seed from several numbers with it: nearby inputs
// (seed, rank, step; seed, line, sample) give unrelated seeds.
#pragma once
#include <cstdint>

namespace attnmt {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// splitmix64(... splitmix64(splitmix64(seed) ^ v1) ^ v2 ...)
template <typename... Values>
uint64_t mix_seeds(uint64_t seed, Values... values) {
  uint64_t h = splitmix64(seed);
  ((h = splitmix64(h ^ static_cast<uint64_t>(values))), ...);
  return h;
}

}  // namespace attnmt
