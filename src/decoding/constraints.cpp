#include "decoding/constraints.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <set>

#include "decoding/beams.h"
#include "decoding/neg_inf.h"
#include "decoding/search_parts.h"
#include "decoding/token_rules.h"

namespace attnmt {

namespace {

int total_tokens(const Phrases& phrases) {
  int n = 0;
  for (const auto& p : phrases) n += static_cast<int>(p.size());
  return n;
}

struct PhraseCandidate {
  double log_prob;
  int64_t row;    // the row it extends
  int64_t token;
  ConstraintState state;  // after token
};

// Dynamic beam allocation: at most `beam` candidates, shared among banks 0..banks-1 by the
// candidates' progress (Post & Vilar, 2018, section 3.2). `candidates` are sorted, likeliest first.
std::vector<const PhraseCandidate*> allocate(const std::vector<PhraseCandidate>& candidates, int64_t beam, int64_t banks) {
  std::vector<std::vector<const PhraseCandidate*>> bank(static_cast<size_t>(banks));
  for (const auto& c : candidates) bank[static_cast<size_t>(std::min<int64_t>(c.state.met_tokens(), banks - 1))].push_back(&c);
  const auto sizes = bank_sizes(beam, banks);
  std::vector<size_t> taken(bank.size(), 0);
  std::vector<const PhraseCandidate*> chosen;
  for (size_t k = 0; k < bank.size(); ++k) {
    taken[k] = std::min(bank[k].size(), static_cast<size_t>(sizes[k]));
    chosen.insert(chosen.end(), bank[k].begin(), bank[k].begin() + static_cast<std::ptrdiff_t>(taken[k]));
  }
  // Slots a bank could not fill go round the banks, the most advanced first.
  for (bool any = true; any && static_cast<int64_t>(chosen.size()) < beam;) {
    any = false;
    for (size_t k = bank.size(); k-- > 0 && static_cast<int64_t>(chosen.size()) < beam;) {
      if (taken[k] < bank[k].size()) {
        chosen.push_back(bank[k][taken[k]++]);
        any = true;
      }
    }
  }
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const PhraseCandidate* x, const PhraseCandidate* y) { return x->log_prob > y->log_prob; });
  return chosen;
}

}  // namespace

ConstraintState::ConstraintState(const Phrases& phrases)
    : met_(phrases.size(), 0), unmet_(static_cast<int>(phrases.size())) {}

ConstraintState ConstraintState::advance(const Phrases& phrases, int64_t token) const {
  ConstraintState s = *this;
  if (s.current_ >= 0) {
    const auto& phrase = phrases[static_cast<size_t>(s.current_)];
    if (phrase[static_cast<size_t>(s.progress_)] == token) {
      ++s.progress_;
      ++s.met_tokens_;
      if (s.progress_ == static_cast<int>(phrase.size())) {
        s.met_[static_cast<size_t>(s.current_)] = 1;
        --s.unmet_;
        s.current_ = -1;
        s.progress_ = 0;
      }
      return s;
    }
    s.met_tokens_ -= s.progress_;  // the phrase is left half-done: its progress is undone
    s.current_ = -1;
    s.progress_ = 0;
  }
  for (size_t i = 0; i < phrases.size(); ++i) {
    if (s.met_[i] || phrases[i].front() != token) continue;
    ++s.met_tokens_;
    if (phrases[i].size() == 1) {
      s.met_[i] = 1;
      --s.unmet_;
    } else {
      s.current_ = static_cast<int>(i);
      s.progress_ = 1;
    }
    break;
  }
  return s;
}

std::vector<int64_t> ConstraintState::progress_tokens(const Phrases& phrases) const {
  if (current_ >= 0) return {phrases[static_cast<size_t>(current_)][static_cast<size_t>(progress_)]};
  std::vector<int64_t> out;
  for (size_t i = 0; i < phrases.size(); ++i) {
    if (!met_[i] && std::find(out.begin(), out.end(), phrases[i].front()) == out.end()) out.push_back(phrases[i].front());
  }
  return out;
}

std::vector<int64_t> bank_sizes(int64_t beam, int64_t banks) {
  std::vector<int64_t> sizes(static_cast<size_t>(banks), beam / banks);
  for (int64_t k = 0; k < beam % banks; ++k) ++sizes[static_cast<size_t>(banks - 1 - k)];
  return sizes;
}

bool has_constraints(const Guides& guides) {
  return std::any_of(guides.begin(), guides.end(), [](const SentenceGuide& g) { return !g.constraints.empty(); });
}

