#include "decoding/candidates.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "decoding/neg_inf.h"
#include "runtime/fast_exp.h"
#include "util/cpu_kernels.h"

namespace attnmt {

namespace {

constexpr int64_t kLanes = 16;  // independent maxima and sums: the loops vectorise
constexpr int64_t kBlock = 64;  // logits compared at once against the C-th best candidate

bool fast_path(const torch::Tensor& logits) {
  return logits.device().is_cpu() && logits.scalar_type() == torch::kFloat && logits.dim() == 2;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) float max_of(const float* __restrict x, int64_t n) {
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, kNegInfF);
  const int64_t whole = n - n % kLanes;
  for (int64_t i = 0; i < whole; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  }
  float m = kNegInfF;
  for (int64_t i = whole; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (int64_t j = 0; j < kLanes; ++j) m = lanes[j] > m ? lanes[j] : m;
  return m;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) float sum_exp(const float* __restrict x, int64_t n,
                                                                           float shift) {
  float lanes[kLanes] = {};
  const int64_t whole = n - n % kLanes;
  for (int64_t i = 0; i < whole; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] += fast_exp(x[i + j] - shift);
  }
  float total = 0.0f;
  for (int64_t i = whole; i < n; ++i) total += fast_exp(x[i] - shift);
  for (int64_t j = 0; j < kLanes; ++j) total += lanes[j];
  return total;
}

double log_normalizer_with_max(const float* row, int64_t V, float m);

// Whether log Z is m + log(sum of exp(x - m)) for a row whose maximum is m: not where m is -inf
// (every logit -inf) or +inf (one is), where log Z is m itself (as ATen's, no NaN from inf - inf).
bool sums_exp(float m) { return m > kNegInfF && !std::isinf(m); }

// The maximum of a block of n <= 64 logits (kNegInfF for none above it); inlined into each
// target's clone of its callers, whose full blocks it vectorises.
__attribute__((always_inline)) inline float block_max_of(const float* __restrict r, int64_t n) {
  float m = kNegInfF;
  if (n == kBlock) {
    float lanes[kLanes];
    std::fill(lanes, lanes + kLanes, kNegInfF);
    for (int64_t i = 0; i < kBlock; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) lanes[j] = r[i + j] > lanes[j] ? r[i + j] : lanes[j];
    }
    for (int64_t j = 0; j < kLanes; ++j) m = lanes[j] > m ? lanes[j] : m;
  } else {
    for (int64_t i = 0; i < n; ++i) m = r[i] > m ? r[i] : m;
  }
  return m;
}

double log_normalizer(const float* row, int64_t V) { return log_normalizer_with_max(row, V, max_of(row, V)); }

// The C best (score, id) of one sentence, best first; among equal scores the earlier id first.
class TopList {
 public:
  explicit TopList(int64_t capacity) : capacity_(capacity) { items_.reserve(capacity + 1); }
  // A score that would enter must exceed this.
  double threshold() const { return full() ? items_.back().first : kNegInf; }
  bool full() const { return static_cast<int64_t>(items_.size()) == capacity_; }
  void offer(double score, int64_t id) {
    if (std::isnan(score) || (full() && !(score > items_.back().first))) return;
    auto at = std::upper_bound(items_.begin(), items_.end(), score,
                               [](double s, const std::pair<double, int64_t>& item) { return s > item.first; });
    items_.insert(at, {score, id});
    if (static_cast<int64_t>(items_.size()) > capacity_) items_.pop_back();
  }
  void write(double* scores, int64_t* ids) const {
    for (int64_t i = 0; i < capacity_; ++i) {
      const bool have = i < static_cast<int64_t>(items_.size());
      scores[i] = have ? items_[i].first : kNegInf;
      ids[i] = have ? items_[i].second : 0;
    }
  }

 private:
  int64_t capacity_;
  std::vector<std::pair<double, int64_t>> items_;
};

// Each block of 64 logits' maximum (block_max[V / 64 rounded up]) and the row's, in one pass:
// beam search's top-k then reads only the blocks whose maximum could enter (offer_row), and log Z
// takes the row's maximum from here.
__attribute__((target_clones("avx512f", "avx2", "default"))) float block_maxima(const float* __restrict r, int64_t V,
                                                                               float* __restrict block_max) {
  float row = kNegInfF;
  for (int64_t b0 = 0, b = 0; b0 < V; b0 += kBlock, ++b) {
    const float m = block_max_of(r + b0, std::min(kBlock, V - b0));
    block_max[b] = m;
    row = m > row ? m : row;
  }
  return row;
}

