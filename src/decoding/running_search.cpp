#include "decoding/running_search.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>

#include "decoding/candidates.h"
#include "decoding/neg_inf.h"
#include "decoding/search_parts.h"
#include "decoding/token_rules.h"

namespace attnmt {

std::string RunningSearch::refusal(const StepModel& model, const SearchOptions& options) {
  if (options.rules != SearchRules::attnmt) {
    return std::string("decode.search_rules ") + name_string(options.rules) + ": the toolkit's search keeps its batches";
  }
  if (options.sampling) return "decode.sampling: sampling keeps its batches";
  if (!model.merges_states()) {
    return "the model's batches cannot be merged (a vocabulary shortlist, decoder self-attention, or an attention "
           "that reads the step or keeps no per-position memory: local_m, forced_forward, static, area)";
  }
  return "";
}

RunningSearch::RunningSearch(StepModel& model, const SearchOptions& options) : model_(model), options_(options) {
  const auto why = refusal(model, options);
  if (!why.empty()) throw std::logic_error("RunningSearch: " + why);
  // The same choice as search() makes.
  greedy_ = options.beam_size == 1 && options.n_best == 1 && options.coverage_penalty == 0.0;
  K_ = greedy_ ? 1 : options.beam_size;
}

std::vector<uint64_t> RunningSearch::add(const torch::Tensor& src, const torch::Tensor& lengths, Guides guides) {
  const int64_t B = src.size(0);
  if (!guides.empty() && static_cast<int64_t>(guides.size()) != B) {
    throw std::invalid_argument("RunningSearch::add: guides for " + std::to_string(guides.size()) + " of " +
                                std::to_string(B) + " sentences");
  }
  for (const auto& g : guides) {
    if (!g.constraints.empty()) throw std::invalid_argument("RunningSearch::add: constraints keep their batches (search())");
  }
  if (B == 0) return {};
  auto state = model_.start(src, lengths);
  if (!greedy_) expand_to_beams(*state, B, K_, model_.device());
  adopt(std::move(state));
  const auto src_len = to_vector(lengths);
  std::vector<uint64_t> tickets;
  for (int64_t b = 0; b < B; ++b) {
    tickets.push_back(enter(src_len[static_cast<size_t>(b)], guides.empty() ? SentenceGuide{} : std::move(guides[static_cast<size_t>(b)])).ticket);
  }
  return tickets;
}

std::vector<uint64_t> RunningSearch::resume(std::unique_ptr<SearchState> state, std::vector<Resumed> sentences) {
  if (options_.return_attention || options_.coverage_penalty != 0.0) {
    throw std::invalid_argument("RunningSearch::resume: not with return_attention or a coverage penalty");
  }
  for (const auto& r : sentences) {
    if (r.tokens.empty() || !r.guide.prefix.empty() || !r.guide.constraints.empty() ||
        static_cast<int64_t>(r.tokens.size()) >= max_target_length(r.src_len, options_) ||
        std::find(r.tokens.begin(), r.tokens.end(), model_.eos_id()) != r.tokens.end()) {
      throw std::invalid_argument("RunningSearch::resume: a history empty, with eos, at the maximum length, or with a prefix");
    }
  }
  const int64_t B = static_cast<int64_t>(sentences.size());
  if (B == 0) return {};
  if (!greedy_) expand_to_beams(*state, B, K_, model_.device());
  adopt(std::move(state));
  std::vector<uint64_t> tickets;
  for (auto& r : sentences) {
    auto& s = enter(r.src_len, std::move(r.guide));
    s.t = static_cast<int64_t>(r.tokens.size());
    s.prev[0] = r.tokens.back();
    if (greedy_) {
      s.hyp.tokens = r.tokens;
      s.hyp.log_prob = r.log_prob;
    } else {
      // Its history as the rows' back-pointers: row 0 live with the history's log-probability,
      // the others dead beams, fed eos, as beam search keeps them.
      std::vector<double> scores(static_cast<size_t>(K_), kNegInf);
      scores[0] = r.log_prob;
      std::vector<int64_t> parents(static_cast<size_t>(K_), 0);
      for (const int64_t token : r.tokens) {
        std::vector<int64_t> tokens(static_cast<size_t>(K_), model_.eos_id());
        tokens[0] = token;
        s.beams->advance(parents, tokens, scores, {});
      }
      std::fill(s.prev.begin() + 1, s.prev.end(), model_.eos_id());
    }
    tickets.push_back(s.ticket);
  }
  return tickets;
}

void RunningSearch::adopt(std::unique_ptr<SearchState> state) {
  if (state_) {
    model_.merge(*state_, *state);
  } else {
    state_ = std::move(state);
  }
}

RunningSearch::Sentence& RunningSearch::enter(int64_t src_len, SentenceGuide guide) {
  Sentence s;
  s.ticket = next_ticket_++;
  if (free_slots_.empty()) {
    s.slot = guides_.size();
    guides_.emplace_back();
  } else {
    s.slot = free_slots_.back();
    free_slots_.pop_back();
  }
  guides_[s.slot] = std::move(guide);
  s.src_len = src_len;
  s.prev.assign(static_cast<size_t>(K_), model_.bos_id());
  if (!greedy_) {
    std::vector<double> initial(static_cast<size_t>(K_), kNegInf);
    initial[0] = 0.0;  // only one live beam at t = 0
    s.beams = std::make_unique<Beams>(std::move(initial), options_.return_attention);
  }
  running_.push_back(std::move(s));
  return running_.back();
}

void RunningSearch::release(Sentence& s) {
  guides_[s.slot] = SentenceGuide{};  // its watch (a request's) goes now
  free_slots_.push_back(s.slot);
}

// A step's scores as each sentence alone would have them: the token rules' log-probabilities
// (search_parts.h: ruled_log_probs) for the sentences whose rules are active at their own step, the
// logits as they are for the others (search.cpp makes that choice per batch; a running batch's
// sentences are at different steps, so it is made per sentence).
struct RunningSearch::StepScores {
  std::vector<char> ruled;      // per sentence
  bool any_ruled = false, all_ruled = true;
  torch::Tensor ruled_scores;   // [rows, V] CPU float, with the rules applied (any_ruled)
};

std::vector<RunningSearch::Done> RunningSearch::step() {
  std::vector<Done> done;
  if (running_.empty()) return done;
  const auto device = model_.device();
  std::vector<int64_t> prev;
  prev.reserve(running_.size() * static_cast<size_t>(K_));
  for (const auto& s : running_) prev.insert(prev.end(), s.prev.begin(), s.prev.end());
  const bool want_attention = options_.return_attention || options_.coverage_penalty != 0.0;
  auto r = model_.step(index_tensor(prev, device), *state_, want_attention);
  TORCH_CHECK(!r.vocabulary.defined(), "RunningSearch: a step with a shortlist (merges_states() should be false)");

  const TokenRules rules(options_, guides_, model_.eos_id());
  StepScores scores;
  scores.ruled.resize(running_.size());
  for (size_t i = 0; i < running_.size(); ++i) {
    scores.ruled[i] = rules.active_for(running_[i].t, static_cast<int64_t>(running_[i].slot));
    scores.any_ruled = scores.any_ruled || scores.ruled[i];
    scores.all_ruled = scores.all_ruled && scores.ruled[i];
  }
  if (scores.any_ruled) {
    scores.ruled_scores = ruled_log_probs(r);
    std::vector<int64_t> slot(prev.size());
    for (size_t row = 0; row < prev.size(); ++row) slot[row] = static_cast<int64_t>(running_[row / static_cast<size_t>(K_)].slot);
    // Rows of sentences whose rules are not active are barred nothing (active_for is false) and not read.
    rules.apply_at(
        scores.ruled_scores, [&](int64_t row) { return running_[static_cast<size_t>(row / K_)].t; }, slot,
        [&](int64_t row) {
          const auto& s = running_[static_cast<size_t>(row / K_)];
          return greedy_ ? s.hyp.tokens : s.beams->tokens(row % K_);
        },
        nullptr);
  }
  return greedy_ ? greedy_step(r, scores) : beam_step(r, scores);
}

std::vector<RunningSearch::Done> RunningSearch::greedy_step(const StepResult& r, StepScores& scores) {
  const auto device = model_.device();
  const size_t A = running_.size();
  // Per row, as greedy_search takes it: the best of the ruled log-probabilities, or of the logits
  // with log Z subtracted after.
  torch::Tensor raw_best, raw_tok, ruled_best, ruled_tok;
  std::vector<double> log_z;
  if (!scores.all_ruled) {
    auto [v, i] = r.logits.max(-1);
    raw_best = v.to(torch::kCPU, torch::kDouble).contiguous();
    raw_tok = i.to(torch::kCPU, torch::kLong).contiguous();
    log_z = r.log_probs ? std::vector<double>(A, 0.0) : log_normalizers(r.logits);
  }
  if (scores.any_ruled) {
    auto [v, i] = scores.ruled_scores.max(-1);
    ruled_best = v.to(torch::kDouble).contiguous();
    ruled_tok = i.to(torch::kLong).contiguous();
  }
  torch::Tensor att = options_.return_attention ? r.attention.to(torch::kCPU, torch::kFloat).contiguous() : torch::Tensor();
  std::vector<Done> done;
  std::vector<int64_t> keep_rows;
  std::vector<Sentence> kept;
  for (size_t row = 0; row < A; ++row) {
    auto& s = running_[row];
    auto& h = s.hyp;
    const bool ruled = scores.ruled[row];
    const double best = ruled ? ruled_best.data_ptr<double>()[row] : raw_best.data_ptr<double>()[row];
    const int64_t tok = ruled ? ruled_tok.data_ptr<int64_t>()[row] : raw_tok.data_ptr<int64_t>()[row];
    bool leaves = true, stopped = false;
    if (best == kNegInf) {  // every token barred: the hypothesis ends here, cut
      h.finished = false;
      h.score = length_normalised(h, options_.length_penalty);
    } else {
      h.log_prob += best - (ruled ? 0.0 : log_z[row]);
      if (att.defined()) h.attention.push_back(attention_row(att, static_cast<int64_t>(row), s.src_len));
      const bool eos = tok == model_.eos_id();
      if (!eos) h.tokens.push_back(tok);
      const auto& watch = guides_[s.slot].watch;
      if (eos || s.t + 1 >= max_target_length(s.src_len, options_)) {
        h.finished = eos;
        h.score = length_normalised(h, options_.length_penalty);
      } else if (watch && !watch(h.tokens)) {
        stopped = true;
      } else {
        leaves = false;
        s.prev.assign(1, tok);
        ++s.t;
      }
    }
    if (leaves) {
      Done d;
      d.ticket = s.ticket;
      d.stopped = stopped;
      if (!stopped) d.n_best.push_back(std::move(h));
      done.push_back(std::move(d));
      release(s);
    } else {
      keep_rows.push_back(static_cast<int64_t>(row));
      kept.push_back(std::move(s));
    }
  }
  running_ = std::move(kept);
  if (running_.empty()) {
    state_.reset();
  } else if (keep_rows.size() != A) {
    state_->index_select(index_tensor(keep_rows, device));
  }
  return done;
}

std::vector<RunningSearch::Done> RunningSearch::beam_step(const StepResult& r, StepScores& scores) {
  const auto device = model_.device();
  const int64_t K = K_;
  const int64_t A = static_cast<int64_t>(running_.size());
  const int64_t V = r.logits.size(1);
  const int64_t C = std::min<int64_t>(2 * K, K * V);
  // Each sentence's candidates, from the ruled log-probabilities or the logits as beam_search would
  // take them for it alone: one best_candidates call per kind of sentence.
  std::vector<double> cand_score(static_cast<size_t>(A * C));
  std::vector<int64_t> cand_id(static_cast<size_t>(A * C));
  for (const bool ruled : {false, true}) {
    std::vector<int64_t> sentences, rows;
    std::vector<double> base;
    for (int64_t a = 0; a < A; ++a) {
      if (static_cast<bool>(scores.ruled[static_cast<size_t>(a)]) != ruled) continue;
      sentences.push_back(a);
      const auto& s = running_[static_cast<size_t>(a)].beams->scores();
      for (int64_t k = 0; k < K; ++k) rows.push_back(a * K + k);
      base.insert(base.end(), s.begin(), s.end());
    }
    if (sentences.empty()) continue;
    const auto& all = ruled ? scores.ruled_scores : r.logits;
    const bool every_row = static_cast<int64_t>(sentences.size()) == A;
    const auto part = every_row ? all : all.index_select(0, index_tensor(rows, all.device()));
    const auto c = best_candidates(part, base, K, C, ruled || r.log_probs);
    for (size_t i = 0; i < sentences.size(); ++i) {
      std::copy_n(c.scores.begin() + static_cast<std::ptrdiff_t>(i * C), C, cand_score.begin() + sentences[i] * C);
      std::copy_n(c.ids.begin() + static_cast<std::ptrdiff_t>(i * C), C, cand_id.begin() + sentences[i] * C);
    }
  }
  torch::Tensor row_max;  // with the rules: a row whose every token is barred
  if (scores.any_ruled) row_max = std::get<0>(scores.ruled_scores.max(-1)).contiguous();
  torch::Tensor att;
  if (options_.return_attention || options_.coverage_penalty != 0.0) att = r.attention.to(torch::kCPU, torch::kFloat).contiguous();

  std::vector<Done> done;
  std::vector<Sentence> kept;
  std::vector<int64_t> next_rows;
  for (int64_t a = 0; a < A; ++a) {
    auto& s = running_[static_cast<size_t>(a)];
    auto& beams = *s.beams;
    if (options_.coverage_penalty != 0.0) {  // its rows' attention sums, with this step's
      const auto rows = att.slice(0, a * K, a * K + K).slice(1, 0, s.src_len);
      s.coverage = s.coverage.defined() ? s.coverage + rows : rows.clone();
    }
    auto att_row = [&](int64_t k) {
      return options_.return_attention ? attention_row(att, a * K + k, s.src_len) : std::vector<float>();
    };
    auto finish = [&](int64_t k, double log_prob, std::optional<int64_t> last_token) {
      Hypothesis h = beams.finish(k, log_prob, last_token, att_row(k));
      h.score = length_normalised(h, options_.length_penalty);
      if (options_.coverage_penalty != 0.0) h.score += coverage_score(s.coverage[k], options_.coverage_penalty);
      s.finished.push_back(std::move(h));
    };
    const double* cs = cand_score.data() + a * C;
    const int64_t* ci = cand_id.data() + a * C;
    const bool at_max = s.t + 1 >= max_target_length(s.src_len, options_);
    if (scores.ruled[static_cast<size_t>(a)]) {  // a live beam that every rule bars ends here, cut
      for (int64_t k = 0; k < K; ++k) {
        if (row_max.data_ptr<float>()[a * K + k] == -std::numeric_limits<float>::infinity() &&
            beams.scores()[static_cast<size_t>(k)] != kNegInf) {
          finish(k, beams.scores()[static_cast<size_t>(k)], std::nullopt);
          s.finished.back().finished = false;
        }
      }
    }
    std::vector<int64_t> live;
    for (int64_t j = 0; j < C && static_cast<int64_t>(live.size()) < K; ++j) {
      if (cs[j] == kNegInf) break;
      const int64_t tok = ci[j] % V;
      if (tok == model_.eos_id()) {
        if (j < K) finish(ci[j] / V, cs[j], std::nullopt);
      } else if (at_max) {
        finish(ci[j] / V, cs[j], tok);
        live.push_back(j);  // counted so that at most K are finished this way
      } else {
        live.push_back(j);
      }
    }
    bool leaves = at_max || static_cast<int64_t>(s.finished.size()) >= K || live.empty();
    bool stopped = false;
    const auto& watch = guides_[s.slot].watch;
    if (!leaves && watch) {
      // Whatever wins extends a live beam or is finished already: what they all begin with is decided.
      std::vector<std::vector<int64_t>> so_far;
      for (int64_t j : live) {
        so_far.push_back(beams.tokens(ci[j] / V));
        so_far.back().push_back(ci[j] % V);
      }
      for (const auto& h : s.finished) so_far.push_back(h.tokens);
      stopped = leaves = !watch(common_prefix(so_far));
    }
    if (leaves) {
      Done d;
      d.ticket = s.ticket;
      d.stopped = stopped;
      if (!stopped) {
        std::vector<std::vector<Hypothesis>> one(1);
        one[0] = std::move(s.finished);
        d.n_best = std::move(best_finished(one, options_.n_best)[0]);
      }
      done.push_back(std::move(d));
      release(s);
      continue;
    }
    std::vector<int64_t> parents, tokens, rows;
    std::vector<double> next_scores;
    std::vector<std::vector<float>> next_att;
    for (int64_t k = 0; k < K; ++k) {
      if (k < static_cast<int64_t>(live.size())) {
        const int64_t j = live[static_cast<size_t>(k)];
        parents.push_back(ci[j] / V);
        tokens.push_back(ci[j] % V);
        next_scores.push_back(cs[j]);
        next_att.push_back(att_row(ci[j] / V));
      } else {  // fewer than K live candidates: a dead beam that can never win
        parents.push_back(0);
        tokens.push_back(model_.eos_id());
        next_scores.push_back(kNegInf);
        next_att.emplace_back();
      }
    }
    for (int64_t p : parents) next_rows.push_back(a * K + p);
    if (s.coverage.defined()) s.coverage = s.coverage.index_select(0, torch::tensor(parents, torch::kLong));
    beams.advance(parents, tokens, std::move(next_scores), std::move(next_att));
    s.prev = tokens;
    ++s.t;
    kept.push_back(std::move(s));
  }
  const bool same_sentences = static_cast<int64_t>(kept.size()) == A;
  running_ = std::move(kept);
  if (running_.empty()) {
    state_.reset();
  } else {
    select_beam_rows(*state_, next_rows, same_sentences, device);
  }
  return done;
}

}  // namespace attnmt
