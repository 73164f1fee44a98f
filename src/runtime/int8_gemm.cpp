#include "runtime/int8_gemm.h"

#include <algorithm>
#include <array>
#include <utility>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTNMT_INT8_AVX2 1
#endif

#include "build_features.h"
#ifdef ATTNMT_WITH_DNNL
#include "runtime/dnnl_engine.h"
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

// R rows' sums of one 16-column block (two registers of 8 per row) dequantised into y: the same
// operations as store_row. Shared by the AVX2 and AVX-VNNI kernels.
template <int R>
__attribute__((target("avx2,fma"), always_inline)) inline void store_block_avx2(
    const __m256i (&acc)[R][2], const int32_t* shift, const float* sw, const float* bias, const float* sx,
    int64_t columns, float* y, int64_t ldy) {
  #pragma GCC unroll 16
  for (int h = 0; h < 2; ++h) {
    const __m256i shift8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(shift + h * 8));
    const __m256 sw8 = _mm256_loadu_ps(sw + h * 8), bias8 = _mm256_loadu_ps(bias + h * 8);
    const int64_t width = std::min<int64_t>(8, columns - h * 8);
    if (width <= 0) break;
    #pragma GCC unroll 16
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

// R rows x one 16-column block: sum_k (qx + 64) qw into two registers of 8 int32 per row.
template <int R>
__attribute__((target("avx2,fma"))) void block_avx2(const uint8_t* x, int64_t ldx, const int8_t* w, int64_t groups,
                                                     const int32_t* shift, const float* sw, const float* bias,
                                                     const float* sx, int64_t columns, float* y, int64_t ldy) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[R][2];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + g * 64));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + g * 64 + 32));
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, x + r * ldx + g * 4, 4);
      const __m256i xb = _mm256_set1_epi32(four);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(xb, w0), ones));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(xb, w1), ones));
    }
  }
  store_block_avx2<R>(acc, shift, sw, bias, sx, columns, y, ldy);
}

// AVX-VNNI: as block_avx2, with vpdpbusd summing each 4 u8 x s8 straight into int32.
template <int R>
__attribute__((target("avx2,fma,avxvnni"))) void block_avx_vnni(const uint8_t* x, int64_t ldx, const int8_t* w,
                                                                 int64_t groups, const int32_t* shift, const float* sw,
                                                                 const float* bias, const float* sx, int64_t columns,
                                                                 float* y, int64_t ldy) {
  __m256i acc[R][2];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + g * 64));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + g * 64 + 32));
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, x + r * ldx + g * 4, 4);
      const __m256i xb = _mm256_set1_epi32(four);
      acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], xb, w0);
      acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], xb, w1);
    }
  }
  store_block_avx2<R>(acc, shift, sw, bias, sx, columns, y, ldy);
}

#define ATTNMT_AVX512_TARGET __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")))

// The dequantisation of 16 columns of one row on AVX-512 (the same operations as store_row).
ATTNMT_AVX512_TARGET inline void store16_avx512(__m512i sums, const int32_t* shift, const float* sw, const float* bias,
                                                float sx, int64_t columns, float* y) {
  // (maskz: GCC 12 warns of _mm512_cvtepi32_ps's undefined pass-through)
  const __m512 s = _mm512_maskz_cvtepi32_ps(static_cast<__mmask16>(0xFFFF), _mm512_sub_epi32(sums, _mm512_loadu_si512(shift)));
  const __m512 v = _mm512_fmadd_ps(s, _mm512_mul_ps(_mm512_loadu_ps(sw), _mm512_set1_ps(sx)), _mm512_loadu_ps(bias));
  const __mmask16 mask = columns >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << columns) - 1);
  _mm512_mask_storeu_ps(y, mask, v);
}

