#include "decoding/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "decoding/beams.h"
#include "decoding/candidates.h"
#include "decoding/constraints.h"
#include "decoding/neg_inf.h"
#include "decoding/search_parts.h"
#include "decoding/token_rules.h"
#include "decoding/toolkit_search.h"

namespace attnmt {

// search() for a batch with constraints: its sentences that have some by constrained_beam_search,
// the others by search() as if no sentence had any.
static std::vector<std::vector<Hypothesis>> search_with_constraints(StepModel& model, const torch::Tensor& src,
                                                                    const torch::Tensor& lengths,
                                                                    const SearchOptions& options, const Guides& guides) {
  std::vector<int64_t> with, without;
  for (int64_t b = 0; b < src.size(0); ++b) {
    (b < static_cast<int64_t>(guides.size()) && !guides[static_cast<size_t>(b)].constraints.empty() ? with : without)
        .push_back(b);
  }
  if (without.empty()) return constrained_beam_search(model, src, lengths, options, guides);
  std::vector<std::vector<Hypothesis>> out(static_cast<size_t>(src.size(0)));
  for (const auto* part : {&with, &without}) {
    if (part->empty()) continue;
    const auto index = torch::tensor(*part, torch::kLong).to(src.device());
    Guides sub;
    for (int64_t b : *part) sub.push_back(b < static_cast<int64_t>(guides.size()) ? guides[static_cast<size_t>(b)] : SentenceGuide{});
    auto sub_src = src.index_select(0, index), sub_lengths = lengths.index_select(0, index);
    auto results = part == &with ? constrained_beam_search(model, sub_src, sub_lengths, options, sub)
                                 : search(model, sub_src, sub_lengths, options, sub);
    for (size_t i = 0; i < part->size(); ++i) out[static_cast<size_t>((*part)[i])] = std::move(results[i]);
  }
  return out;
}

// Whether a sentence's decided output is watched (SentenceGuide::watch).
static bool has_watches(const Guides& guides) {
  return std::any_of(guides.begin(), guides.end(), [](const SentenceGuide& g) { return static_cast<bool>(g.watch); });
}

std::vector<std::vector<Hypothesis>> search(StepModel& model, const torch::Tensor& src,
                                            const torch::Tensor& lengths, const SearchOptions& options,
                                            const Guides& guides) {
  TORCH_CHECK(!has_watches(guides) || (options.rules == SearchRules::attnmt && !options.sampling && !has_constraints(guides)),
              "search: a sentence's decided output can be watched in greedy and beam search under attnmt's rules "
              "only (not with constraints or sampling)");
  if (options.rules != SearchRules::attnmt) return toolkit_search(model, src, lengths, options, guides);
  if (options.sampling) {
    TORCH_CHECK(!has_constraints(guides), "search: constraints need beam or greedy search, not sampling");
    return sampling_search(model, src, lengths, options, guides);
  }
  if (has_constraints(guides)) return search_with_constraints(model, src, lengths, options, guides);
  if (options.beam_size == 1 && options.n_best == 1 && options.coverage_penalty == 0.0) {
    return greedy_search(model, src, lengths, options, guides);
  }
  return beam_search(model, src, lengths, options, guides);
}

std::vector<std::vector<Hypothesis>> greedy_search(StepModel& model, const torch::Tensor& src,
                                                   const torch::Tensor& lengths, const SearchOptions& options,
                                                   const Guides& guides) {
  const auto device = model.device();
  const int64_t B = src.size(0);
  const auto src_len = to_vector(lengths);
  std::vector<Hypothesis> hyps(B);
  std::vector<char> stopped(B, 0);  // its watch asked to stop: no hypothesis
  std::vector<int64_t> active(B);  // row -> sentence
  for (int64_t b = 0; b < B; ++b) active[b] = b;
  auto state = model.start(src, lengths);
  const TokenRules rules(options, guides, model.eos_id());
  auto prev = torch::full({B}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t t = 0; !active.empty(); ++t) {
    auto r = model.step(prev, *state, options.return_attention);
    const bool ruled = rules.active(t);
    torch::Tensor scores = r.logits;
    if (ruled) {
      scores = ruled_log_probs(r);
      rules.apply(scores, t, active, [&](int64_t row) { return hyps[active[row]].tokens; },
                  r.vocabulary.defined() ? r.vocabulary.data_ptr<int64_t>() : nullptr);
    }
    auto [best_logit, best_tok] = scores.max(-1);
    best_tok = best_tok.to(device);
    if (r.vocabulary.defined()) best_tok = r.vocabulary.index_select(0, best_tok.cpu()).to(device);
    auto best = best_logit.to(torch::kCPU, torch::kDouble).contiguous();
    const auto log_z = ruled || r.log_probs ? std::vector<double>(active.size(), 0.0) : log_normalizers(r.logits);
    auto tok = to_vector(best_tok);
    torch::Tensor att = options.return_attention ? r.attention.to(torch::kCPU, torch::kFloat).contiguous()
                                                 : torch::Tensor();
    std::vector<int64_t> keep_rows, keep_sent;
    for (size_t row = 0; row < active.size(); ++row) {
      const int64_t b = active[row];
      auto& h = hyps[b];
      const double best_score = best.data_ptr<double>()[row];
      if (best_score == kNegInf) {  // every token barred: the hypothesis ends here, cut
        h.finished = false;
        h.score = length_normalised(h, options.length_penalty);
        continue;
      }
      h.log_prob += best_score - log_z[row];
      if (att.defined()) h.attention.push_back(attention_row(att, row, src_len[b]));
      const bool eos = tok[row] == model.eos_id();
      if (!eos) h.tokens.push_back(tok[row]);
      if (eos || t + 1 >= max_target_length(src_len[b], options)) {
        h.finished = eos;
        h.score = length_normalised(h, options.length_penalty);
      } else if (static_cast<size_t>(b) < guides.size() && guides[static_cast<size_t>(b)].watch &&
                 !guides[static_cast<size_t>(b)].watch(h.tokens)) {
        stopped[b] = 1;  // leaves the batch now
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
  for (int64_t b = 0; b < B; ++b) {
    if (!stopped[b]) out[b].push_back(std::move(hyps[b]));
  }
  return out;
}

std::vector<std::vector<Hypothesis>> beam_search(StepModel& model, const torch::Tensor& src,
                                                 const torch::Tensor& lengths, const SearchOptions& options,
                                                 const Guides& guides) {
  const auto device = model.device();
  const int64_t B = src.size(0);
  const int64_t K = options.beam_size;
  const auto src_len = to_vector(lengths);
  AttentionTrack attention(options, src_len);

  // Live beams: row a*K + k belongs to sentence active[a].
  std::vector<int64_t> active(B);
  for (int64_t b = 0; b < B; ++b) active[b] = b;
  auto state = model.start(src, lengths);
  expand_to_beams(*state, B, K, device);
  std::vector<double> initial(B * K, kNegInf);
  for (int64_t b = 0; b < B; ++b) initial[b * K] = 0.0;  // only one live beam at t = 0
  Beams beams(std::move(initial), options.return_attention);
  std::vector<std::vector<Hypothesis>> finished(B);

  const TokenRules rules(options, guides, model.eos_id());
  auto prev = torch::full({B * K}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t t = 0; !active.empty(); ++t) {
    const int64_t A = static_cast<int64_t>(active.size());
    auto r = model.step(prev, *state, attention.wanted());
    const int64_t V = r.logits.size(1);
    const int64_t* vocabulary = r.vocabulary.defined() ? r.vocabulary.data_ptr<int64_t>() : nullptr;
    auto word = [&](int64_t column) { return vocabulary ? vocabulary[column] : column; };
    const bool ruled = rules.active(t);
    torch::Tensor scores = r.logits;
    std::vector<char> all_barred;  // per row, with the rules: no token left to extend it by
    if (ruled) {
      scores = ruled_log_probs(r);
      std::vector<int64_t> sentence(static_cast<size_t>(A * K));
      for (int64_t row = 0; row < A * K; ++row) sentence[static_cast<size_t>(row)] = active[static_cast<size_t>(row / K)];
      rules.apply(scores, t, sentence, [&](int64_t row) { return beams.tokens(row); }, vocabulary);
      const auto row_max = std::get<0>(scores.max(-1)).contiguous();
      all_barred.resize(static_cast<size_t>(A * K));
      for (int64_t row = 0; row < A * K; ++row) all_barred[static_cast<size_t>(row)] = row_max.data_ptr<float>()[row] == -std::numeric_limits<float>::infinity();
    }
    const auto candidates =
        best_candidates(scores, beams.scores(), K, std::min<int64_t>(2 * K, K * V), ruled || r.log_probs);
    const int64_t C = candidates.per_sentence;
    auto candidate_score = [&](int64_t a, int64_t j) { return candidates.scores[a * C + j]; };
    auto candidate_row = [&](int64_t a, int64_t j) { return a * K + candidates.ids[a * C + j] / V; };
    auto candidate_token = [&](int64_t a, int64_t j) { return word(candidates.ids[a * C + j] % V); };
    attention.add_step(r.attention);
    auto finish = [&](int64_t b, int64_t row, double log_prob, std::optional<int64_t> last_token) {
      Hypothesis h = beams.finish(row, log_prob, last_token, attention.row(row, b));
      h.score = attention.score(h, row, b);
      finished[b].push_back(std::move(h));
    };

    std::vector<int64_t> next_rows, next_tokens, next_active;
    std::vector<double> next_scores;
    std::vector<std::vector<float>> next_att;
    for (int64_t a = 0; a < A; ++a) {
      const int64_t b = active[a];
      const bool at_max = t + 1 >= max_target_length(src_len[b], options);
      if (!all_barred.empty()) {  // a live beam that every rule bars ends here, cut, rather than take a barred token
        for (int64_t k = 0; k < K; ++k) {
          const int64_t row = a * K + k;
          if (all_barred[static_cast<size_t>(row)] && beams.scores()[static_cast<size_t>(row)] != kNegInf) {
            finish(b, row, beams.scores()[static_cast<size_t>(row)], std::nullopt);
            finished[b].back().finished = false;
          }
        }
      }
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
      const DecidedWatch* watch = static_cast<size_t>(b) < guides.size() ? &guides[static_cast<size_t>(b)].watch : nullptr;
      if (watch && *watch) {
        // Whatever wins extends a live beam or is finished already: what they all begin with is decided.
        std::vector<std::vector<int64_t>> candidates_so_far;
        for (int64_t j : live) {
          candidates_so_far.push_back(beams.tokens(candidate_row(a, j)));
          candidates_so_far.back().push_back(candidate_token(a, j));
        }
        for (const auto& h : finished[b]) candidates_so_far.push_back(h.tokens);
        if (!(*watch)(common_prefix(candidates_so_far))) {
          finished[b].clear();  // leaves the batch now, with no hypothesis
          continue;
        }
      }
      next_active.push_back(b);
      for (int64_t k = 0; k < K; ++k) {
        if (k < static_cast<int64_t>(live.size())) {
          const int64_t row = candidate_row(a, live[k]);
          next_rows.push_back(row);
          next_tokens.push_back(candidate_token(a, live[k]));
          next_scores.push_back(candidate_score(a, live[k]));
          next_att.push_back(attention.row(row, b));
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
    select_beam_rows(*state, next_rows, same_sentences, device);
    attention.select_rows(next_rows);
    beams.advance(next_rows, next_tokens, std::move(next_scores), std::move(next_att));
    prev = index_tensor(next_tokens, device);
  }

  return best_finished(finished, options.n_best);
}

}  // namespace attnmt
