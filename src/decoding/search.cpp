#include "decoding/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "decoding/beams.h"
#include "decoding/candidates.h"

namespace attnmt {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::vector<int64_t> to_vector(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU, torch::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

torch::Tensor index_tensor(const std::vector<int64_t>& v, torch::Device device) {
  return torch::tensor(v, torch::kLong).to(device);
}

// Rows of a CPU float tensor [N, S] as vectors, cut to the sentence's real length.
std::vector<float> attention_row(const torch::Tensor& att_cpu, int64_t row, int64_t length) {
  auto r = att_cpu[row];
  const float* p = r.data_ptr<float>();
  return {p, p + length};
}

// floor(ratio * source length) + 5, bounded so that no ratio overflows the cast.
int64_t max_target_length(int64_t src_len, double ratio) {
  constexpr double kLimit = 1 << 20;
  return static_cast<int64_t>(std::min(std::floor(ratio * static_cast<double>(src_len)), kLimit)) + 5;
}

// GNMT coverage penalty of one hypothesis from its attention sums over real source positions.
double coverage_score(const torch::Tensor& coverage_row, double beta) {
  auto cov = coverage_row.clamp(1e-20, 1.0);
  return beta * cov.log().sum().item<double>();
}

}  // namespace

double gnmt_length_penalty(int64_t length, double alpha) {
  if (alpha == 0.0) return 1.0;
  return std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

std::vector<std::vector<Hypothesis>> search(StepModel& model, const torch::Tensor& src,
                                            const torch::Tensor& lengths, const SearchOptions& options) {
  if (options.beam_size == 1 && options.n_best == 1 && options.coverage_penalty == 0.0) {
    return greedy_search(model, src, lengths, options);
  }
  return beam_search(model, src, lengths, options);
}

std::vector<std::vector<Hypothesis>> greedy_search(StepModel& model, const torch::Tensor& src,
                                                   const torch::Tensor& lengths, const SearchOptions& options) {
  const auto device = model.device();
  const int64_t B = src.size(0);
  const auto src_len = to_vector(lengths);
  std::vector<Hypothesis> hyps(B);
  std::vector<int64_t> active(B);  // row -> sentence
  for (int64_t b = 0; b < B; ++b) active[b] = b;
  auto state = model.start(src, lengths);
  auto prev = torch::full({B}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t t = 0; !active.empty(); ++t) {
    auto r = model.step(prev, *state, options.return_attention);
    auto [best_logit, best_tok] = r.logits.max(-1);
    if (r.vocabulary.defined()) best_tok = r.vocabulary.index_select(0, best_tok.cpu()).to(device);
    auto best = best_logit.to(torch::kCPU, torch::kDouble).contiguous();
    const auto log_z = log_normalizers(r.logits);
    auto tok = to_vector(best_tok);
    torch::Tensor att = options.return_attention ? r.attention.to(torch::kCPU, torch::kFloat).contiguous()
                                                 : torch::Tensor();
    std::vector<int64_t> keep_rows, keep_sent;
    for (size_t row = 0; row < active.size(); ++row) {
      const int64_t b = active[row];
      auto& h = hyps[b];
      h.log_prob += best.data_ptr<double>()[row] - log_z[row];
      if (att.defined()) h.attention.push_back(attention_row(att, row, src_len[b]));
      const bool eos = tok[row] == model.eos_id();
      if (!eos) h.tokens.push_back(tok[row]);
      if (eos || t + 1 >= max_target_length(src_len[b], options.max_length_ratio)) {
        h.finished = eos;
        h.score = h.log_prob / gnmt_length_penalty(static_cast<int64_t>(h.tokens.size()) + 1, options.length_penalty);
      } else {
        keep_rows.push_back(static_cast<int64_t>(row));
        keep_sent.push_back(b);
      }
    }
    if (keep_rows.size() != active.size() && !keep_rows.empty()) {
      auto index = index_tensor(keep_rows, device);
      state->index_select(index);
      best_tok = best_tok.index_select(0, index);
    }
    active = std::move(keep_sent);
    prev = best_tok;
  }
  std::vector<std::vector<Hypothesis>> out(B);
  for (int64_t b = 0; b < B; ++b) out[b].push_back(std::move(hyps[b]));
  return out;
}

std::vector<std::vector<Hypothesis>> beam_search(StepModel& model, const torch::Tensor& src,
                                                 const torch::Tensor& lengths, const SearchOptions& options) {
  const auto device = model.device();
  const int64_t B = src.size(0);
  const int64_t K = options.beam_size;
  const bool want_att = options.return_attention || options.coverage_penalty != 0.0;
  const auto src_len = to_vector(lengths);

  // Live beams: row a*K + k belongs to sentence active[a].
  std::vector<int64_t> active(B);
  for (int64_t b = 0; b < B; ++b) active[b] = b;
  auto state = model.start(src, lengths);
  {
    std::vector<int64_t> expand;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < K; ++k) expand.push_back(b);
    state->expand_beams(index_tensor(expand, device), K);
  }
  std::vector<double> initial(B * K, kNegInf);
  for (int64_t b = 0; b < B; ++b) initial[b * K] = 0.0;  // only one live beam at t = 0
  Beams beams(std::move(initial), options.return_attention);
  torch::Tensor coverage;  // [rows, S] CPU float: the sum of each row's attention (coverage penalty)
  std::vector<std::vector<Hypothesis>> finished(B);

  auto prev = torch::full({B * K}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t t = 0; !active.empty(); ++t) {
    const int64_t A = static_cast<int64_t>(active.size());
    auto r = model.step(prev, *state, want_att);
    const int64_t V = r.logits.size(1);
    const int64_t* vocabulary = r.vocabulary.defined() ? r.vocabulary.data_ptr<int64_t>() : nullptr;
    auto word = [&](int64_t column) { return vocabulary ? vocabulary[column] : column; };
    const auto candidates = best_candidates(r.logits, beams.scores(), K, std::min<int64_t>(2 * K, K * V));
    const int64_t C = candidates.per_sentence;
    auto candidate_score = [&](int64_t a, int64_t j) { return candidates.scores[a * C + j]; };
    auto candidate_row = [&](int64_t a, int64_t j) { return a * K + candidates.ids[a * C + j] / V; };
    auto candidate_token = [&](int64_t a, int64_t j) { return word(candidates.ids[a * C + j] % V); };
    torch::Tensor att;
    if (want_att) {
      att = r.attention.to(torch::kCPU, torch::kFloat).contiguous();
      coverage = coverage.defined() ? coverage + att : att.clone();
    }
    auto attention_of = [&](int64_t row, int64_t b) {
      return options.return_attention ? attention_row(att, row, src_len[b]) : std::vector<float>();
    };
    auto finish = [&](int64_t b, int64_t row, double log_prob, std::optional<int64_t> last_token) {
      Hypothesis h = beams.finish(row, log_prob, last_token, attention_of(row, b));
      h.score = log_prob / gnmt_length_penalty(static_cast<int64_t>(h.tokens.size()) + 1, options.length_penalty);
      if (options.coverage_penalty != 0.0) {
        h.score += coverage_score(coverage[row].slice(0, 0, src_len[b]), options.coverage_penalty);
      }
      finished[b].push_back(std::move(h));
    };

    std::vector<int64_t> next_rows, next_tokens, next_active;
    std::vector<double> next_scores;
    std::vector<std::vector<float>> next_att;
    for (int64_t a = 0; a < A; ++a) {
      const int64_t b = active[a];
      const bool at_max = t + 1 >= max_target_length(src_len[b], options.max_length_ratio);
      std::vector<int64_t> live;  // candidate indices kept alive
      for (int64_t j = 0; j < C && static_cast<int64_t>(live.size()) < K; ++j) {
        const double s = candidate_score(a, j);
        if (s == kNegInf) break;
        const int64_t tok = candidate_token(a, j);
        if (tok == model.eos_id()) {
          if (j < K) finish(b, candidate_row(a, j), s, std::nullopt);
        } else if (at_max) {
          finish(b, candidate_row(a, j), s, tok);
          live.push_back(j);  // counted so that at most K are finished this way
        } else {
          live.push_back(j);
        }
      }
      const bool done = at_max || static_cast<int64_t>(finished[b].size()) >= K || live.empty();
      if (done) continue;
      next_active.push_back(b);
      for (int64_t k = 0; k < K; ++k) {
        if (k < static_cast<int64_t>(live.size())) {
          const int64_t row = candidate_row(a, live[k]);
          next_rows.push_back(row);
          next_tokens.push_back(candidate_token(a, live[k]));
          next_scores.push_back(candidate_score(a, live[k]));
          next_att.push_back(attention_of(row, b));
        } else {  // fewer than K live candidates: a dead beam that can never win
          next_rows.push_back(a * K);
          next_tokens.push_back(model.eos_id());
          next_scores.push_back(kNegInf);
          next_att.emplace_back();
        }
      }
    }
    const bool same_sentences = static_cast<int64_t>(next_active.size()) == A;
    active = std::move(next_active);
    if (active.empty()) break;
    auto index = index_tensor(next_rows, device);
    if (same_sentences) {
      state->reorder_beams(index);  // row a*K + k comes from a row of sentence a: memory unchanged
    } else {
      state->index_select(index);
    }
    if (coverage.defined()) coverage = coverage.index_select(0, torch::tensor(next_rows, torch::kLong));
    beams.advance(next_rows, next_tokens, std::move(next_scores), std::move(next_att));
    prev = index_tensor(next_tokens, device);
  }

  std::vector<std::vector<Hypothesis>> out(B);
  for (int64_t b = 0; b < B; ++b) {
    auto& f = finished[b];
    std::stable_sort(f.begin(), f.end(), [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
    const size_t n = std::min<size_t>(f.size(), static_cast<size_t>(options.n_best));
    out[b].assign(std::make_move_iterator(f.begin()), std::make_move_iterator(f.begin() + n));
  }
  return out;
}

}  // namespace attnmt