// AVX512-VNNI: R rows x NB consecutive 16-column blocks; a block's group of 4 k is one zmm (lane c
// = column c), so each group costs NB weight loads, R broadcasts and R x NB vpdpbusd.
// `columns`: the valid columns of the last block (the others are whole).
template <int R, int NB>
ATTNMT_AVX512_TARGET void blocks_avx512_vnni(const uint8_t* x, int64_t ldx, const int8_t* w, int64_t block_stride,
                                             int64_t groups, const int32_t* shift, const float* sw, const float* bias,
                                             const float* sx, int64_t columns, float* y, int64_t ldy) {
  __m512i acc[R][NB];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_setzero_si512();
  }
  for (int64_t g = 0; g < groups; ++g) {
    __m512i wv[NB];
    #pragma GCC unroll 16
    for (int b = 0; b < NB; ++b) wv[b] = _mm512_loadu_si512(w + b * block_stride + g * 64);
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, x + r * ldx + g * 4, 4);
      const __m512i xb = _mm512_set1_epi32(four);
      #pragma GCC unroll 16
      for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], xb, wv[b]);
    }
  }
  #pragma GCC unroll 16
  for (int b = 0; b < NB; ++b) {
    const int64_t width = b + 1 == NB ? columns : 16;
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      store16_avx512(acc[r][b], shift + b * 16, sw + b * 16, bias + b * 16, sx[r], width, y + r * ldy + b * 16);
    }
  }
}

using Avx512Fn = void (*)(const uint8_t*, int64_t, const int8_t*, int64_t, int64_t, const int32_t*, const float*,
                          const float*, const float*, int64_t, float*, int64_t);
constexpr int kAvx512Rows = 4, kAvx512Blocks = 4;
template <size_t R, size_t... B>
constexpr std::array<Avx512Fn, sizeof...(B)> avx512_row(std::index_sequence<B...>) {
  return {blocks_avx512_vnni<static_cast<int>(R) + 1, static_cast<int>(B) + 1>...};
}
template <size_t... R>
constexpr auto avx512_table(std::index_sequence<R...>) {
  return std::array<std::array<Avx512Fn, kAvx512Blocks>, sizeof...(R)>{
      avx512_row<R>(std::make_index_sequence<kAvx512Blocks>())...};
}
// [rows - 1][blocks - 1]
constexpr auto kAvx512Kernels = avx512_table(std::make_index_sequence<kAvx512Rows>());

bool cpu_has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return yes;
}

// The int32 sums of the AMX path (oneDNN's) dequantised, 16 columns at a time.
ATTNMT_AVX512_TARGET void dequantize_avx512(const int32_t* sums, int64_t ld_sums, int64_t rows, int64_t first_column,
                                            int64_t end_column, const int32_t* shift, const float* sw,
                                            const float* bias, const float* sx, float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = first_column; c < end_column; c += 16) {
      store16_avx512(_mm512_loadu_si512(sums + r * ld_sums + c), shift + c, sw + c, bias + c, sx[r], end_column - c,
                     y + r * ldy + c);
    }
  }
}
#endif

}  // namespace

bool Int8Matrix::multiply_whole(Int8Kernel kernel, int64_t rows) {
#ifdef ATTNMT_WITH_DNNL
  constexpr int64_t kOneDnnRows = 16;
  return kernel == Int8Kernel::kAmx || (kernel == Int8Kernel::kAvx512Vnni && rows >= kOneDnnRows);
#else
  (void)kernel, (void)rows;
  return false;
#endif
}

Int8Kernel Int8Matrix::kernel_in_use() {
  static const Int8Kernel kernel = int8_kernel(this_cpu_flags());
  return kernel;
}

