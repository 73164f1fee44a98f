#include "decoding/alternatives.h"

#include <torch/torch.h>

#include <algorithm>

#include "decoding/running_search.h"
#include "decoding/search_parts.h"
#include "util/error.h"

namespace attnmt {

namespace {

// Each alternative's completion, searched on from `state` (one row that has read the prefix):
// prefix + token as a resumed history (RunningSearch::resume); a token that ends the sentence, or
// that fills its maximum length, is its completion as forced search ends it.
void complete_from_state(StepModel& model, std::unique_ptr<SearchState> state, int64_t src_len, double prefix_log_prob,
                         const torch::Tensor& next_log_probs, Alternatives& out, const std::vector<int>& source,
                         const Tokenizers& tokenizers, const TranslateOptions& options) {
  const auto& search = options.search;
  RunningSearch running(model, search);
  std::vector<RunningSearch::Resumed> resumed;
  std::vector<int64_t> rows;  // of `state`: all 0
  std::vector<size_t> which;  // the alternative of each resumed sentence
  for (size_t j = 0; j < out.next.size(); ++j) {
    auto& a = out.next[j];
    Hypothesis h;
    h.tokens = out.prefix;
    // The float log-probability forced search adds (search_parts.h: ruled_log_probs).
    h.log_prob = prefix_log_prob + next_log_probs[0][a.token].item<double>();
    const bool eos = a.token == model.eos_id();
    if (eos || static_cast<int64_t>(h.tokens.size()) + 1 >= max_target_length(src_len, search)) {
      h.finished = eos;
      if (!eos) h.tokens.push_back(a.token);
      if (eos && static_cast<int64_t>(out.prefix.size()) < search.min_length) {
        h.finished = false;  // decode.min_length bars the forced eos: forced search cuts it there
        h.log_prob = prefix_log_prob;
      }
      h.score = length_normalised(h, search.length_penalty);
      std::vector<Hypothesis> one{std::move(h)};
      a.completion = to_translations(one, source, tokenizers, options)[0];
      continue;
    }
    h.tokens.push_back(a.token);
    RunningSearch::Resumed r;
    r.tokens = std::move(h.tokens);
    r.log_prob = h.log_prob;
    r.src_len = src_len;
    resumed.push_back(std::move(r));
    rows.push_back(0);
    which.push_back(j);
  }
  if (resumed.empty()) return;
  state->index_select(index_tensor(rows, model.device()));
  const auto tickets = running.resume(std::move(state), std::move(resumed));
  while (!running.empty()) {
    for (auto& d : running.step()) {
      const size_t j = which[static_cast<size_t>(std::find(tickets.begin(), tickets.end(), d.ticket) - tickets.begin())];
      out.next[j].completion = to_translations(d.n_best, source, tokenizers, options)[0];
    }
  }
}

}  // namespace

Alternatives next_alternatives(StepModel& model, const Tokenizers& tokenizers, const std::string& source,
                               const AlternativesQuery& query, const TranslateOptions& options) {
  const auto& prefix = query.prefix;
  const int k = query.k;
  if (options.search.rules != SearchRules::attnmt || options.search.sampling || options.mbr != MbrMetric::none) {
    throw InputError("alternatives: beam or greedy search under decode.search_rules attnmt only, without sampling "
                     "or MBR");
  }
  if (k < 1) throw InputError("alternatives: k must be at least 1");
  if (!(query.prefix_bias_beta >= 0 && query.prefix_bias_beta < 1)) {
    throw InputError("alternatives: prefix_bias_beta must be in [0, 1)");
  }
  torch::InferenceMode inference;
  const auto encoded = encode_sources(*tokenizers.src, {source}, options.max_source_tokens)[0];
  if (encoded.empty()) throw InputError("alternatives: the source is blank");
  Alternatives out;
  for (int id : tokenizers.tgt->encode(prefix)) out.prefix.push_back(id);
  for (auto id : out.prefix) out.prefix_pieces.push_back(tokenizers.tgt->piece(static_cast<int>(id)));
  const int64_t src_len = static_cast<int64_t>(encoded.size()) + 1;
  const int64_t room = max_target_length(src_len, options.search);
  if (static_cast<int64_t>(out.prefix.size()) + 1 > room) {
    throw InputError("prefix: " + std::to_string(out.prefix.size()) + " target subwords, and the sentence's output " +
                     "may have at most " + std::to_string(room) + " (decode.max_length_ratio, decode.max_length): " +
                     "no room for a next one");
  }

  // The model's distribution after the prefix: bos, then the prefix fed one token at a time.
  const auto device = model.device();
  std::vector<int64_t> ids(encoded.begin(), encoded.end());
  ids.push_back(model.eos_id());
  auto src = torch::tensor(ids, torch::kLong).view({1, src_len}).to(device);
  auto state = model.start(src, torch::full({1}, src_len, torch::kLong).to(device));
  StepResult r;
  int64_t prev = model.bos_id();
  double prefix_log_prob = 0;  // log P(prefix | source), as forced beam search sums it
  for (size_t t = 0;; ++t) {
    r = model.step(torch::full({1}, prev, torch::dtype(torch::kLong).device(device)), *state, false);
    if (t == out.prefix.size()) break;
    prev = out.prefix[t];
    if (!r.vocabulary.defined()) prefix_log_prob += ruled_log_probs(r)[0][prev].item<double>();
  }
  auto log_probs = r.logits.to(torch::kCPU, torch::kDouble);  // [1, V]
  if (!r.log_probs) log_probs = log_probs.log_softmax(-1);
  const int64_t V = log_probs.size(1);
  auto [values, columns] = log_probs[0].topk(std::min<int64_t>(k, V));
  const auto tokens = r.vocabulary.defined() ? r.vocabulary.index_select(0, columns) : columns;

  // Each alternative's completion: the prefix and that subword forced (or biased towards), then
  // search goes on (after a forced end of sentence there is nothing left to search: the
  // translation is the prefix).
  LineGuides guides;
  guides.prefix_bias_beta = query.prefix_bias_beta;
  for (int64_t j = 0; j < values.size(0); ++j) {
    Alternative a;
    a.token = tokens[j].item<int64_t>();
    a.log_prob = values[j].item<double>();
    a.piece = a.token == model.eos_id() ? "</s>" : tokenizers.tgt->piece(static_cast<int>(a.token));
    guides.prefix_ids.push_back(out.prefix);
    guides.prefix_ids.back().push_back(a.token);
    out.next.push_back(std::move(a));
  }
  TranslateOptions search = options;
  search.search.n_best = 1;
  search.progress_label.clear();
  // Where a running search can take them, the completions go on from the state after the prefix
  // (fed once, above) instead of forcing it again for each: the same search from there, k rows
  // of the prefix's steps saved (as CTranslate2's decode_alternatives continues from its state).
  // (Not with no_repeat_ngram_size, which could bar a forced token: forced search cuts it there.)
  if (query.prefix_bias_beta == 0 && !search.search.return_attention && search.search.coverage_penalty == 0.0 &&
      search.search.no_repeat_ngram_size == 0 && !r.vocabulary.defined() && RunningSearch::refusal(model, search.search).empty()) {
    complete_from_state(model, std::move(state), src_len, prefix_log_prob, ruled_log_probs(r), out, encoded, tokenizers,
                        search);
    return out;
  }
  const auto completions =
      translate_lines(model, tokenizers, std::vector<std::string>(out.next.size(), source), search, guides);
  for (size_t j = 0; j < out.next.size(); ++j) out.next[j].completion = completions[j][0];
  return out;
}

}  // namespace attnmt
