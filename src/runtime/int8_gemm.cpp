#include "runtime/int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTNMT_INT8_AVX2 1
#endif

namespace attnmt {

namespace {

constexpr int64_t kShift = 64;  // added to qx: [-63, 63] -> [1, 127], unsigned for vpmaddubsw

// Where in the packed weight qw[n, k] lives: blocks of 16 columns, 4 consecutive k per column,
// two halves of 8 columns (one AVX2 register each) per group of 4 k.
size_t packed_index(int64_t n, int64_t k, int64_t padded_k) {
  const int64_t block = n / Int8Matrix::kBlock, c = n % Int8Matrix::kBlock;
  return static_cast<size_t>(block * padded_k * Int8Matrix::kBlock + (k / 4) * 64 + (c / 8) * 32 + (c % 8) * 4 + k % 4);
}

// The row's scale and its reciprocal: max|x| / 63, 0 for a zero row; NaN where the row holds a NaN
// or an infinity (the products then come out non-finite, as fp32's would).
void row_scale(float amax, bool nan, float& scale, float& inverse) {
  if (nan || !std::isfinite(amax)) {
    scale = std::numeric_limits<float>::quiet_NaN();
    inverse = 0;
  } else if (amax == 0) {
    scale = inverse = 0;
  } else {
    scale = amax / static_cast<float>(Int8Matrix::kInputMax);
    inverse = 1.0f / scale;
  }
}

uint8_t quantize_one(float x, float inverse) {
  if (inverse == 0) return static_cast<uint8_t>(kShift);  // a zero or non-finite row
  // nearbyint: round half to even, as the AVX2 conversion does (the default rounding mode).
  const float q = std::nearbyint(x * inverse);
  const float bounded = std::min(std::max(q, -static_cast<float>(Int8Matrix::kInputMax)),
                                 static_cast<float>(Int8Matrix::kInputMax));
  return static_cast<uint8_t>(static_cast<int>(bounded) + kShift);
}

void quantize_portable(const float* x, int64_t k, uint8_t* out, float& scale) {
  float amax = 0;
  bool nan = false;
  for (int64_t j = 0; j < k; ++j) {
    nan |= std::isnan(x[j]);
    amax = std::max(amax, std::fabs(x[j]));
  }
  float inverse;
  row_scale(amax, nan, scale, inverse);
  for (int64_t j = 0; j < k; ++j) out[j] = quantize_one(x[j], inverse);
}

// One row block x 16 columns: dequantised into y.
void store_row(const int32_t* sums, const int32_t* shift, const float* sw, const float* bias, float sx, int64_t columns,
               float* y) {
  for (int64_t c = 0; c < columns; ++c) {
    const float s = sw[c] * sx;
    y[c] = std::fma(static_cast<float>(sums[c] - shift[c]), s, bias[c]);
  }
}

#ifdef ATTNMT_INT8_AVX2
__attribute__((target("avx2,fma"))) void quantize_avx2(const float* x, int64_t k, uint8_t* out, float& scale) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax8 = _mm256_setzero_ps(), nan8 = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= k; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    nan8 = _mm256_or_ps(nan8, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    amax8 = _mm256_max_ps(amax8, _mm256_and_ps(v, abs_mask));
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, amax8);
  float amax = 0;
  for (float v : lanes) amax = std::max(amax, v);
  bool nan = _mm256_movemask_ps(nan8) != 0;
  for (int64_t t = j; t < k; ++t) {
    nan |= std::isnan(x[t]);
    amax = std::max(amax, std::fabs(x[t]));
  }
  float inverse;
  row_scale(amax, nan, scale, inverse);
  const __m256 inv8 = _mm256_set1_ps(inverse);
  const __m256i lo = _mm256_set1_epi32(-Int8Matrix::kInputMax), hi = _mm256_set1_epi32(Int8Matrix::kInputMax);
  const __m256i shift = _mm256_set1_epi32(kShift);
  for (j = 0; j + 8 <= k; j += 8) {
    __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j), inv8));
    q = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(q, lo), hi), shift);
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + j), _mm_packus_epi16(q16, q16));
  }
  for (; j < k; ++j) out[j] = quantize_one(x[j], inverse);
}

// R rows x one 16-column block: sum_k (qx + 64) qw into two registers of 8 int32 per row.
template <int R>
__attribute__((target("avx2,fma"))) void block_avx2(const uint8_t* x, int64_t ldx, const int8_t* w, int64_t groups,
                                                     const int32_t* shift, const float* sw, const float* bias,
                                                     const float* sx, int64_t columns, float* y, int64_t ldy) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + g * 64));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + g * 64 + 32));
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, x + r * ldx + g * 4, 4);
      const __m256i xb = _mm256_set1_epi32(four);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(xb, w0), ones));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(xb, w1), ones));
    }
  }
  for (int h = 0; h < 2; ++h) {
    const __m256i shift8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(shift + h * 8));
    const __m256 sw8 = _mm256_loadu_ps(sw + h * 8), bias8 = _mm256_loadu_ps(bias + h * 8);
    const int64_t width = std::min<int64_t>(8, columns - h * 8);
    if (width <= 0) break;
    for (int r = 0; r < R; ++r) {
      const __m256 sums = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][h], shift8));
      const __m256 v = _mm256_fmadd_ps(sums, _mm256_mul_ps(sw8, _mm256_set1_ps(sx[r])), bias8);
      float* out = y + r * ldy + h * 8;
      if (width == 8) {
        _mm256_storeu_ps(out, v);
      } else {
        float lanes[8];
        _mm256_storeu_ps(lanes, v);
        std::memcpy(out, lanes, static_cast<size_t>(width) * sizeof(float));
      }
    }
  }
}

