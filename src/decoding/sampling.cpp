// Random sampling (decode.sampling): each sentence's n_best samples are drawn token by token from
// softmax(log_probs / temperature), cut first to the tokens whose model probability reaches
// epsilon (the likeliest always stays), then to the top_k likeliest and then to the smallest set
// of likeliest tokens whose probability reaches top_p. Every sample has a generator of its own,
// seeded by (decode.seed, the sentence's line, the sample's number), so what is drawn does not
// depend on the batch, the worker or the thread that decodes it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "decoding/neg_inf.h"
#include "decoding/search.h"
#include "decoding/search_parts.h"
#include "decoding/token_rules.h"
#include "util/seed_mix.h"

namespace attnmt {

namespace {

// A uniform double in [0, 1) from 53 random bits (the same on every platform, unlike
// std::uniform_real_distribution's).
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// A token the draw may pick: its log-probability, column and tempered weight.
struct Candidate {
  float lp;
  int64_t column;
  double weight;
};

// Draws a column of one row of log-probabilities (-inf: barred), or -1 when every one is barred.
int64_t draw(const float* lp, int64_t V, const SearchOptions& o, std::mt19937_64& rng) {
  std::vector<Candidate> pool;  // column order, but while a cut sorts it
  pool.reserve(static_cast<size_t>(V));
  // The likeliest log-probability: every cut below keeps that token, so it stays the pool's top.
  float top = kNegInfF;
  for (int64_t v = 0; v < V; ++v)
    if (lp[v] > kNegInfF) {
      pool.push_back({lp[v], v, 0.0});
      top = std::max(top, lp[v]);
    }
  if (pool.empty()) return -1;
  if (o.epsilon > 0) {
    const float floor = std::min(top, static_cast<float>(std::log(o.epsilon)));
    pool.erase(std::remove_if(pool.begin(), pool.end(), [floor](const Candidate& c) { return c.lp < floor; }), pool.end());
  }
  auto likelier = [](const Candidate& a, const Candidate& b) { return a.lp != b.lp ? a.lp > b.lp : a.column < b.column; };
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < pool.size()) {
    std::partial_sort(pool.begin(), pool.begin() + o.top_k, pool.end(), likelier);
    pool.resize(static_cast<size_t>(o.top_k));
  } else if (o.top_p < 1.0) {
    std::sort(pool.begin(), pool.end(), likelier);
  }
  // Tempered weights, relative to the likeliest token (no overflow for any temperature).
  double total = 0;
  for (auto& c : pool) total += c.weight = std::exp((c.lp - top) / o.temperature);
  if (o.top_p < 1.0) {  // pool is sorted: keep the shortest head whose share reaches top_p
    double head = 0;
    size_t keep = 0;
    while (keep < pool.size() && head < o.top_p * total) head += pool[keep++].weight;
    pool.resize(keep);
  }
  // The draw walks the kept tokens in column order, not in likelihood order: two tokens whose
  // log-probabilities differ by rounding alone (another batch size, another BLAS) could swap places
  // in the likelihood order, and the same u would then pick the other one.
  if (o.top_k > 0 || o.top_p < 1.0) {  // and the kept tokens' total summed in that order
    std::sort(pool.begin(), pool.end(), [](const Candidate& a, const Candidate& b) { return a.column < b.column; });
    total = 0;
    for (const auto& c : pool) total += c.weight;
  }
  double u = uniform(rng) * total;
  for (const auto& c : pool) {
    if (u < c.weight) return c.column;
    u -= c.weight;
  }
  return pool.back().column;  // u within rounding of total
}

}  // namespace

std::vector<std::vector<Hypothesis>> sampling_search(StepModel& model, const torch::Tensor& src,
                                                     const torch::Tensor& lengths, const SearchOptions& options,
                                                     const Guides& guides) {
  const auto device = model.device();
  const int64_t B = src.size(0);
  const int64_t n = options.n_best;
  const auto src_len = to_vector(lengths);
  // Sample j of sentence b is hypothesis b * n + j; rows of the state follow `active`.
  std::vector<Hypothesis> hyps(static_cast<size_t>(B * n));
  std::vector<std::mt19937_64> rngs;
  std::vector<int64_t> active(static_cast<size_t>(B * n)), expand(static_cast<size_t>(B * n));
  for (int64_t b = 0; b < B; ++b) {
    const uint64_t line = guides.empty() ? static_cast<uint64_t>(b) : guides[static_cast<size_t>(b)].id;
    for (int64_t j = 0; j < n; ++j) {
      active[static_cast<size_t>(b * n + j)] = b * n + j;
      expand[static_cast<size_t>(b * n + j)] = b;
      rngs.emplace_back(mix_seeds(options.seed, line, j));
    }
  }
  auto state = model.start(src, lengths);
  state->index_select(torch::tensor(expand, torch::kLong).to(device));  // rows end one by one: no beam groups
  const TokenRules rules(options, guides, model.eos_id());
  auto prev = torch::full({B * n}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t t = 0; !active.empty(); ++t) {
    auto r = model.step(prev, *state, options.return_attention);
    auto lp = ruled_log_probs(r);
    const int64_t V = lp.size(1);
    const int64_t* vocabulary = r.vocabulary.defined() ? r.vocabulary.data_ptr<int64_t>() : nullptr;
    if (rules.active(t)) {
      std::vector<int64_t> sentence(active.size());
      for (size_t row = 0; row < active.size(); ++row) sentence[row] = active[row] / n;
      rules.apply(lp, t, sentence, [&](int64_t row) { return hyps[static_cast<size_t>(active[static_cast<size_t>(row)])].tokens; },
                  vocabulary);
    }
    torch::Tensor att = options.return_attention ? r.attention.to(torch::kCPU, torch::kFloat).contiguous() : torch::Tensor();
    std::vector<int64_t> keep_rows, keep_hyps, next_tokens;
    for (size_t row = 0; row < active.size(); ++row) {
      const int64_t i = active[row];
      auto& h = hyps[static_cast<size_t>(i)];
      const float* p = lp.data_ptr<float>() + static_cast<int64_t>(row) * V;
      const int64_t column = draw(p, V, options, rngs[static_cast<size_t>(i)]);
      if (column < 0) {  // every token barred: the sample ends here, cut
        h.finished = false;
        h.score = length_normalised(h, options.length_penalty);
        continue;
      }
      const int64_t token = vocabulary ? vocabulary[column] : column;
      h.log_prob += p[column];
      if (att.defined()) h.attention.push_back(attention_row(att, static_cast<int64_t>(row), src_len[i / n]));
      const bool eos = token == model.eos_id();
      if (!eos) h.tokens.push_back(token);
      if (eos || t + 1 >= max_target_length(src_len[i / n], options)) {
        h.finished = eos;
        h.score = length_normalised(h, options.length_penalty);
      } else {
        keep_rows.push_back(static_cast<int64_t>(row));
        keep_hyps.push_back(i);
        next_tokens.push_back(token);
      }
    }
    if (keep_rows.empty()) break;
    if (keep_rows.size() != active.size()) state->index_select(torch::tensor(keep_rows, torch::kLong).to(device));
    active = std::move(keep_hyps);
    prev = torch::tensor(next_tokens, torch::kLong).to(device);
  }
  std::vector<std::vector<Hypothesis>> out(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    auto first = hyps.begin() + b * n;
    out[static_cast<size_t>(b)].assign(std::make_move_iterator(first), std::make_move_iterator(first + n));
    std::stable_sort(out[static_cast<size_t>(b)].begin(), out[static_cast<size_t>(b)].end(),
                     [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
  }
  return out;
}

}  // namespace attnmt
