// Inverted dropout's element loop (runtime/random.cpp drives it). The mask is never stored: element
// i of a tensor (counting from its first element) is kept when the high 32 bits of
// splitmix64(seed + (i + 1) * golden) reach `threshold`, so the forward pass and the backward pass
// each rebuild it from the seed. out[i] = in[i] * (kept ? scale : 0), exactly as LibTorch's
// `x * mask` computes it (bfloat16: through float, rounded to nearest even, NaN kept).
// Torch-free, in a file of its own: the loops are compiled for AVX-512, AVX2 and the baseline.
#pragma once
#include <cstdint>

namespace attnmt {

// Elements [begin, end) of in and out (the whole tensor's pointers, not offset).
void dropout_rows(const float* in, float* out, int64_t begin, int64_t end, uint64_t seed, uint64_t threshold,
                  float scale);
// bfloat16 as its 16 bits; `scale` is the bfloat16 value of 1 / (1 - p), given as a float.
void dropout_rows_bf16(const uint16_t* in, uint16_t* out, int64_t begin, int64_t end, uint64_t seed,
                       uint64_t threshold, float scale);

// Whether element i is kept (the scalar form of the loops above, for other types).
inline bool dropout_kept(uint64_t seed, int64_t i, uint64_t threshold) {
  uint64_t z = seed + static_cast<uint64_t>(i + 1) * 0x9e3779b97f4a7c15ULL;  // SplitMix64 (Steele et al. 2014)
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return ((z ^ (z >> 31)) >> 32) >= threshold;
}

}  // namespace attnmt
