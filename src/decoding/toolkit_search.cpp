#include "decoding/toolkit_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "decoding/search_parts.h"

namespace attnmt {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool opennmt_rules(SearchRules rules) { return rules == SearchRules::opennmt || rules == SearchRules::opennmt3; }

// What these rules do not do is refused, in one line naming the option (the config loader
// refuses the same first; this is for callers that build SearchOptions themselves).
void check_supported(const SearchOptions& o, const Guides& guides) {
  const std::string rules = name_string(o.rules);
  auto refuse = [&](const std::string& what) {
    throw std::invalid_argument(what + ": not with decode.search_rules " + rules + " (attnmt's rules only)");
  };
  if (o.rules == SearchRules::attnmt) throw std::invalid_argument("toolkit_search: decode.search_rules is attnmt");
  const bool fairseq = o.rules == SearchRules::fairseq;
  if (fairseq && o.max_length <= 0 && !(o.max_length_ratio > 0)) {
    throw std::invalid_argument("decode.max_length or decode.max_length_ratio must be > 0 with decode.search_rules fairseq "
                                "(its --max-len-b and --max-len-a)");
  }
  if (o.max_length < 0 || (o.max_length == 0 && opennmt_rules(o.rules))) {
    throw std::invalid_argument("decode.max_length must be > 0 with decode.search_rules " + rules +
                                (o.rules == SearchRules::opennmt3
                                     ? " (the toolkit's max_length), got "
                                     : " (the toolkit's max_length, its only length limit), got ") +
                                std::to_string(o.max_length));
  }
  if (o.beam_size < 1 || o.n_best < 1 || o.n_best > o.beam_size) {
    throw std::invalid_argument("decode.n_best must be in [1, decode.beam_size], got " + std::to_string(o.n_best) +
                                " with beam " + std::to_string(o.beam_size));
  }
  if (o.sampling) refuse("decode.sampling");
  if (o.coverage_penalty != 0.0) refuse("decode.coverage_penalty");
  if (o.no_repeat_ngram_size != 0) refuse("decode.no_repeat_ngram_size");
  if (o.unk_penalty != 0.0 && !fairseq) refuse("decode.unk_penalty");
  if (o.word_penalty != 0.0 && o.rules != SearchRules::marian) refuse("decode.word_penalty");
  if (o.rules == SearchRules::marian) {
    if (o.min_length > 0) refuse("decode.min_length (marian-decoder has none)");
    if (o.max_length > 0) refuse("decode.max_length (marian-decoder's limit is decode.max_length_ratio, its --max-length-factor)");
    if (!(o.max_length_ratio > 0)) {
      throw std::invalid_argument("decode.max_length_ratio must be > 0 with decode.search_rules marian (its --max-length-factor)");
    }
  }
  for (const auto& g : guides) {
    if (!g.prefix.empty()) refuse("a target prefix");
    if (!g.constraints.empty()) refuse("constraints");
  }
}

// The step's log-probabilities [N, V] in float32 (the toolkits' generators end in a float32
// log_softmax), in a tensor of their own.
torch::Tensor step_log_probs(const StepResult& r, SearchRules rules) {
  if (r.vocabulary.defined()) {
    throw std::invalid_argument("decode.shortlist: not with decode.search_rules " + name_string(rules));
  }
  auto x = r.logits.to(torch::kFloat).contiguous();
  return r.log_probs ? x.clone() : x.log_softmax(-1);
}

// Joey NMT's maximum output length when its config has none (max_output_length -1): int(1.5 x the
// batch's longest source, </s> included), here each sentence's own (what Joey computes for a batch
// of one): decode.max_length 0 with joeynmt rules.
constexpr double kJoeyLengthRatio = 1.5;

// Each sentence's most tokens, eos counted: options.max_length, else Joey NMT's default.
std::vector<int64_t> joey_length_limits(const SearchOptions& o, const std::vector<int64_t>& src_len) {
  std::vector<int64_t> limits;
  for (const int64_t n : src_len) {
    limits.push_back(o.max_length > 0
                         ? o.max_length
                         : std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * kJoeyLengthRatio)));
  }
  return limits;
}

