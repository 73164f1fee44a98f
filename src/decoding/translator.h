// Text in, text out: tokenizes lines, decodes them in length-sorted batches with greedy or beam
// search, detokenizes, and returns the results in input order. Empty lines give empty output.
#pragma once
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "data/tokenizer.h"
#include "decoding/search_types.h"
#include "decoding/translation.h"
#include "decoding/step_model.h"

namespace attnmt {

struct TranslateOptions {
  SearchOptions search;
  int batch_size = decode_defaults().batch_size;
  int workers = decode_defaults().workers;  // batches decoded at once, each in a thread of its own (0 = one per thread on CPU)
  int max_source_tokens = 1024;  // longer inputs are truncated (memory stays bounded); logged
  std::string progress_label;    // "[translate]": a progress line on a terminal (util/progress.h); "" = none
  bool return_pieces = false;    // fill Translation's src_pieces/tgt_pieces (return_attention does too)
  // Minimum Bayes risk reordering of each line's hypotheses (decoding/mbr.h; decode.mbr): none,
  // bleu or chrf; the hypotheses compared: beam search's best mbr_candidates (0 or more than
  // beam_size: the whole beam), or mbr_candidates samples. search.n_best of them are returned.
  MbrMetric mbr = decode_defaults().mbr;
  int mbr_candidates = decode_defaults().mbr_candidates;
};

// What a user may give per input line besides the source, each empty or one entry per line.
struct LineGuides {
  std::vector<std::string> prefixes;                  // raw target text forced first ("" = none)
  std::vector<std::vector<int64_t>> prefix_ids;       // or target token ids forced first, as they are
  // In [0, 1): 0 forces the prefixes; above, search is biased towards them instead
  // (SentenceGuide::prefix_bias_beta, CTranslate2's prefix_bias_beta). InputError outside.
  double prefix_bias_beta = 0;
  std::vector<std::vector<std::string>> constraints;  // raw target phrases every output must contain
  // Each line's output as it is decided (search_types.h); empty functions watch nothing. Greedy
  // and beam search under attnmt's rules only, without sampling or MBR (InputError otherwise).
  std::vector<DecidedWatch> watches;
};

// The decode.* section of a config as options (n-best, beam, penalties, length ratio, batch).
TranslateOptions translate_options(const DecodeConfig& decode);

// Each line's source subwords: a blank line, or one that encodes to nothing, stays empty; a line
// longer than max_source_tokens is cut there (logged once, with how many were cut), so memory stays
// bounded whatever the input.
std::vector<std::vector<int>> encode_sources(const Tokenizer& src, const std::vector<std::string>& lines,
                                             int max_source_tokens);

// Sentences' source subwords as search() takes them: src [B, S] (each followed by eos, padded)
// and lengths [B] (eos counted), on the CPU.
std::pair<torch::Tensor, torch::Tensor> source_batch(const std::vector<const std::vector<int>*>& sentences);

// A sentence's hypotheses as text (its pieces and attention where options ask for them).
std::vector<Translation> to_translations(std::vector<Hypothesis>& n_best, const std::vector<int>& source,
                                         const Tokenizers& tokenizers, const TranslateOptions& options);

// One n-best list per input line. A line's prefix is force-decoded before search goes on (the
// translation then begins with it); its constraints are decoded as constraints.h describes.
// InputError when guides have another number of lines than the input, or a line's constraints
// cannot fit in its maximum output length.
std::vector<std::vector<Translation>> translate_lines(StepModel& model, const Tokenizers& tokenizers,
                                                      const std::vector<std::string>& lines,
                                                      const TranslateOptions& options, const LineGuides& guides = {});

}  // namespace attnmt