Int8Matrix::Int8Matrix(const float* weight, const float* bias, int64_t n, int64_t k)
    : n_(n), k_(k), padded_k_((k + 3) / 4 * 4), onednn_(std::make_unique<OneDnnSlot>()) {
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

int64_t Int8Matrix::product_rows(Int8Kernel kernel, int64_t m) {
#ifdef ATTNMT_WITH_DNNL
  if (multiply_whole(kernel, m) && m > 0) return dnnl_row_count(m);
#else
  (void)kernel;
#endif
  return m;
}

void Int8Matrix::quantize(const float* x, int64_t m, Int8Rows& out, Int8Kernel kernel) const {
  out.rows = m;
  out.padded_cols = padded_k_;
  const int64_t rows = product_rows(kernel, m);
  // Only the padding is filled here (the columns past k and the rows past m): the rest is written
  // below, and the buffer is reused from product to product.
  out.values.resize(static_cast<size_t>(rows * padded_k_));
  if (padded_k_ > k_) {
    for (int64_t r = 0; r < m; ++r) {
      std::fill(out.values.begin() + r * padded_k_ + k_, out.values.begin() + (r + 1) * padded_k_,
                static_cast<uint8_t>(kShift));
    }
  }
  std::fill(out.values.begin() + m * padded_k_, out.values.end(), static_cast<uint8_t>(kShift));
  out.scales.resize(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    uint8_t* dst = out.values.data() + r * padded_k_;
#ifdef ATTNMT_INT8_AVX2
    if (kernel != Int8Kernel::kPortable) {  // every other kernel's CPU has AVX2
      quantize_avx2(x + r * k_, k_, dst, out.scales[static_cast<size_t>(r)]);
      continue;
    }
#else
    (void)kernel;
#endif
    quantize_portable(x + r * k_, k_, dst, out.scales[static_cast<size_t>(r)]);
  }
}

// AMX-INT8: oneDNN's matmul u8 [M, padded_k] x s8 [padded_k, blocks * 16] -> s32, the weight in the
// layout oneDNN picks (its brgemm kernels for the best ISA it may use: AMX tiles where the CPU has
// them). One primitive per row count, rounded up (dnnl_row_count).
struct Int8Matrix::OneDnn {
#ifdef ATTNMT_WITH_DNNL
  struct Kernel {
    dnnl::matmul::primitive_desc desc;
    dnnl::matmul primitive;
  };
  int64_t k = 0, n = 0;
  dnnl::memory::desc weights_desc;
  dnnl::memory weights;
  mutable std::mutex mutex;
  mutable std::unordered_map<int64_t, std::shared_ptr<const Kernel>> kernels;

  dnnl::matmul::primitive_desc make_desc(int64_t m, const dnnl::memory::desc& w) const {
    using dnnl::memory;
    memory::desc src({m, k}, memory::data_type::u8, memory::format_tag::ab);
    memory::desc dst({m, n}, memory::data_type::s32, memory::format_tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, dst), attr, dnnl_cpu_engine());
  }
  std::shared_ptr<const Kernel> kernel_for(int64_t m) const {
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = kernels.find(m);
      if (it != kernels.end()) return it->second;
    }
    auto desc = make_desc(m, weights_desc);
    auto kernel = std::make_shared<const Kernel>(Kernel{desc, dnnl::matmul(desc)});
    std::lock_guard<std::mutex> lock(mutex);
    return kernels.emplace(m, std::move(kernel)).first->second;
  }
#endif
};

struct Int8Matrix::OneDnnSlot {
  std::once_flag once;
  std::unique_ptr<OneDnn> value;
};

Int8Matrix::Int8Matrix() : onednn_(std::make_unique<OneDnnSlot>()) {}
Int8Matrix::Int8Matrix(Int8Matrix&&) noexcept = default;
Int8Matrix& Int8Matrix::operator=(Int8Matrix&&) noexcept = default;
Int8Matrix::~Int8Matrix() = default;

const Int8Matrix::OneDnn& Int8Matrix::onednn() const {
  std::call_once(onednn_->once, [this] { onednn_->value = make_onednn(); });
  return *onednn_->value;
}