std::vector<float> to_floats(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU, torch::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

// The model's log-probabilities log_probs[rows[i], tokens[i]].
std::vector<float> chosen_log_probs(const torch::Tensor& log_probs, const std::vector<int64_t>& rows,
                                    const std::vector<int64_t>& tokens) {
  const auto device = log_probs.device();
  return to_floats(log_probs.index({index_tensor(rows, device), index_tensor(tokens, device)}));
}

// The toolkits' alive_seq (every row's tokens so far, eos and what follows it included) as
// back-pointers: each step's rows, the row of the step before that each extends, its token, the
// model's log-probability of that token and (with attention) the step's attention row; read back
// only for the hypotheses collected.
class Paths {
 public:
  explicit Paths(bool keep_attention) : keep_attention_(keep_attention) {}

  // The next step: its row i extends row from[i] of the rows live now by tokens[i]; attention
  // [rows, S]: row i's attention of this step (with keep_attention).
  void advance(const std::vector<int64_t>& from, std::vector<int64_t> tokens, std::vector<float> log_probs,
               const torch::Tensor& attention) {
    Step step;
    step.parent.resize(from.size(), -1);
    if (!steps_.empty()) {
      for (size_t i = 0; i < from.size(); ++i) step.parent[i] = live_[static_cast<size_t>(from[i])];
    }
    step.token = std::move(tokens);
    step.log_prob = std::move(log_probs);
    if (keep_attention_) step.attention = attention.to(torch::kCPU, torch::kFloat).contiguous();
    steps_.push_back(std::move(step));
    live_.resize(from.size());
    std::iota(live_.begin(), live_.end(), 0);
  }

  // Only these of the live rows go on, in this order (finished sentences leave the batch).
  void keep(const std::vector<int64_t>& rows) {
    std::vector<int64_t> next;
    next.reserve(rows.size());
    for (int64_t r : rows) next.push_back(live_[static_cast<size_t>(r)]);
    live_ = std::move(next);
  }

  // Live row `row` as a hypothesis: its tokens up to the first eos (which ends it: finished), as
  // both toolkits cut their outputs; log_prob and attention rows up to that eos included.
  Hypothesis hypothesis(int64_t row, int64_t eos, int64_t source_length) const {
    std::vector<int64_t> at(steps_.size());  // its row at each step
    int64_t r = live_[static_cast<size_t>(row)];
    for (size_t s = steps_.size(); s-- > 0;) {
      at[s] = r;
      r = steps_[s].parent[static_cast<size_t>(r)];
    }
    Hypothesis h;
    h.finished = false;
    for (size_t s = 0; s < steps_.size(); ++s) {
      const auto& step = steps_[s];
      const auto i = static_cast<size_t>(at[s]);
      h.log_prob += step.log_prob[i];
      if (keep_attention_) h.attention.push_back(attention_row(step.attention, at[s], source_length));
      if (step.token[i] == eos) {
        h.finished = true;
        break;
      }
      h.tokens.push_back(step.token[i]);
    }
    return h;
  }

 private:
  struct Step {
    std::vector<int64_t> parent, token;
    std::vector<float> log_prob;
    torch::Tensor attention;  // [rows, S] CPU float
  };
  bool keep_attention_;
  std::vector<Step> steps_;
  std::vector<int64_t> live_;  // live row -> its row in the last step
};

// A collected hypothesis and the toolkit's score of it (a float32 tensor element there).
struct Scored {
  float score;
  Hypothesis hypothesis;
};

// The n best, as Python's sorted(key=score, reverse=True)[:n]: stable, so equal scores keep the
// order they were collected in.
std::vector<Hypothesis> best_of(std::vector<Scored>& found, int n) {
  std::stable_sort(found.begin(), found.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
  std::vector<Hypothesis> out;
  for (size_t i = 0; i < found.size() && static_cast<int>(i) < n; ++i) {
    out.push_back(std::move(found[i].hypothesis));
    out.back().score = found[i].score;
  }
  return out;
}

template <typename T>
std::vector<T> pick(const std::vector<T>& v, const std::vector<int64_t>& index) {
  std::vector<T> out;
  out.reserve(index.size());
  for (int64_t i : index) out.push_back(v[static_cast<size_t>(i)]);
  return out;
}

// Rows a*K .. a*K + K-1 of the sentences `sentences` (indices into the current batch).
std::vector<int64_t> sentence_rows(const std::vector<int64_t>& sentences, int64_t K) {
  std::vector<int64_t> rows;
  rows.reserve(sentences.size() * static_cast<size_t>(K));
  for (int64_t a : sentences)
    for (int64_t k = 0; k < K; ++k) rows.push_back(a * K + k);
  return rows;
}

// One beam step's choice, as both toolkits make it: topk over each sentence's [K * V] candidate
// scores [A * K, V]. Row i = a*K + k of the next step extends row select[i] by token[i].
struct Choice {
  torch::Tensor scores;         // [A, K] on the device (topk_scores)
  std::vector<float> score;     // the same on the CPU
  std::vector<int64_t> select;  // [A * K] rows of this step (batch_index, flat)
  std::vector<int64_t> token;   // [A * K]
};

Choice choose(const torch::Tensor& candidates, int64_t A, int64_t K) {
  const int64_t V = candidates.size(1);
  auto [top_scores, top_ids] = candidates.reshape({A, K * V}).topk(K, -1);
  Choice c;
  c.scores = top_scores;
  c.score = to_floats(top_scores);
  const auto ids = to_vector(top_ids);
  c.select.resize(ids.size());
  c.token.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    c.select[i] = static_cast<int64_t>(i) / K * K + ids[i] / V;
    c.token[i] = ids[i] % V;
  }
  return c;
}

torch::Tensor selected_attention(const StepResult& r, const std::vector<int64_t>& rows, bool wanted) {
  if (!wanted) return {};
  return r.attention.index_select(0, index_tensor(rows, r.attention.device()));
}

// Greedy searches' bookkeeping: each sentence that ends is written out and leaves the batch.
// Returns the rows that go on.
template <typename Finish>
std::vector<int64_t> finish_rows(const std::vector<char>& ended, std::vector<int64_t>& sentence, Finish&& finish) {
  std::vector<int64_t> keep, next;
  for (size_t a = 0; a < ended.size(); ++a) {
    if (ended[a]) {
      finish(static_cast<int64_t>(a), sentence[a]);
    } else {
      keep.push_back(static_cast<int64_t>(a));
      next.push_back(sentence[a]);
    }
  }
  sentence = std::move(next);
  return keep;
}

}  // namespace