// block_maxima and the row's sum of exponentials in one pass: each block's exponentials are summed
// against the largest maximum so far, and the sums rescaled when a block raises it (the online
// normaliser of Milakov & Gimelshein, 2018). The row is read once, where block_maxima then
// sum_exp read it twice (the second time from L1, but the first pass's wait on memory is not
// hidden behind the exponentials). Returns the row's maximum; *sum: sum_v exp(r[v] - maximum)
// (undefined where !sums_exp(maximum)).
__attribute__((target_clones("avx512f", "avx2", "default"))) float block_maxima_sum_exp(const float* __restrict r,
                                                                                       int64_t V,
                                                                                       float* __restrict block_max,
                                                                                       float* sum) {
  float row = kNegInfF;
  float lanes[kLanes] = {};  // exp(x - row) summed per lane
  float tail = 0.0f;         // the last, partial block's
  for (int64_t b0 = 0, b = 0; b0 < V; b0 += kBlock, ++b) {
    const int64_t n = std::min(kBlock, V - b0);
    const float m = block_max_of(r + b0, n);
    block_max[b] = m;
    if (m > row) {
      if (row > kNegInfF) {
        const float scale = fast_exp(row - m);
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] *= scale;
      }
      row = m;
    }
    if (!sums_exp(row)) continue;  // nothing finite yet, or +inf: no sum
    if (n == kBlock) {
      for (int64_t i = 0; i < kBlock; i += kLanes) {
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] += fast_exp(r[b0 + i + j] - row);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) tail += fast_exp(r[b0 + i] - row);
    }
  }
  float total = tail;
  for (int64_t j = 0; j < kLanes; ++j) total += lanes[j];
  *sum = total;
  return row;
}

// Which of a block's n <= 64 logits exceed t (bit i: x[i] > t). The top-k scan offers only those:
// in a row's first blocks nearly every block's maximum passes the C-th best, and offering its 64
// values one by one was most of the scan's time. NaN never passes (nor would it be offered).
uint64_t above_portable(const float* x, int64_t n, float t) {
  uint64_t bits = 0;
  for (int64_t i = 0; i < n; ++i) bits |= static_cast<uint64_t>(x[i] > t) << i;
  return bits;
}
#if defined(__x86_64__)
__attribute__((target("avx512f"))) uint64_t above_avx512(const float* x, int64_t n, float t) {
  if (n != kBlock) return above_portable(x, n, t);
  const __m512 tv = _mm512_set1_ps(t);
  uint64_t bits = 0;
  for (int i = 0; i < 4; ++i) {
    bits |= static_cast<uint64_t>(_mm512_cmp_ps_mask(_mm512_loadu_ps(x + 16 * i), tv, _CMP_GT_OQ)) << (16 * i);
  }
  return bits;
}
__attribute__((target("avx2"))) uint64_t above_avx2(const float* x, int64_t n, float t) {
  if (n != kBlock) return above_portable(x, n, t);
  const __m256 tv = _mm256_set1_ps(t);
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) {
    const auto lanes = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 8 * i), tv, _CMP_GT_OQ)));
    bits |= static_cast<uint64_t>(lanes) << (8 * i);
  }
  return bits;
}
#endif
using AboveFn = uint64_t (*)(const float*, int64_t, float);
// Chosen once from the flags ATTNMT_CPU_ISA leaves (every path gives the same bits).
AboveFn above_fn() {
  static const AboveFn fn = [] {
#if defined(__x86_64__)
    const auto& flags = this_cpu_flags();
    if (flags.count("avx512f")) return &above_avx512;
    if (flags.count("avx2")) return &above_avx2;
#endif
    return &above_portable;
  }();
  return fn;
}

// A float below which no logit x can give base + x - log Z > threshold (offset = base - log Z):
// (threshold - offset) rounded to float, less a margin for that rounding, so that the filter
// passes every logit the exact (double) test would.
float filter_bound(double threshold, double offset) {
  const double t = threshold - offset;
  if (!(t > -std::numeric_limits<float>::max())) return kNegInfF;  // -inf (list not full) or NaN
  if (t > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  return static_cast<float>(t - std::fabs(t) * 1e-6 - 1e-30);
}

// log Z of a row whose maximum m is known.
double log_normalizer_with_max(const float* row, int64_t V, float m) {
  if (!sums_exp(m)) return m;
  return static_cast<double>(m) + std::log(static_cast<double>(sum_exp(row, V, m)));
}

}  // namespace

