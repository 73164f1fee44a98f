// What `attnmt translate` writes: the translations (1-best lines, or n-best lists in Moses'
// "line ||| text ||| score" form), the attention of each best translation as JSON lines, and the
// run's statistics.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "decoding/translator.h"

namespace attnmt {

// One line per input line (n_best == 1), else every hypothesis as "i ||| text ||| score".
std::string format_translations(const std::vector<std::vector<Translation>>& results, int n_best);

// Per hypothesis written (as format_translations writes them): "i<TAB>log P(Y|X)<TAB>score".
std::string format_scores(const std::vector<std::vector<Translation>>& results);

// One JSON object per input line: {line, src, tgt, attention[tgt][src], translation} of its best.
std::string format_attention(const std::vector<std::vector<Translation>>& results);

// sentences, target_tokens (generated subwords, </s> included) and translate_seconds.
nlohmann::json translation_stats(const std::vector<std::vector<Translation>>& results, double seconds);

}  // namespace attnmt