std::vector<std::vector<Hypothesis>> constrained_beam_search(StepModel& model, const torch::Tensor& src,
                                                             const torch::Tensor& lengths,
                                                             const SearchOptions& options, const Guides& guides) {
  const auto device = model.device();
  const int64_t B = src.size(0);
  const int64_t K = options.beam_size;
  const int64_t eos = model.eos_id();
  const auto src_len = to_vector(lengths);
  AttentionTrack attention(options, src_len);
  static const Phrases kNone;
  auto phrases_of = [&](int64_t b) -> const Phrases& {
    return b < static_cast<int64_t>(guides.size()) ? guides[static_cast<size_t>(b)].constraints : kNone;
  };
  for (int64_t b = 0; b < B; ++b) {
    for (const auto& p : phrases_of(b)) TORCH_CHECK(!p.empty(), "constrained_beam_search: an empty phrase");
  }

  std::vector<int64_t> active(B);  // row a*K + k belongs to sentence active[a]
  std::iota(active.begin(), active.end(), 0);
  auto state = model.start(src, lengths);
  expand_to_beams(*state, B, K, device);
  std::vector<double> initial(B * K, kNegInf);
  std::vector<ConstraintState> progress(B * K);
  for (int64_t b = 0; b < B; ++b) {
    initial[b * K] = 0.0;
    for (int64_t k = 0; k < K; ++k) progress[b * K + k] = ConstraintState(phrases_of(b));
  }
  Beams beams(std::move(initial), options.return_attention);
  std::vector<std::vector<Hypothesis>> finished(B);
  const TokenRules rules(options, guides, eos);
  auto prev = torch::full({B * K}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t t = 0; !active.empty(); ++t) {
    const int64_t A = static_cast<int64_t>(active.size());
    auto r = model.step(prev, *state, attention.wanted());
    TORCH_CHECK(!r.vocabulary.defined(), "constrained decoding needs the full target vocabulary (no shortlist)");
    const int64_t V = r.logits.size(1);
    auto lp = ruled_log_probs(r);  // [A*K, V]
    if (rules.active(t)) {
      std::vector<int64_t> sentence(static_cast<size_t>(A * K));
      for (int64_t row = 0; row < A * K; ++row) sentence[static_cast<size_t>(row)] = active[static_cast<size_t>(row / K)];
      rules.apply(lp, t, sentence, [&](int64_t row) { return beams.tokens(row); }, nullptr);
    }
    float* p = lp.data_ptr<float>();
    for (int64_t row = 0; row < A * K; ++row) {
      if (!progress[static_cast<size_t>(row)].all_met()) p[row * V + eos] = -std::numeric_limits<float>::infinity();
    }
    const auto& base = beams.scores();
    auto total = lp.to(torch::kDouble).add_(torch::tensor(base, torch::kDouble).unsqueeze(1)).view({A, K * V});
    auto [top_scores, top_ids] = total.topk(std::min(K, K * V), 1);
    top_ids = top_ids.contiguous();
    const auto row_best = std::get<1>(lp.max(1)).contiguous();
    attention.add_step(r.attention);
    auto finish = [&](int64_t b, const PhraseCandidate& c, std::optional<int64_t> last_token) {
      Hypothesis h = beams.finish(c.row, c.log_prob, last_token, attention.row(c.row, b));
      h.score = attention.score(h, c.row, b);
      h.constraints_met = c.state.all_met();
      finished[b].push_back(std::move(h));
    };

    std::vector<int64_t> next_rows, next_tokens, next_active;
    std::vector<double> next_scores;
    std::vector<std::vector<float>> next_att;
    std::vector<ConstraintState> next_progress;
    for (int64_t a = 0; a < A; ++a) {
      const int64_t b = active[a];
      const Phrases& phrases = phrases_of(b);
      const bool at_max = t + 1 >= max_target_length(src_len[b], options);
      std::vector<PhraseCandidate> candidates;
      std::set<std::pair<int64_t, int64_t>> seen;
      auto add = [&](int64_t row, int64_t token) {
        if (token < 0 || token >= V) return;
        const double s = base[static_cast<size_t>(row)] + p[row * V + token];
        if (s == kNegInf || !seen.insert({row, token}).second) return;
        const auto& from = progress[static_cast<size_t>(row)];
        candidates.push_back({s, row, token, token == eos ? from : from.advance(phrases, token)});
      };
      const int64_t top_n = top_ids.size(1);
      for (int64_t j = 0; j < top_n; ++j) {
        const int64_t id = top_ids.data_ptr<int64_t>()[a * top_n + j];
        add(a * K + id / V, id % V);
      }
      for (int64_t row = a * K; row < (a + 1) * K; ++row) {
        if (base[static_cast<size_t>(row)] == kNegInf) continue;
        add(row, row_best.data_ptr<int64_t>()[row]);
        for (int64_t token : progress[static_cast<size_t>(row)].progress_tokens(phrases)) add(row, token);
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const PhraseCandidate& x, const PhraseCandidate& y) { return x.log_prob > y.log_prob; });
      std::vector<const PhraseCandidate*> live;
      for (const PhraseCandidate* c : allocate(candidates, K, total_tokens(phrases) + 1)) {
        if (c->token == eos) {
          finish(b, *c, std::nullopt);
        } else if (at_max) {
          finish(b, *c, c->token);
        } else {
          live.push_back(c);
        }
      }
      if (at_max || static_cast<int64_t>(finished[b].size()) >= K || live.empty()) continue;
      next_active.push_back(b);
      for (int64_t k = 0; k < K; ++k) {
        if (k < static_cast<int64_t>(live.size())) {
          const PhraseCandidate& c = *live[static_cast<size_t>(k)];
          next_rows.push_back(c.row);
          next_tokens.push_back(c.token);
          next_scores.push_back(c.log_prob);
          next_att.push_back(attention.row(c.row, b));
          next_progress.push_back(c.state);
        } else {  // fewer than K live candidates: a dead beam that can never win
          next_rows.push_back(a * K);
          next_tokens.push_back(eos);
          next_scores.push_back(kNegInf);
          next_att.emplace_back();
          next_progress.push_back(progress[static_cast<size_t>(a * K)]);
        }
      }
    }
    const bool same_sentences = static_cast<int64_t>(next_active.size()) == A;
    active = std::move(next_active);
    if (active.empty()) break;
    select_beam_rows(*state, next_rows, same_sentences, device);
    attention.select_rows(next_rows);
    beams.advance(next_rows, next_tokens, std::move(next_scores), std::move(next_att));
    progress = std::move(next_progress);
    prev = index_tensor(next_tokens, device);
  }

  return best_finished(finished, options.n_best);
}

}  // namespace attnmt