std::vector<std::vector<Hypothesis>> toolkit_search(StepModel& model, const torch::Tensor& src,
                                                    const torch::Tensor& lengths, const SearchOptions& options,
                                                    const Guides& guides) {
  if (opennmt_rules(options.rules)) return opennmt_beam_search(model, src, lengths, options, guides);
  if (options.rules == SearchRules::fairseq) return fairseq_search(model, src, lengths, options, guides);
  if (options.rules == SearchRules::marian) return marian_search(model, src, lengths, options, guides);
  if (options.beam_size < 2) return joeynmt_greedy_search(model, src, lengths, options, guides);
  return joeynmt_beam_search(model, src, lengths, options, guides);
}

// onmt/translate/beam_search.py BeamSearchBase.advance and update_finished, driven as
// translator.py's _translate_batch_with_strategy drives them; 2.3's, or 3.5.1's (opennmt3).
std::vector<std::vector<Hypothesis>> opennmt_beam_search(StepModel& model, const torch::Tensor& src,
                                                         const torch::Tensor& lengths, const SearchOptions& options,
                                                         const Guides& guides) {
  check_supported(options, guides);
  const auto device = model.device();
  const int64_t B = src.size(0), K = options.beam_size, eos = model.eos_id();
  const auto src_len = to_vector(lengths);
  const bool v3 = options.rules == SearchRules::opennmt3;
  const bool penalised = options.length_penalty > 0;  // 2.3: wu with alpha; 3.x: avg with alpha; else none
  // The penalty if the sequence ends after step t (len(self) = t + 1, bos counted; +1 for the eos).
  auto length_penalty = [&](int64_t t) {
    if (!penalised) return 1.0;
    const auto length = static_cast<double>(t + 2);
    return v3 ? std::pow(length, options.length_penalty) : std::pow((5.0 + length) / 6.0, options.length_penalty);
  };
  // What a barred token (min_length's eos, ban_unk's unk) and a finished slot's running score
  // become: 2.3's -1e20 and -1e10, 3.x's -65504 for both (the float16 minimum).
  const double barred = v3 ? -65504.0 : -1e20, ended = v3 ? -65504.0 : -1e10;
  // Each sentence's most tokens, eos counted: max_length; 3.x min(max_length, ratio * source + 5),
  // from the sentence's own source where 3.x takes its batch's longest (the same at batch 1).
  std::vector<int64_t> limit(static_cast<size_t>(B), options.max_length);
  if (v3) {
    for (int64_t b = 0; b < B; ++b)
      limit[static_cast<size_t>(b)] = max_target_length(src_len[static_cast<size_t>(b)], options);
  }
  const int64_t steps = *std::max_element(limit.begin(), limit.end());
  auto state = model.start(src, lengths);
  expand_to_beams(*state, B, K, device);

  // topk_log_probs [A, K]: the slots' running log P, slot 0 alone alive at first.
  auto first = torch::full({K}, -kInf, torch::kFloat);
  first[0] = 0.0;
  torch::Tensor running = first.repeat({B}).reshape({B, K}).to(device);
  std::vector<int64_t> sentence(static_cast<size_t>(B));  // _batch_offset
  std::iota(sentence.begin(), sentence.end(), 0);
  std::vector<char> top_beam_finished(static_cast<size_t>(B), 0);
  std::vector<std::vector<Scored>> found(static_cast<size_t>(B));
  std::vector<std::vector<Hypothesis>> out(static_cast<size_t>(B));
  Paths paths(options.return_attention);

  auto prev = torch::full({B * K}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t t = 0; t < steps && !sentence.empty(); ++t) {  // len(self) = t + 1
    const auto A = static_cast<int64_t>(sentence.size());
    auto r = model.step(prev, *state, options.return_attention);
    const auto log_probs = step_log_probs(r, options.rules);  // [A * K, V]
    auto scores = log_probs.clone();
    if (t + 1 <= options.min_length) scores.select(1, eos).fill_(barred);  // ensure_min_length
    if (options.ban_unk) scores.select(1, model.unk_id()).fill_(barred);   // ensure_unk_removed
    scores += running.view({A * K, 1});
    // The penalty if the sequence ends now: length_penalty(step + 1) with step = len(self).
    const double lp = length_penalty(t);
    if (penalised) scores = scores / lp;
    auto c = choose(scores, A, K);
    running = c.scores * lp;  // topk_log_probs
    paths.advance(c.select, c.token, chosen_log_probs(log_probs, c.select, c.token),
                  selected_attention(r, c.select, options.return_attention));

    std::vector<char> finished(c.token.size());
    bool any_finished = false;
    for (size_t i = 0; i < finished.size(); ++i) {
      const int64_t most = limit[static_cast<size_t>(sentence[i / static_cast<size_t>(K)])];
      finished[i] = c.token[i] == eos || t + 1 == most;  // ensure_max_length
      any_finished = any_finished || finished[i];
    }
    if (any_finished) {  // update_finished
      running.masked_fill_(torch::tensor(std::vector<int64_t>(finished.begin(), finished.end()))
                               .to(torch::kBool)
                               .view({A, K})
                               .to(device),
                           ended);
      std::vector<int64_t> keep;
      for (int64_t a = 0; a < A; ++a) {
        const int64_t b = sentence[static_cast<size_t>(a)];
        auto& hyps = found[static_cast<size_t>(b)];
        top_beam_finished[static_cast<size_t>(a)] |= finished[static_cast<size_t>(a * K)];
        for (int64_t k = 0; k < K; ++k) {
          const int64_t i = a * K + k;
          if (finished[static_cast<size_t>(i)]) {
            hyps.push_back(
                {c.score[static_cast<size_t>(i)], paths.hypothesis(i, eos, src_len[static_cast<size_t>(b)])});
          }
        }
        // 2.3: the top beam has finished at some step, and there are beam_size (not n_best)
        // hypotheses; 3.x: the top beam has finished at this step, and there are n_best.
        const bool done =
            v3 ? finished[static_cast<size_t>(a * K)] && static_cast<int64_t>(hyps.size()) >= options.n_best
               : top_beam_finished[static_cast<size_t>(a)] && static_cast<int64_t>(hyps.size()) >= K;
        if (done) {
          out[static_cast<size_t>(b)] = best_of(hyps, options.n_best);
        } else {
          keep.push_back(a);
        }
      }
      if (keep.empty()) break;
      if (static_cast<int64_t>(keep.size()) < A) {  // remove_finished_batches
        sentence = pick(sentence, keep);
        top_beam_finished = pick(top_beam_finished, keep);
        running = running.index_select(0, index_tensor(keep, device));
        const auto rows = sentence_rows(keep, K);
        c.select = pick(c.select, rows);
        c.token = pick(c.token, rows);
        paths.keep(rows);
      }
    }
    if (K > 1 || any_finished) {
      select_beam_rows(*state, c.select, static_cast<int64_t>(sentence.size()) == A, device);
    }
    prev = index_tensor(c.token, device);
  }
  return out;
}

