#include "runtime/dropout_rows.h"
#include "runtime/bf16_bits.h"

#include <cstring>

namespace attnmt {

__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void dropout_rows(
    const float* __restrict in, float* __restrict out, int64_t begin, int64_t end, uint64_t seed,
    uint64_t threshold, float scale) {
  for (int64_t i = begin; i < end; ++i) out[i] = in[i] * (dropout_kept(seed, i, threshold) ? scale : 0.0f);
}

__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void dropout_rows_bf16(
    const uint16_t* __restrict in, uint16_t* __restrict out, int64_t begin, int64_t end, uint64_t seed,
    uint64_t threshold, float scale) {
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t wide = static_cast<uint32_t>(in[i]) << 16;
    float x;
    std::memcpy(&x, &wide, sizeof x);
    const float y = x * (dropout_kept(seed, i, threshold) ? scale : 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &y, sizeof bits);
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;  // c10::BFloat16 turns every NaN into 0x7fc0
    out[i] = nan ? uint16_t{0x7fc0} : bf16_bits(y);
  }
}

}  // namespace attnmt
