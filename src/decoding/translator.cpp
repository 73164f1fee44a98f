#include "decoding/translator.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>

#include <ATen/Parallel.h>

#include "config/decode_rules.h"
#include "decoding/constraints.h"
#include "decoding/mbr.h"
#include "decoding/search.h"
#include "runtime/workers.h"
#include "util/decode_phases.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/progress.h"

namespace attnmt {

TranslateOptions translate_options(const DecodeConfig& decode) {
  TranslateOptions options;
  options.search.beam_size = decode.beam_size;
  options.search.n_best = decode.n_best;
  options.search.length_penalty = decode.length_penalty;
  options.search.coverage_penalty = decode.coverage_penalty;
  options.search.max_length_ratio = decode.max_length_ratio;
  options.search.min_length = decode.min_length;
  options.search.max_length = decode.max_length;
  options.search.no_repeat_ngram_size = decode.no_repeat_ngram_size;
  options.search.sampling = decode.sampling;
  options.search.temperature = decode.temperature;
  options.search.top_k = decode.top_k;
  options.search.top_p = decode.top_p;
  options.search.epsilon = decode.epsilon;
  options.search.seed = decode.seed;
  options.search.rules = decode.search_rules;
  options.search.ban_unk = decode.ban_unk;
  options.search.unk_penalty = decode.unk_penalty;
  options.search.word_penalty = decode.word_penalty;
  options.batch_size = decode.batch_size;
  options.workers = decode.workers;
  options.mbr = decode.mbr;
  options.mbr_candidates = decode.mbr_candidates;
  return options;
}

namespace {

// The target-side guides of the lines to decode as token ids: a function giving line i's
// SentenceGuide. InputError when a line's constraints cannot fit in its maximum output length.
std::function<SentenceGuide(size_t)> encode_guides(const LineGuides& guides, const Tokenizers& tokenizers,
                                                   const std::vector<std::vector<int>>& encoded,
                                                   const std::vector<size_t>& order, const SearchOptions& search) {
  auto prefixes = std::make_shared<std::vector<std::vector<int64_t>>>(std::max(guides.prefixes.size(), guides.prefix_ids.size()));
  auto watches = std::make_shared<std::vector<DecidedWatch>>(guides.watches);
  auto constraints = std::make_shared<std::vector<Phrases>>(guides.constraints.size());
  for (size_t i : order) {
    if (!guides.prefixes.empty()) {
      for (int id : tokenizers.tgt->encode(guides.prefixes[i])) (*prefixes)[i].push_back(id);
    }
    if (!guides.prefix_ids.empty()) (*prefixes)[i] = guides.prefix_ids[i];
    if (guides.constraints.empty()) continue;
    int64_t tokens = 0;
    for (const auto& phrase : guides.constraints[i]) {
      const auto ids = tokenizers.tgt->encode(phrase);
      if (ids.empty()) continue;
      (*constraints)[i].emplace_back(ids.begin(), ids.end());
      tokens += static_cast<int64_t>(ids.size());
    }
    const int64_t room = max_target_length(static_cast<int64_t>(encoded[i].size()) + 1, search);
    if (tokens > room) {
      throw InputError("--constraints: line " + std::to_string(i + 1) + ": its constraints are " +
                       std::to_string(tokens) + " target tokens, more than the line's maximum output length " +
                       std::to_string(room) + " (decode.max_length_ratio, decode.max_length)");
    }
  }
  if (!(guides.prefix_bias_beta >= 0 && guides.prefix_bias_beta < 1)) {
    throw InputError("prefix_bias_beta: expected a number in [0, 1), got " + std::to_string(guides.prefix_bias_beta));
  }
  return [prefixes, constraints, watches, beta = guides.prefix_bias_beta](size_t line) {
    SentenceGuide g;
    if (!watches->empty()) g.watch = (*watches)[line];
    g.id = line;  // seeds the line's samples
    if (!prefixes->empty()) g.prefix = (*prefixes)[line];
    g.prefix_bias_beta = beta;
    if (!constraints->empty()) g.constraints = (*constraints)[line];
    return g;
  };
}

}  // namespace

std::vector<std::vector<int>> encode_sources(const Tokenizer& src, const std::vector<std::string>& lines,
                                             int max_source_tokens) {
  std::vector<std::vector<int>> encoded(lines.size());
  size_t truncated = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;  // blank -> blank
    encoded[i] = src.encode(lines[i]);
    if (static_cast<int>(encoded[i].size()) > max_source_tokens) {
      encoded[i].resize(max_source_tokens);
      ++truncated;
    }
  }
  if (truncated > 0) {
    spdlog::warn("[decode] {} input line(s) longer than {} subwords were truncated", truncated, max_source_tokens);
  }
  return encoded;
}