// onmt/translate/greedy_search.py GreedySearch with keep_topk 1 (the argmax) and temperature 1.
std::vector<std::vector<Hypothesis>> opennmt_greedy_search(StepModel& model, const torch::Tensor& src,
                                                           const torch::Tensor& lengths, const SearchOptions& options,
                                                           const Guides& guides) {
  check_supported(options, guides);
  const auto device = model.device();
  const int64_t B = src.size(0), eos = model.eos_id();
  const auto src_len = to_vector(lengths);
  const bool wu = options.length_penalty > 0;
  auto state = model.start(src, lengths);
  std::vector<int64_t> sentence(static_cast<size_t>(B));
  std::iota(sentence.begin(), sentence.end(), 0);
  torch::Tensor sums = torch::zeros({B, 1}, torch::dtype(torch::kFloat).device(device));  // beams_scores
  std::vector<std::vector<Hypothesis>> out(static_cast<size_t>(B));
  Paths paths(options.return_attention);

  auto prev = torch::full({B}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t t = 0; t < options.max_length && !sentence.empty(); ++t) {
    const auto A = static_cast<int64_t>(sentence.size());
    auto r = model.step(prev, *state, options.return_attention);
    const auto log_probs = step_log_probs(r, options.rules);  // [A, V]
    auto scores = log_probs.clone();
    if (t + 1 <= options.min_length) scores.select(1, eos).fill_(-1e20);
    if (options.ban_unk) scores.select(1, model.unk_id()).fill_(-1e20);
    auto [top, ids] = scores.topk(1, -1);  // [A, 1]
    sums += top;
    auto tokens = to_vector(ids);
    std::vector<int64_t> rows(static_cast<size_t>(A));
    std::iota(rows.begin(), rows.end(), 0);
    paths.advance(rows, tokens, chosen_log_probs(log_probs, rows, tokens),
                  options.return_attention ? r.attention : torch::Tensor());

    std::vector<char> ended(static_cast<size_t>(A));
    bool any = false;
    for (int64_t a = 0; a < A; ++a) {
      ended[static_cast<size_t>(a)] = tokens[static_cast<size_t>(a)] == eos || t + 1 == options.max_length;
      any = any || ended[static_cast<size_t>(a)];
    }
    if (!any) {
      prev = ids.view({A});
      continue;
    }
    // update_finished: the running sum over length_penalty(len(self)), bos counted.
    const double lp = wu ? std::pow((5.0 + static_cast<double>(t + 2)) / 6.0, options.length_penalty) : 1.0;
    const auto final_scores = to_floats(sums / lp);
    const auto keep = finish_rows(ended, sentence, [&](int64_t a, int64_t b) {
      auto h = paths.hypothesis(a, eos, src_len[static_cast<size_t>(b)]);
      h.score = final_scores[static_cast<size_t>(a)];
      out[static_cast<size_t>(b)].push_back(std::move(h));
    });
    if (keep.empty()) break;
    const auto index = index_tensor(keep, device);
    sums = sums.index_select(0, index);
    state->index_select(index);
    paths.keep(keep);
    prev = index_tensor(pick(tokens, keep), device);
  }
  return out;
}

