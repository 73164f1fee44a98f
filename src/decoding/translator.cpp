#include "decoding/translator.h"

#include <algorithm>
#include <atomic>
#include <numeric>

#include <ATen/Parallel.h>

#include "parallel/workers.h"
#include "util/logging.h"

namespace attnmt {

TranslateOptions translate_options(const DecodeConfig& decode) {
  TranslateOptions options;
  options.search.beam_size = decode.beam_size;
  options.search.n_best = decode.n_best;
  options.search.length_penalty = decode.length_penalty;
  options.search.coverage_penalty = decode.coverage_penalty;
  options.search.max_length_ratio = decode.max_length_ratio;
  options.batch_size = decode.batch_size;
  options.workers = decode.workers;
  return options;
}

std::vector<std::vector<Translation>> translate_lines(StepModel& model, const Tokenizers& tokenizers,
                                                      const std::vector<std::string>& lines,
                                                      const TranslateOptions& options) {
  torch::InferenceMode inference;
  const auto device = model.device();
  const int64_t pad = Tokenizer::kPad;
  const int64_t eos = Tokenizer::kEos;
  std::vector<std::vector<int>> encoded(lines.size());
  std::vector<size_t> order;
  size_t truncated = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;  // blank -> blank
    encoded[i] = tokenizers.src->encode(lines[i]);
    if (encoded[i].empty()) continue;
    if (static_cast<int>(encoded[i].size()) > options.max_source_tokens) {
      encoded[i].resize(options.max_source_tokens);
      ++truncated;
    }
    order.push_back(i);
  }
  if (truncated > 0) {
    spdlog::warn("[decode] {} input line(s) longer than {} subwords were truncated", truncated,
                 options.max_source_tokens);
  }
  // Longest first: similar lengths share a batch, and the largest batch is allocated first.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return encoded[a].size() > encoded[b].size(); });

  std::vector<std::vector<Translation>> results(lines.size());
  for (auto& r : results) r.emplace_back();  // empty line -> one empty translation
  const size_t batches = (order.size() + options.batch_size - 1) / static_cast<size_t>(options.batch_size);
  auto decode_batch = [&](size_t index) {
    const size_t start = index * static_cast<size_t>(options.batch_size);
    const size_t end = std::min(order.size(), start + static_cast<size_t>(options.batch_size));
    const int64_t B = static_cast<int64_t>(end - start);
    int64_t S = 0;
    for (size_t k = start; k < end; ++k) S = std::max<int64_t>(S, encoded[order[k]].size() + 1);
    auto src = torch::full({B, S}, pad, torch::kLong);
    auto lengths = torch::empty({B}, torch::kLong);
    auto* sp = src.data_ptr<int64_t>();
    for (int64_t b = 0; b < B; ++b) {
      const auto& ids = encoded[order[start + b]];
      for (size_t j = 0; j < ids.size(); ++j) sp[b * S + j] = ids[j];
      sp[b * S + ids.size()] = eos;
      lengths[b] = static_cast<int64_t>(ids.size()) + 1;
    }
    auto nbest = search(model, src.to(device), lengths.to(device), options.search);
    for (int64_t b = 0; b < B; ++b) {
      const size_t line = order[start + b];
      auto& out = results[line];
      out.clear();
      std::vector<std::string> src_pieces;
      if (options.search.return_attention) {
        for (int id : encoded[line]) src_pieces.push_back(tokenizers.src->piece(id));
        src_pieces.push_back("</s>");
      }
      for (auto& hyp : nbest[b]) {
        Translation tr;
        tr.text = tokenizers.tgt->decode(std::vector<int>(hyp.tokens.begin(), hyp.tokens.end()));
        tr.score = hyp.score;
        tr.target_tokens = hyp.tokens.size() + (hyp.finished ? 1 : 0);
        if (options.search.return_attention) {
          tr.src_pieces = src_pieces;
          for (auto id : hyp.tokens) tr.tgt_pieces.push_back(tokenizers.tgt->piece(static_cast<int>(id)));
          if (hyp.finished) tr.tgt_pieces.push_back("</s>");
          tr.attention = std::move(hyp.attention);
        }
        out.push_back(std::move(tr));
      }
    }
  };
  // Workers take batches longest first; each runs its own search with threads / workers intra-op
  // threads (a step's many small operations do not split well across threads; batches do).
  const int workers = static_cast<int>(
      std::min<size_t>(resolve_workers(options.workers, device.is_cpu()), std::max<size_t>(batches, 1)));
  std::atomic<size_t> next{0};
  run_workers(workers, at::get_num_threads() / workers, [&](int) {
    torch::InferenceMode worker_inference;
    try {
      for (size_t k; (k = next.fetch_add(1)) < batches;) decode_batch(k);
    } catch (...) {
      next = batches;  // the other workers stop after their current batch
      throw;
    }
  });
  return results;
}

}  // namespace attnmt