std::pair<torch::Tensor, torch::Tensor> source_batch(const std::vector<const std::vector<int>*>& sentences) {
  const int64_t B = static_cast<int64_t>(sentences.size());
  int64_t S = 0;
  for (const auto* ids : sentences) S = std::max<int64_t>(S, static_cast<int64_t>(ids->size()) + 1);
  auto src = torch::full({B, S}, static_cast<int64_t>(Tokenizer::kPad), torch::kLong);
  auto lengths = torch::empty({B}, torch::kLong);
  auto* sp = src.data_ptr<int64_t>();
  auto* lp = lengths.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& ids = *sentences[static_cast<size_t>(b)];
    for (size_t j = 0; j < ids.size(); ++j) sp[b * S + static_cast<int64_t>(j)] = ids[j];
    sp[b * S + static_cast<int64_t>(ids.size())] = Tokenizer::kEos;
    lp[b] = static_cast<int64_t>(ids.size()) + 1;
  }
  return {src, lengths};
}

std::vector<Translation> to_translations(std::vector<Hypothesis>& n_best, const std::vector<int>& source,
                                         const Tokenizers& tokenizers, const TranslateOptions& options) {
  std::vector<Translation> out;
  std::vector<std::string> src_pieces;
  const bool pieces = options.search.return_attention || options.return_pieces;
  if (pieces) {
    for (int id : source) src_pieces.push_back(tokenizers.src->piece(id));
    src_pieces.push_back("</s>");
  }
  for (auto& hyp : n_best) {
    Translation tr;
    tr.text = tokenizers.tgt->decode(std::vector<int>(hyp.tokens.begin(), hyp.tokens.end()));
    tr.score = hyp.score;
    tr.log_prob = hyp.log_prob;
    tr.constraints_met = hyp.constraints_met;
    tr.target_tokens = hyp.tokens.size() + (hyp.finished ? 1 : 0);
    if (pieces) {
      tr.src_pieces = src_pieces;
      for (auto id : hyp.tokens) tr.tgt_pieces.push_back(tokenizers.tgt->piece(static_cast<int>(id)));
      if (hyp.finished) tr.tgt_pieces.push_back("</s>");
    }
    if (options.search.return_attention) tr.attention = std::move(hyp.attention);
    out.push_back(std::move(tr));
  }
  return out;
}