// joeynmt/search.py beam_search (recurrent decoders).
std::vector<std::vector<Hypothesis>> joeynmt_beam_search(StepModel& model, const torch::Tensor& src,
                                                         const torch::Tensor& lengths, const SearchOptions& options,
                                                         const Guides& guides) {
  check_supported(options, guides);
  const auto device = model.device();
  const int64_t B = src.size(0), K = options.beam_size, eos = model.eos_id();
  const auto src_len = to_vector(lengths);
  const auto limit = joey_length_limits(options, src_len);  // max_output_length
  const double alpha = options.length_penalty;
  auto state = model.start(src, lengths);
  expand_to_beams(*state, B, K, device);

  // topk_log_probs [A, K]: slot 0 alone alive at first.
  torch::Tensor running = torch::zeros({B, K}, torch::dtype(torch::kFloat).device(device));
  running.slice(1, 1).fill_(-kInf);
  std::vector<int64_t> sentence(static_cast<size_t>(B));  // batch_offset
  std::iota(sentence.begin(), sentence.end(), 0);
  std::vector<char> is_finished(static_cast<size_t>(B * K), 0);   // by slot, not by hypothesis
  std::vector<int64_t> eos_count(static_cast<size_t>(B * K), 0);  // eos tokens in each row's sequence
  std::vector<std::vector<Scored>> found(static_cast<size_t>(B));
  std::vector<std::vector<Hypothesis>> out(static_cast<size_t>(B));
  Paths paths(options.return_attention);

  auto prev = torch::full({B * K}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t step = 0; !sentence.empty(); ++step) {  // every sentence ends at its limit
    const auto A = static_cast<int64_t>(sentence.size());
    auto r = model.step(prev, *state, options.return_attention);
    const auto log_probs = step_log_probs(r, options.rules);  // [A * K, V]
    const int64_t V = log_probs.size(1);
    auto scores = log_probs.clone();
    for (const int64_t barred : {model.bos_id(), model.pad_id()}) {  // sep and language tags: none here
      if (barred < V) scores.select(1, barred).fill_(-kInf);
    }
    if (options.ban_unk) scores.select(1, model.unk_id()).fill_(-kInf);  // generate_unk: false
    if (step < options.min_length) scores.select(1, eos).fill_(-kInf);   // min_output_length
    scores += running.view(-1).unsqueeze(1);
    const double lp = alpha > 0 ? std::pow((5.0 + static_cast<double>(step + 1)) / 6.0, alpha) : 1.0;
    if (alpha > 0) scores /= lp;
    auto c = choose(scores, A, K);
    running = alpha > 0 ? c.scores * lp : c.scores.clone();
    paths.advance(c.select, c.token, chosen_log_probs(log_probs, c.select, c.token),
                  selected_attention(r, c.select, options.return_attention));

    std::vector<int64_t> counts(c.token.size());
    bool any_finished = false;
    std::vector<char> at_max(static_cast<size_t>(A));
    for (int64_t a = 0; a < A; ++a) {
      at_max[static_cast<size_t>(a)] = step + 1 == limit[static_cast<size_t>(sentence[static_cast<size_t>(a)])];
    }
    for (size_t i = 0; i < c.token.size(); ++i) {
      counts[i] = eos_count[static_cast<size_t>(c.select[i])] + (c.token[i] == eos ? 1 : 0);
      is_finished[i] = c.token[i] == eos || is_finished[i] || c.score[i] == -std::numeric_limits<float>::infinity() ||
                       at_max[i / static_cast<size_t>(K)];
      any_finished = any_finished || is_finished[i];
    }
    eos_count = std::move(counts);
    if (any_finished) {
      std::vector<int64_t> unfinished;
      for (int64_t a = 0; a < A; ++a) {
        const int64_t b = sentence[static_cast<size_t>(a)];
        auto& hyps = found[static_cast<size_t>(b)];
        bool end_condition = true;
        for (int64_t k = 0; k < K; ++k) end_condition = end_condition && is_finished[static_cast<size_t>(a * K + k)];
        for (int64_t k = 0; k < K; ++k) {
          const auto i = static_cast<size_t>(a * K + k);
          if (!is_finished[i] || eos_count[i] > 1) continue;  // more than one eos: collected before
          // No eos at the maximum length, or exactly one, the last token (not one with tokens after it).
          if ((eos_count[i] == 0 && at_max[static_cast<size_t>(a)]) || (eos_count[i] == 1 && c.token[i] == eos)) {
            hyps.push_back({c.score[i], paths.hypothesis(a * K + k, eos, src_len[static_cast<size_t>(b)])});
          }
        }
        if (end_condition) {
          out[static_cast<size_t>(b)] = best_of(hyps, options.n_best);
        } else {
          unfinished.push_back(a);
        }
      }
      if (unfinished.empty()) break;
      if (static_cast<int64_t>(unfinished.size()) < A) {
        sentence = pick(sentence, unfinished);
        running = running.index_select(0, index_tensor(unfinished, device));
        const auto rows = sentence_rows(unfinished, K);
        is_finished = pick(is_finished, rows);
        eos_count = pick(eos_count, rows);
        c.select = pick(c.select, rows);
        c.token = pick(c.token, rows);
        paths.keep(rows);
      }
    }
    select_beam_rows(*state, c.select, static_cast<int64_t>(sentence.size()) == A, device);
    prev = index_tensor(c.token, device);
  }
  // Fewer than n_best hypotheses: Joey fills the list up with <unk>, score -1.
  for (auto& hyps : out) {
    while (static_cast<int>(hyps.size()) < options.n_best) {
      Hypothesis filler;
      filler.tokens = {model.unk_id()};
      filler.score = filler.log_prob = -1.0;
      filler.finished = false;
      hyps.push_back(std::move(filler));
    }
  }
  return out;
}

