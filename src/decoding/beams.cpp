#include "decoding/beams.h"

#include <algorithm>
#include <stdexcept>

namespace attnmt {

Beams::Beams(std::vector<double> initial_scores, bool keep_attention)
    : scores_(std::move(initial_scores)), keep_attention_(keep_attention) {}

void Beams::advance(const std::vector<int64_t>& parents, const std::vector<int64_t>& tokens,
                    std::vector<double> scores, std::vector<std::vector<float>> attention) {
  if (parents.size() != tokens.size() || parents.size() != scores.size()) {
    throw std::invalid_argument("Beams::advance: parents, tokens and scores differ in length");
  }
  Step step;
  step.parent = parents;
  step.token = tokens;
  if (keep_attention_) step.attention = std::move(attention);
  steps_.push_back(std::move(step));
  scores_ = std::move(scores);
}

Hypothesis Beams::finish(int64_t row, double log_prob, std::optional<int64_t> last_token,
                         std::vector<float> last_attention) const {
  Hypothesis h;
  h.log_prob = log_prob;
  h.finished = !last_token.has_value();
  h.tokens.resize(steps_.size());
  if (keep_attention_) h.attention.resize(steps_.size());
  for (size_t s = steps_.size(); s-- > 0;) {  // follow the back-pointers to the first step
    const auto& step = steps_[s];
    h.tokens[s] = step.token[row];
    if (keep_attention_) h.attention[s] = step.attention[row];
    row = step.parent[row];
  }
  if (last_token) h.tokens.push_back(*last_token);
  if (keep_attention_) h.attention.push_back(std::move(last_attention));
  return h;
}

std::vector<int64_t> Beams::tokens(int64_t row) const {
  std::vector<int64_t> out(steps_.size());
  for (size_t s = steps_.size(); s-- > 0;) {
    out[s] = steps_[s].token[static_cast<size_t>(row)];
    row = steps_[s].parent[static_cast<size_t>(row)];
  }
  return out;
}

}  // namespace attnmt