std::vector<std::vector<Translation>> translate_lines(StepModel& model, const Tokenizers& tokenizers,
                                                      const std::vector<std::string>& lines,
                                                      const TranslateOptions& options, const LineGuides& guides) {
  auto check_lines = [&](size_t n, const char* flag) {
    if (n != 0 && n != lines.size()) {
      throw InputError(std::string(flag) + ": " + std::to_string(n) + " lines, the input has " + std::to_string(lines.size()));
    }
  };
  check_lines(guides.prefixes.size(), "--prefix");
  check_lines(guides.prefix_ids.size(), "prefix ids");
  if (!guides.prefixes.empty() && !guides.prefix_ids.empty()) throw InputError("prefixes: as text or as ids, not both");
  check_lines(guides.constraints.size(), "--constraints");
  check_lines(guides.watches.size(), "watches");
  if (!guides.watches.empty() && (options.search.rules != SearchRules::attnmt || options.search.sampling ||
                                  options.mbr != MbrMetric::none || !guides.constraints.empty())) {
    throw InputError("words as they are decided: greedy or beam search under decode.search_rules attnmt only, "
                     "without sampling, MBR or constraints");
  }
  const bool prefixed = !guides.prefixes.empty() || !guides.prefix_ids.empty();
  if (options.search.rules != SearchRules::attnmt && (prefixed || !guides.constraints.empty())) {
    throw InputError(std::string(!prefixed ? "constraints" : "target prefixes") +
                     ": not with decode.search_rules " +
                     name_string(options.search.rules) + " (attnmt's rules only)");
  }
  torch::InferenceMode inference;
  const auto device = model.device();
  const auto encoded = [&] {
    PhaseScope phase(DecodePhase::kTokenize);
    return encode_sources(*tokenizers.src, lines, options.max_source_tokens);
  }();
  std::vector<size_t> order;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!encoded[i].empty()) order.push_back(i);
  }
  const auto sentence_guide = encode_guides(guides, tokenizers, encoded, order, options.search);
  // With MBR the search returns every hypothesis to compare; n_best of them are kept after.
  SearchOptions search = options.search;
  const bool mbr = options.mbr != MbrMetric::none;
  if (mbr) {
    search.n_best = mbr_candidate_count(search.sampling, options.mbr_candidates, search.beam_size);
  }
  const size_t n_best = static_cast<size_t>(std::min(options.search.n_best, search.n_best));
  // Longest first: similar lengths share a batch, and the largest batch is allocated first.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return encoded[a].size() > encoded[b].size(); });

  std::vector<std::vector<Translation>> results(lines.size());
  for (auto& r : results) r.emplace_back();  // empty line -> one empty translation
  const size_t batches = (order.size() + options.batch_size - 1) / static_cast<size_t>(options.batch_size);
  auto decode_batch = [&](size_t index) {
    // Everything here not in a phase of its own (util/decode_phases.h) is the search's; the batch's
    // tensors and the output's text are tokenizing's.
    PhaseScope search_phase(DecodePhase::kSearch);
    std::optional<PhaseScope> tokenize_phase(std::in_place, DecodePhase::kTokenize);
    const size_t start = index * static_cast<size_t>(options.batch_size);
    const size_t end = std::min(order.size(), start + static_cast<size_t>(options.batch_size));
    const int64_t B = static_cast<int64_t>(end - start);
    std::vector<const std::vector<int>*> batch;
    for (size_t k = start; k < end; ++k) batch.push_back(&encoded[order[k]]);
    auto [src, lengths] = source_batch(batch);
    Guides sentence_guides;
    for (int64_t b = 0; b < B; ++b) sentence_guides.push_back(sentence_guide(order[start + b]));
    tokenize_phase.reset();
    auto nbest = attnmt::search(model, src.to(device), lengths.to(device), search, sentence_guides);
    tokenize_phase.emplace(DecodePhase::kTokenize);
    for (int64_t b = 0; b < B; ++b) {
      const size_t line = order[start + b];
      auto& out = results[line];
      out = to_translations(nbest[b], encoded[line], tokenizers, options);
      if (mbr) {
        mbr_rerank(out, search.sampling, options.mbr);
        if (out.size() > n_best) out.resize(n_best);
      }
      if (out.empty()) out.emplace_back();  // never left without a line
    }
  };
  // Workers take batches longest first; each runs its own search with threads / workers intra-op
  // threads (a step's many small operations do not split well across threads; batches do).
  const int workers = static_cast<int>(
      std::min<size_t>(resolve_workers(options.workers, device.is_cpu()), std::max<size_t>(batches, 1)));
  std::atomic<size_t> next{0};
  std::optional<Progress> progress;
  if (!options.progress_label.empty()) progress.emplace(options.progress_label, "sentences", static_cast<int64_t>(lines.size()));
  std::mutex progress_mutex;
  size_t decoded = lines.size() - order.size();  // blank lines are done
  if (progress) progress->update(static_cast<int64_t>(decoded));
  auto report = [&](size_t batch) {
    if (!progress || !progress->enabled()) return;
    const size_t start = batch * static_cast<size_t>(options.batch_size);
    std::lock_guard<std::mutex> lock(progress_mutex);
    decoded += std::min(order.size(), start + static_cast<size_t>(options.batch_size)) - start;
    progress->update(static_cast<int64_t>(decoded));
  };
  run_workers(workers, at::get_num_threads() / workers, [&](int) {
    torch::InferenceMode worker_inference;
    try {
      for (size_t k; (k = next.fetch_add(1)) < batches;) {
        decode_batch(k);
        report(k);
      }
    } catch (...) {
      next = batches;  // the other workers stop after their current batch
      throw;
    }
  });
  return results;
}

}  // namespace attnmt