// joeynmt/search.py recurrent_greedy (return_prob none: the argmax of the logits).
std::vector<std::vector<Hypothesis>> joeynmt_greedy_search(StepModel& model, const torch::Tensor& src,
                                                           const torch::Tensor& lengths, const SearchOptions& options,
                                                           const Guides& guides) {
  check_supported(options, guides);
  const auto device = model.device();
  const int64_t B = src.size(0), eos = model.eos_id();
  const auto src_len = to_vector(lengths);
  const auto limit = joey_length_limits(options, src_len);  // max_output_length
  auto state = model.start(src, lengths);
  std::vector<int64_t> sentence(static_cast<size_t>(B));
  std::iota(sentence.begin(), sentence.end(), 0);
  std::vector<std::vector<Hypothesis>> out(static_cast<size_t>(B));
  Paths paths(options.return_attention);

  auto prev = torch::full({B}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t step = 0; !sentence.empty(); ++step) {  // every sentence ends at its limit
    const auto A = static_cast<int64_t>(sentence.size());
    auto r = model.step(prev, *state, options.return_attention);
    const auto log_probs = step_log_probs(r, options.rules);
    auto scores = r.logits.to(torch::kFloat).clone();  // the logits, as Joey takes their argmax
    const int64_t V = scores.size(1);
    for (const int64_t barred : {model.bos_id(), model.pad_id()}) {
      if (barred < V) scores.select(1, barred).fill_(-kInf);
    }
    if (options.ban_unk) scores.select(1, model.unk_id()).fill_(-kInf);
    if (step < options.min_length) scores.select(1, eos).fill_(-kInf);
    auto ids = std::get<1>(scores.max(-1));  // [A]
    auto tokens = to_vector(ids);
    std::vector<int64_t> rows(static_cast<size_t>(A));
    std::iota(rows.begin(), rows.end(), 0);
    paths.advance(rows, tokens, chosen_log_probs(log_probs, rows, tokens),
                  options.return_attention ? r.attention : torch::Tensor());

    std::vector<char> ended(static_cast<size_t>(A));
    for (int64_t a = 0; a < A; ++a) {
      ended[static_cast<size_t>(a)] = tokens[static_cast<size_t>(a)] == eos ||
                                      step + 1 == limit[static_cast<size_t>(sentence[static_cast<size_t>(a)])];
    }
    const auto keep = finish_rows(ended, sentence, [&](int64_t a, int64_t b) {
      auto h = paths.hypothesis(a, eos, src_len[static_cast<size_t>(b)]);
      h.score = h.log_prob;  // Joey reports the tokens' log-probabilities; their sum
      out[static_cast<size_t>(b)].push_back(std::move(h));
    });
    if (keep.empty()) break;
    if (static_cast<int64_t>(keep.size()) < A) {
      state->index_select(index_tensor(keep, device));
      paths.keep(keep);
    }
    prev = index_tensor(pick(tokens, keep), device);
  }
  return out;
}