std::unique_ptr<Int8Matrix::OneDnn> Int8Matrix::make_onednn() const {
  auto d = std::make_unique<OneDnn>();
#ifdef ATTNMT_WITH_DNNL
  using dnnl::memory;
  d->k = padded_k_;
  d->n = blocks() * kBlock;
  // qw as [n][padded_k] row-major, i.e. the [padded_k, n] matrix in oneDNN's "ba".
  std::vector<int8_t> plain(static_cast<size_t>(d->n * d->k), 0);
  for (int64_t c = 0; c < n_; ++c) {
    for (int64_t j = 0; j < k_; ++j) plain[static_cast<size_t>(c * d->k + j)] = value(c, j);
  }
  d->weights_desc = d->make_desc(64, memory::desc({d->k, d->n}, memory::data_type::s8, memory::format_tag::any)).weights_desc();
  memory user({{d->k, d->n}, memory::data_type::s8, memory::format_tag::ba}, dnnl_cpu_engine(), plain.data());
  d->weights = memory(d->weights_desc, dnnl_cpu_engine());
  dnnl::stream stream(dnnl_cpu_engine());
  dnnl::reorder(user, d->weights).execute(stream, user, d->weights);
  stream.wait();
#endif
  return d;
}

void Int8Matrix::dequantize(const int32_t* sums, int64_t ld_sums, const Int8Rows& x, int64_t first_block,
                            int64_t end_block, float* y, int64_t ldy) const {
  const int64_t first = first_block * kBlock, end = std::min(n_, end_block * kBlock);
#ifdef ATTNMT_INT8_AVX2
  if (cpu_has_avx512()) {
    dequantize_avx512(sums, ld_sums, x.rows, first, end, shift_sum_.data(), scales_.data(), bias_.data(),
                      x.scales.data(), y, ldy);
    return;
  }
#endif
  for (int64_t r = 0; r < x.rows; ++r) {
    store_row(sums + r * ld_sums + first, shift_sum_.data() + first, scales_.data() + first, bias_.data() + first,
              x.scales[static_cast<size_t>(r)], end - first, y + r * ldy + first);
  }
}

void Int8Matrix::multiply(const Int8Rows& x, int64_t first_block, int64_t end_block, float* y, int64_t ldy,
                          Int8Kernel kernel, int64_t y_rows) const {
  const int64_t groups = padded_k_ / 4, ldx = x.padded_cols;
#ifdef ATTNMT_WITH_DNNL
  if (multiply_whole(kernel, x.rows)) {
    if (x.rows == 0) return;
    const auto& d = onednn();
    const int64_t rows = product_rows(kernel, x.rows);
    const auto kernel_m = d.kernel_for(rows);
    thread_local std::vector<uint8_t> scratch, padded;
    const uint8_t* src = x.values.data();
    if (static_cast<int64_t>(x.values.size()) < rows * ldx) {  // quantised for another kernel
      padded.assign(static_cast<size_t>(rows * ldx), static_cast<uint8_t>(kShift));
      std::copy(x.values.begin(), x.values.begin() + x.rows * ldx, padded.begin());
      src = padded.data();
    }
    thread_local std::vector<int32_t> buffer;
    // The sums go straight into y where it has the room and the layout (the decoder's products);
    // else into a buffer.
    const bool in_place = y_rows >= rows && ldy == d.n && first_block == 0 && end_block == blocks();
    int32_t* sums = reinterpret_cast<int32_t*>(y);
    if (!in_place) {
      buffer.resize(static_cast<size_t>(rows * d.n));
      sums = buffer.data();
    }
    scratch.resize(std::max<size_t>(1, kernel_m->desc.scratchpad_desc().get_size()));
    auto& engine = dnnl_cpu_engine();
    using dnnl::memory;
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, memory(kernel_m->desc.src_desc(), engine, const_cast<uint8_t*>(src))},
        {DNNL_ARG_WEIGHTS, d.weights},
        {DNNL_ARG_DST, memory(kernel_m->desc.dst_desc(), engine, sums)},
        {DNNL_ARG_SCRATCHPAD, memory(kernel_m->desc.scratchpad_desc(), engine, scratch.data())}};
    thread_local dnnl::stream stream(engine);
    kernel_m->primitive.execute(stream, args);
    stream.wait();
    dequantize(sums, d.n, x, first_block, end_block, y, ldy);
    return;
  }