std::vector<double> log_normalizers(const torch::Tensor& logits) {
  if (!fast_path(logits)) {
    auto z = logits.logsumexp(-1).to(torch::kCPU, torch::kDouble).contiguous();
    return {z.data_ptr<double>(), z.data_ptr<double>() + z.numel()};
  }
  const auto x = logits.contiguous();
  const int64_t N = x.size(0), V = x.size(1);
  std::vector<double> out(N);
  const float* p = x.data_ptr<float>();
  at::parallel_for(0, N, std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(1, V)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t n = b; n < e; ++n) out[n] = log_normalizer(p + n * V, V);
                   });
  return out;
}

Candidates best_candidates(const torch::Tensor& logits, const std::vector<double>& base, int64_t K, int64_t C,
                           bool log_probs) {
  const int64_t rows = logits.size(0), V = logits.size(1), A = rows / K;
  TORCH_CHECK(rows == A * K && static_cast<int64_t>(base.size()) == rows, "best_candidates: ", rows,
              " rows for beams of ", K, " and ", base.size(), " running scores");
  Candidates out;
  out.per_sentence = C;
  out.scores.resize(A * C);
  out.ids.resize(A * C);
  if (!fast_path(logits)) {
    auto b = torch::tensor(base, torch::kDouble).to(logits.device(), logits.scalar_type()).unsqueeze(1);
    auto cand = (log_probs ? logits.clone() : logits.log_softmax(-1)).add_(b).view({A, K * V});
    auto [top_scores, top_ids] = cand.topk(std::min(C, K * V), 1);
    auto ts = top_scores.to(torch::kCPU, torch::kDouble).contiguous();
    auto ti = top_ids.to(torch::kCPU, torch::kLong).contiguous();
    const int64_t got = ts.size(1);
    for (int64_t a = 0; a < A; ++a) {
      for (int64_t j = 0; j < C; ++j) {
        out.scores[a * C + j] = j < got ? ts.data_ptr<double>()[a * got + j] : kNegInf;
        out.ids[a * C + j] = j < got ? ti.data_ptr<int64_t>()[a * got + j] : 0;
      }
    }
    return out;
  }
  const auto x = logits.contiguous();
  const float* p = x.data_ptr<float>();
  const AboveFn above = above_fn();
  at::parallel_for(0, A, 1, [&](int64_t begin, int64_t end) {
    for (int64_t a = begin; a < end; ++a) {
      TopList top(C);
      std::vector<float> block_max(static_cast<size_t>((V + kBlock - 1) / kBlock));
      for (int64_t k = 0; k < K; ++k) {
        const int64_t row = a * K + k;
        if (base[row] == kNegInf) continue;  // a dead beam
        // No candidate of the row can beat its running score (x - log Z <= 0): once the C-th best
        // is above it, the row is not read at all. (The margin covers the rounding of the sums.)
        if (!log_probs && top.full() && base[row] + 1e-9 * std::max(1.0, std::fabs(base[row])) < top.threshold()) {
          continue;
        }
        const float* r = p + row * V;
        double log_z = 0.0;
        if (log_probs) {
          block_maxima(r, V, block_max.data());
        } else {
          float sum = 0.0f;
          const float m = block_maxima_sum_exp(r, V, block_max.data(), &sum);
          log_z = sums_exp(m) ? static_cast<double>(m) + std::log(static_cast<double>(sum)) : m;
        }
        const double offset = base[row] - log_z;
        for (int64_t b0 = 0, b = 0; b0 < V; b0 += kBlock, ++b) {
          if (top.full() && !(static_cast<double>(block_max[static_cast<size_t>(b)]) + offset > top.threshold())) continue;
          const int64_t n = std::min(kBlock, V - b0);
          // Offered in id order (among equal scores the earlier id stays first); until the list is
          // full every logit enters, -inf ones too.
          uint64_t bits = top.full() ? above(r + b0, n, filter_bound(top.threshold(), offset))
                                     : (n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1);
          for (; bits != 0; bits &= bits - 1) {
            const int64_t v = b0 + __builtin_ctzll(bits);
            top.offer(static_cast<double>(r[v]) + offset, k * V + v);
          }
        }
      }
      top.write(out.scores.data() + a * C, out.ids.data() + a * C);
    }
  });
  return out;
}

}  // namespace attnmt