// fairseq/sequence_generator.py SequenceGenerator._generate with search.BeamSearch (fairseq-generate
// runs it for every beam size, beam 1 included).
std::vector<std::vector<Hypothesis>> fairseq_search(StepModel& model, const torch::Tensor& src,
                                                    const torch::Tensor& lengths, const SearchOptions& options,
                                                    const Guides& guides) {
  check_supported(options, guides);
  const auto device = model.device();
  const int64_t B = src.size(0), K = options.beam_size, eos = model.eos_id();
  const int64_t pad = model.pad_id(), unk = model.unk_id();
  const int64_t C = 2 * K;  // cand_size: 2 x beam "in case half are EOS"
  const auto src_len = to_vector(lengths);
  // max_len = min(int(max_len_a * src_len + max_len_b), max_decoder_positions - 1): src_len is the
  // width of fairseq's batch (the longest source, </s> included), here each sentence's own (the
  // same at batch size 1); the LSTM decoder's max_target_positions is 1e5.
  constexpr int64_t kMaxPositions = 100000;
  std::vector<int64_t> limit(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const double a = options.max_length_ratio * static_cast<double>(src_len[static_cast<size_t>(b)]);
    limit[static_cast<size_t>(b)] =
        std::min<int64_t>(static_cast<int64_t>(std::min(a + options.max_length, 1e9)), kMaxPositions - 1);
    if (options.min_length > limit[static_cast<size_t>(b)]) {
      throw std::invalid_argument("decode.min_length " + std::to_string(options.min_length) +
                                  " is above a sentence's maximum length " + std::to_string(limit[static_cast<size_t>(b)]) +
                                  " (fairseq: min_len cannot be larger than max_len)");
    }
  }
  auto state = model.start(src, lengths);
  expand_to_beams(*state, B, K, device);

  std::vector<int64_t> sentence(static_cast<size_t>(B));
  std::iota(sentence.begin(), sentence.end(), 0);
  torch::Tensor running;  // [A, K]: scores[:, step - 1], each row's cumulative log P
  std::vector<std::vector<Scored>> found(static_cast<size_t>(B));
  std::vector<std::vector<Hypothesis>> out(static_cast<size_t>(B));
  Paths paths(options.return_attention);

  auto prev = torch::full({B * K}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t step = 0; !sentence.empty(); ++step) {
    const auto A = static_cast<int64_t>(sentence.size());
    auto r = model.step(prev, *state, options.return_attention);
    const auto log_probs = step_log_probs(r, options.rules);  // [A * K, V]
    const int64_t V = log_probs.size(1);
    auto lprobs = log_probs.clone();
    lprobs.select(1, pad).fill_(-kInf);
    if (options.unk_penalty != 0.0) lprobs.select(1, unk).sub_(options.unk_penalty);
    for (int64_t a = 0; a < A; ++a) {  // step >= max_len: eos only
      if (step >= limit[static_cast<size_t>(sentence[static_cast<size_t>(a)])]) {
        auto rows = lprobs.slice(0, a * K, (a + 1) * K);
        rows.slice(1, 0, eos).fill_(-kInf);
        rows.slice(1, eos + 1).fill_(-kInf);
      }
    }
    if (step < options.min_length) lprobs.select(1, eos).fill_(-kInf);
    // BeamSearch.step: at step 0 only the first beam; else log P + the row's running score.
    torch::Tensor cand;
    if (step == 0) {
      cand = lprobs.view({A, K, V}).select(1, 0).contiguous();  // [A, V]
    } else {
      cand = (lprobs + running.reshape({A * K, 1})).view({A, K * V});
    }
    auto [top_scores, top_ids] = cand.topk(std::min<int64_t>(C, cand.size(1) - 1), -1);
    const int64_t width = top_scores.size(1);
    const auto score = to_floats(top_scores);
    const auto ids = to_vector(top_ids);
    // Every candidate becomes a row of this step's paths: row a * width + j extends row a * K + beam.
    std::vector<int64_t> from(ids.size()), token(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      from[i] = static_cast<int64_t>(i) / width * K + ids[i] / V;
      token[i] = ids[i] % V;
    }
    paths.advance(from, token, chosen_log_probs(log_probs, from, token), selected_attention(r, from, options.return_attention));

    // finalize_hypos: eos among each sentence's first K candidates (a finite score) ends a
    // hypothesis, its score over (step + 1)^lenpen (normalize_scores), while the sentence has
    // fewer than K; a sentence ends with K of them, or at its max_len.
    auto is_eos = [&](size_t i) { return token[i] == eos && score[i] != -std::numeric_limits<float>::infinity(); };
    std::vector<float> eos_scores;
    std::vector<size_t> eos_at;
    for (int64_t a = 0; a < A; ++a) {
      for (int64_t j = 0; j < std::min(K, width); ++j) {
        const auto i = static_cast<size_t>(a * width + j);
        if (is_eos(i)) {
          eos_at.push_back(i);
          eos_scores.push_back(score[i]);
        }
      }
    }
    if (!eos_scores.empty() && options.length_penalty != 0.0) {
      eos_scores = to_floats(torch::tensor(eos_scores).div_(std::pow(static_cast<double>(step + 1), options.length_penalty)));
    } else if (!eos_scores.empty()) {
      eos_scores = to_floats(torch::tensor(eos_scores).div_(1.0));
    }
    for (size_t e = 0; e < eos_at.size(); ++e) {
      const auto a = static_cast<int64_t>(eos_at[e]) / width;
      const int64_t b = sentence[static_cast<size_t>(a)];
      auto& hyps = found[static_cast<size_t>(b)];
      if (static_cast<int64_t>(hyps.size()) < K) {
        hyps.push_back({eos_scores[e], paths.hypothesis(static_cast<int64_t>(eos_at[e]), eos, src_len[static_cast<size_t>(b)])});
      }
    }
    std::vector<int64_t> keep_sentences, keep_rows, next_from;
    std::vector<float> next_running;
    for (int64_t a = 0; a < A; ++a) {
      const int64_t b = sentence[static_cast<size_t>(a)];
      auto& hyps = found[static_cast<size_t>(b)];
      if (static_cast<int64_t>(hyps.size()) == K || step == limit[static_cast<size_t>(b)]) {
        out[static_cast<size_t>(b)] = best_of(hyps, options.n_best);
        continue;
      }
      // The first K candidates that do not end in eos go on (active_hypos).
      int64_t taken = 0;
      for (int64_t j = 0; j < width && taken < K; ++j) {
        const auto i = static_cast<size_t>(a * width + j);
        if (is_eos(i)) continue;
        keep_rows.push_back(static_cast<int64_t>(i));
        next_from.push_back(from[i]);
        next_running.push_back(score[i]);
        ++taken;
      }
      if (taken < K) throw std::runtime_error("fairseq search: fewer than beam_size live candidates (a vocabulary too small)");
      keep_sentences.push_back(a);
    }
    if (keep_sentences.empty()) break;
    const bool same = static_cast<int64_t>(keep_sentences.size()) == A;
    sentence = pick(sentence, keep_sentences);
    paths.keep(keep_rows);
    running = torch::tensor(next_running).to(device).view({static_cast<int64_t>(sentence.size()), K});
    select_beam_rows(*state, next_from, same, device);
    prev = index_tensor(pick(token, keep_rows), device);
  }
  return out;
}