#else
  (void)y_rows;
#endif
  // Rows in chunks, so that a chunk's quantised input stays in L1/L2 while every block passes.
  constexpr int64_t kRowChunk = 48;
  for (int64_t r0 = 0; r0 < x.rows; r0 += kRowChunk) {
    const int64_t r1 = std::min(x.rows, r0 + kRowChunk);
    const auto at = [&](int64_t row) { return x.values.data() + row * ldx; };
#ifdef ATTNMT_INT8_AVX2
    if (kernel == Int8Kernel::kAvx512Vnni || kernel == Int8Kernel::kAmx) {  // (kAmx: a build without oneDNN)
      const int64_t block_stride = padded_k_ * kBlock;
      for (int64_t b = first_block; b < end_block; b += kAvx512Blocks) {
        const int64_t nb = std::min<int64_t>(kAvx512Blocks, end_block - b), n0 = b * kBlock;
        const int64_t columns = std::min(kBlock, n_ - (b + nb - 1) * kBlock);
        for (int64_t r = r0; r < r1; r += kAvx512Rows) {
          const int64_t nr = std::min<int64_t>(kAvx512Rows, r1 - r);
          kAvx512Kernels[nr - 1][nb - 1](at(r), ldx, packed_.data() + b * block_stride, block_stride, groups,
                                         shift_sum_.data() + n0, scales_.data() + n0, bias_.data() + n0,
                                         x.scales.data() + r, columns, y + r * ldy + n0, ldy);
        }
      }
      continue;
    }
#endif
    for (int64_t b = first_block; b < end_block; ++b) {
      const int64_t n0 = b * kBlock, columns = std::min(kBlock, n_ - n0);
      const int8_t* w = packed_.data() + b * padded_k_ * kBlock;
      const int32_t* shift = shift_sum_.data() + n0;
      const float* sw = scales_.data() + n0;
      const float* bias = bias_.data() + n0;
#ifdef ATTNMT_INT8_AVX2
      if (kernel == Int8Kernel::kAvx2 || kernel == Int8Kernel::kAvxVnni) {
        const bool vnni = kernel == Int8Kernel::kAvxVnni;
        int64_t r = r0;
        for (; r < r1;) {
          const int64_t nr = std::min<int64_t>(4, r1 - r);
          const float* sx = x.scales.data() + r;
          float* out = y + r * ldy + n0;
          switch (nr) {
            case 4: vnni ? block_avx_vnni<4>(at(r), ldx, w, groups, shift, sw, bias, sx, columns, out, ldy)
                         : block_avx2<4>(at(r), ldx, w, groups, shift, sw, bias, sx, columns, out, ldy); break;
            case 3: vnni ? block_avx_vnni<3>(at(r), ldx, w, groups, shift, sw, bias, sx, columns, out, ldy)
                         : block_avx2<3>(at(r), ldx, w, groups, shift, sw, bias, sx, columns, out, ldy); break;
            case 2: vnni ? block_avx_vnni<2>(at(r), ldx, w, groups, shift, sw, bias, sx, columns, out, ldy)
                         : block_avx2<2>(at(r), ldx, w, groups, shift, sw, bias, sx, columns, out, ldy); break;
            default: vnni ? block_avx_vnni<1>(at(r), ldx, w, groups, shift, sw, bias, sx, columns, out, ldy)
                          : block_avx2<1>(at(r), ldx, w, groups, shift, sw, bias, sx, columns, out, ldy); break;
          }
          r += nr;
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
