#include "decoding/candidates.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "decoding/neg_inf.h"
#include "runtime/fast_exp.h"

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
    const int64_t n = std::min(kBlock, V - b0);
    float m = kNegInfF;
    if (n == kBlock) {
      float lanes[kLanes];
      std::fill(lanes, lanes + kLanes, kNegInfF);
      for (int64_t i = 0; i < kBlock; i += kLanes) {
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] = r[b0 + i + j] > lanes[j] ? r[b0 + i + j] : lanes[j];
      }
      for (int64_t j = 0; j < kLanes; ++j) m = lanes[j] > m ? lanes[j] : m;
    } else {
      for (int64_t i = 0; i < n; ++i) m = r[b0 + i] > m ? r[b0 + i] : m;
    }
    block_max[b] = m;
    row = m > row ? m : row;
  }
  return row;
}

// log Z of a row whose maximum m is known.
double log_normalizer_with_max(const float* row, int64_t V, float m) {
  if (!(m > kNegInfF) || std::isinf(m)) return m;  // all -inf (or +inf somewhere): as ATen's, no NaN from inf - inf
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
  at::parallel_for(0, A, 1, [&](int64_t begin, int64_t end) {
    for (int64_t a = begin; a < end; ++a) {
      TopList top(C);
      std::vector<float> block_max(static_cast<size_t>((V + kBlock - 1) / kBlock));
      for (int64_t k = 0; k < K; ++k) {
        const int64_t row = a * K + k;
        if (base[row] == kNegInf) continue;  // a dead beam
        const float* r = p + row * V;
        const float m = block_maxima(r, V, block_max.data());
        const double offset = base[row] - (log_probs ? 0.0 : log_normalizer_with_max(r, V, m));
        for (int64_t b0 = 0, b = 0; b0 < V; b0 += kBlock, ++b) {
          if (top.full() && !(static_cast<double>(block_max[static_cast<size_t>(b)]) + offset > top.threshold())) continue;
          const int64_t n = std::min(kBlock, V - b0);
          for (int64_t v = b0; v < b0 + n; ++v) top.offer(static_cast<double>(r[v]) + offset, k * V + v);
        }
      }
      top.write(out.scores.data() + a * C, out.ids.data() + a * C);
    }
  });
  return out;
}

}  // namespace attnmt