bool cpu_has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#endif

}  // namespace

bool int8_kernel_avx2() {
#ifdef ATTNMT_INT8_AVX2
  return cpu_has_avx2();
#else
  return false;
#endif
}

Int8Matrix::Int8Matrix(const float* weight, const float* bias, int64_t n, int64_t k)
    : n_(n), k_(k), padded_k_((k + 3) / 4 * 4) {
  const auto width = static_cast<size_t>(blocks() * kBlock);
  packed_.assign(width * static_cast<size_t>(padded_k_), 0);
  scales_.assign(width, 0.f);
  bias_.assign(width, 0.f);
  shift_sum_.assign(width, 0);
  for (int64_t r = 0; r < n; ++r) {
    const float* row = weight + r * k;
    float amax = 0;
    for (int64_t j = 0; j < k; ++j) amax = std::max(amax, std::fabs(row[j]));
    const float s = amax / static_cast<float>(kWeightMax);
    scales_[static_cast<size_t>(r)] = s;
    if (bias) bias_[static_cast<size_t>(r)] = bias[r];
    int32_t sum = 0;
    for (int64_t j = 0; j < k && s > 0; ++j) {
      const float q = std::min(std::max(std::nearbyint(row[j] / s), -static_cast<float>(kWeightMax)),
                               static_cast<float>(kWeightMax));
      packed_[packed_index(r, j, padded_k_)] = static_cast<int8_t>(q);
      sum += static_cast<int32_t>(q);
    }
    shift_sum_[static_cast<size_t>(r)] = static_cast<int32_t>(kShift) * sum;
  }
}

int8_t Int8Matrix::value(int64_t n, int64_t k) const { return packed_[packed_index(n, k, padded_k_)]; }

void Int8Matrix::quantize(const float* x, int64_t m, Int8Rows& out) const {
  out.rows = m;
  out.padded_cols = padded_k_;
  out.values.assign(static_cast<size_t>(m * padded_k_), static_cast<uint8_t>(kShift));
  out.scales.resize(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    uint8_t* dst = out.values.data() + r * padded_k_;
#ifdef ATTNMT_INT8_AVX2
    if (cpu_has_avx2()) {
      quantize_avx2(x + r * k_, k_, dst, out.scales[static_cast<size_t>(r)]);
      continue;
    }
#endif
    quantize_portable(x + r * k_, k_, dst, out.scales[static_cast<size_t>(r)]);
  }
}

void Int8Matrix::multiply(const Int8Rows& x, int64_t first_block, int64_t end_block, float* y, int64_t ldy) const {
  const int64_t groups = padded_k_ / 4, ldx = x.padded_cols;
  // Rows in chunks, so that a chunk's quantised input stays in L1/L2 while every block passes.
  constexpr int64_t kRowChunk = 48;
  for (int64_t r0 = 0; r0 < x.rows; r0 += kRowChunk) {
    const int64_t r1 = std::min(x.rows, r0 + kRowChunk);
    for (int64_t b = first_block; b < end_block; ++b) {
      const int64_t n0 = b * kBlock, columns = std::min(kBlock, n_ - n0);
      const int8_t* w = packed_.data() + b * padded_k_ * kBlock;
      const int32_t* shift = shift_sum_.data() + n0;
      const float* sw = scales_.data() + n0;
      const float* bias = bias_.data() + n0;
#ifdef ATTNMT_INT8_AVX2
      if (cpu_has_avx2()) {
        int64_t r = r0;
        const auto at = [&](int64_t row) { return x.values.data() + row * ldx; };
        for (; r + 4 <= r1; r += 4) {
          block_avx2<4>(at(r), ldx, w, groups, shift, sw, bias, x.scales.data() + r, columns, y + r * ldy + n0, ldy);
        }
        switch (r1 - r) {
          case 3: block_avx2<3>(at(r), ldx, w, groups, shift, sw, bias, x.scales.data() + r, columns, y + r * ldy + n0, ldy); break;
          case 2: block_avx2<2>(at(r), ldx, w, groups, shift, sw, bias, x.scales.data() + r, columns, y + r * ldy + n0, ldy); break;
          case 1: block_avx2<1>(at(r), ldx, w, groups, shift, sw, bias, x.scales.data() + r, columns, y + r * ldy + n0, ldy); break;
          default: break;
        }
        continue;
      }
#endif
      int32_t sums[kBlock];
      for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* xr = x.values.data() + r * ldx;
        std::fill(sums, sums + kBlock, 0);
        for (int64_t g = 0; g < groups; ++g) {
          for (int64_t c = 0; c < kBlock; ++c) {
            const int8_t* wc = w + g * 64 + (c / 8) * 32 + (c % 8) * 4;
            for (int64_t i = 0; i < 4; ++i) sums[c] += static_cast<int32_t>(xr[g * 4 + i]) * wc[i];
          }
        }
        store_row(sums, shift, sw, bias, x.scales[static_cast<size_t>(r)], columns, y + r * ldy + n0);
      }
    }
  }
}

}  // namespace attnmt
