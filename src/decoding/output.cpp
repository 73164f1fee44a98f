#include "decoding/output.h"

#include <sstream>

namespace attnmt {

std::string format_translations(const std::vector<std::vector<Translation>>& results, int n_best) {
  std::ostringstream out;
  for (size_t i = 0; i < results.size(); ++i) {
    if (n_best > 1) {
      for (const auto& t : results[i]) out << i << " ||| " << t.text << " ||| " << t.score << '\n';
    } else {
      out << results[i].front().text << '\n';
    }
  }
  return out.str();
}

std::string format_scores(const std::vector<std::vector<Translation>>& results) {
  std::ostringstream out;
  out.precision(9);
  for (size_t i = 0; i < results.size(); ++i) {
    for (const auto& t : results[i]) out << i << '\t' << t.log_prob << '\t' << t.score << '\n';
  }
  return out.str();
}

std::string format_attention(const std::vector<std::vector<Translation>>& results) {
  std::string out;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& best = results[i].front();
    nlohmann::json j = {{"line", i}, {"src", best.src_pieces}, {"tgt", best.tgt_pieces},
                        {"attention", best.attention}, {"translation", best.text}};
    out += j.dump();
    out += '\n';
  }
  return out;
}

nlohmann::json translation_stats(const std::vector<std::vector<Translation>>& results, double seconds) {
  int64_t tokens = 0;
  for (const auto& r : results) tokens += static_cast<int64_t>(r.front().target_tokens);
  return {{"sentences", results.size()}, {"target_tokens", tokens}, {"translate_seconds", seconds}};
}

}  // namespace attnmt