// src/translator/beam_search.cpp BeamSearch::search and history.h of Marian 1.12 (marian-dev
// c9f287d), greedy being beam 1. A sentence's beam starts as one hypothesis; each step takes the
// best of its live hypotheses' log P + log p(v) (float32 sums, <unk> never with ban_unk: Marian's
// suppression without --allow-unk), as many as it has live hypotheses (K at the first step); those
// ending in eos are collected, scored (log P - word_penalty x length) / length^length_penalty with
// the eos in the length, and leave the beam, which shrinks by one each. A sentence ends when its
// beam is empty, or once its step count reaches max_length_ratio x its source tokens with </s>
// (then every hypothesis chosen at that step is collected, finished or not). Its n best are the
// best of all it collected (at most K). Marian stops a whole batch at the first sentence that
// reaches the limit, and measures the limit on the batch's longest source: the same as this at
// batch size 1 (what the converter's fixtures check), per sentence here.
std::vector<std::vector<Hypothesis>> marian_search(StepModel& model, const torch::Tensor& src,
                                                   const torch::Tensor& lengths, const SearchOptions& options,
                                                   const Guides& guides) {
  check_supported(options, guides);
  const auto device = model.device();
  const int64_t B = src.size(0), K = options.beam_size, eos = model.eos_id(), unk = model.unk_id();
  const auto src_len = to_vector(lengths);
  auto state = model.start(src, lengths);
  expand_to_beams(*state, B, K, device);

  std::vector<int64_t> sentence(static_cast<size_t>(B));
  std::iota(sentence.begin(), sentence.end(), 0);
  std::vector<int64_t> live(static_cast<size_t>(B), K);  // each sentence's beam size
  // [A * K]: each row's path score; a row beyond its sentence's beam is a placeholder (-inf)
  std::vector<float> running(static_cast<size_t>(B * K), 0.0f);
  std::vector<std::vector<Scored>> found(static_cast<size_t>(B));
  std::vector<std::vector<Hypothesis>> out(static_cast<size_t>(B));
  Paths paths(options.return_attention);
  const auto alpha = static_cast<float>(options.length_penalty);
  const auto word_penalty = static_cast<float>(options.word_penalty);

  auto prev = torch::full({B * K}, model.bos_id(), torch::dtype(torch::kLong).device(device));
  for (int64_t step = 0; !sentence.empty(); ++step) {
    const auto A = static_cast<int64_t>(sentence.size());
    auto r = model.step(prev, *state, options.return_attention);
    const auto log_probs = step_log_probs(r, options.rules);  // [A * K, V]
    const int64_t V = log_probs.size(1);
    auto cand = log_probs.clone();
    if (options.ban_unk) cand.select(1, unk).fill_(-kInf);
    cand.add_(torch::tensor(running).to(device).view({A * K, 1}));
    if (step == 0) cand.view({A, K, V}).slice(1, 1).fill_(-kInf);  // the start hypothesis alone
    const auto chosen = choose(cand, A, K);
    const auto& score = chosen.score;
    const auto& from = chosen.select;
    const auto& token = chosen.token;
    paths.advance(from, token, chosen_log_probs(log_probs, from, token), selected_attention(r, from, options.return_attention));

    const auto length = static_cast<float>(step + 1);
    const float divisor = std::pow(length, alpha);
    std::vector<int64_t> keep_sentences, keep_rows, next_from;
    std::vector<float> next_running;
    for (int64_t a = 0; a < A; ++a) {
      const auto b = static_cast<size_t>(sentence[static_cast<size_t>(a)]);
      const bool last = static_cast<double>(step + 1) >= options.max_length_ratio * static_cast<double>(src_len[b]);
      std::vector<int64_t> going;
      for (int64_t j = 0; j < live[b]; ++j) {
        const auto i = static_cast<size_t>(a * K + j);
        if (score[i] == -std::numeric_limits<float>::infinity()) continue;  // a vocabulary smaller than the beam
        if (token[i] == eos || last) {
          auto h = paths.hypothesis(static_cast<int64_t>(i), eos, src_len[b]);
          h.log_prob = score[i];
          found[b].push_back({(score[i] - word_penalty * length) / divisor, std::move(h)});
        } else {
          going.push_back(static_cast<int64_t>(i));
        }
      }
      live[b] = static_cast<int64_t>(going.size());
      if (going.empty() || last) {
        out[b] = best_of(found[b], options.n_best);
        continue;
      }
      keep_sentences.push_back(a);
      for (int64_t j = 0; j < K; ++j) {
        // The beam's hypotheses, then placeholders (never chosen: -inf) up to K rows.
        const bool real = j < live[b];
        const auto i = static_cast<size_t>(going[static_cast<size_t>(real ? j : 0)]);
        keep_rows.push_back(static_cast<int64_t>(i));
        next_from.push_back(from[i]);
        next_running.push_back(real ? score[i] : -std::numeric_limits<float>::infinity());
      }
    }
    if (keep_sentences.empty()) break;
    const bool same = static_cast<int64_t>(keep_sentences.size()) == A;
    sentence = pick(sentence, keep_sentences);
    paths.keep(keep_rows);
    running = std::move(next_running);
    select_beam_rows(*state, next_from, same, device);
    prev = index_tensor(pick(token, keep_rows), device);
  }
  return out;
}

}  // namespace attnmt
