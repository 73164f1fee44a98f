#include "decoding/token_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "decoding/neg_inf.h"

namespace attnmt {

namespace {

// The column of `token` (-1 when the step's vocabulary has no such column).
int64_t column_of(int64_t token, int64_t V, const int64_t* vocabulary) {
  if (!vocabulary) return token < V ? token : -1;
  const auto* end = vocabulary + V;
  const auto* it = std::find(vocabulary, end, token);
  return it == end ? -1 : it - vocabulary;
}

}  // namespace

TokenRules::TokenRules(const SearchOptions& options, const Guides& guides, int64_t eos)
    : min_length_(options.min_length), ngram_(options.no_repeat_ngram_size), guides_(guides), eos_(eos) {
  for (const auto& g : guides) longest_prefix_ = std::max(longest_prefix_, g.prefix.size());
}

bool TokenRules::active(int64_t t) const {
  return t < min_length_ || (ngram_ > 0 && t >= ngram_ - 1) || t < static_cast<int64_t>(longest_prefix_);
}

bool TokenRules::active_for(int64_t t, int64_t sentence) const {
  const size_t prefix = sentence < static_cast<int64_t>(guides_.size()) ? guides_[static_cast<size_t>(sentence)].prefix.size() : 0;
  return t < min_length_ || (ngram_ > 0 && t >= ngram_ - 1) || t < static_cast<int64_t>(prefix);
}

std::vector<int64_t> TokenRules::repeating_tokens(const std::vector<int64_t>& tokens, int n) {
  std::vector<int64_t> out;
  const int64_t L = static_cast<int64_t>(tokens.size());
  const int64_t context = n - 1;  // the last n - 1 tokens, which a new token would extend
  if (n <= 0 || L < context) return out;
  for (int64_t i = 0; i + context < L; ++i) {  // the n-gram tokens[i, i + n)
    if (std::equal(tokens.begin() + i, tokens.begin() + i + context, tokens.end() - context)) {
      out.push_back(tokens[static_cast<size_t>(i + context)]);
    }
  }
  return out;
}

bool TokenRules::follows(const std::vector<int64_t>& history, const std::vector<int64_t>& prefix, int64_t t) {
  return static_cast<int64_t>(history.size()) == t && t <= static_cast<int64_t>(prefix.size()) &&
         std::equal(history.begin(), history.end(), prefix.begin());
}

void TokenRules::bias_row(torch::Tensor& log_probs, int64_t row, int64_t token, double beta, const int64_t* vocabulary) {
  const int64_t V = log_probs.size(1);
  float* p = log_probs.data_ptr<float>() + row * V;
  const int64_t biased = column_of(token, V, vocabulary);  // -1: not in this step's shortlist
  for (int64_t v = 0; v < V; ++v) {
    const double mixed = (1 - beta) * std::exp(static_cast<double>(p[v])) + (v == biased ? beta : 0.0);
    p[v] = mixed > 0 ? static_cast<float>(std::log(mixed)) : kNegInfF;
  }
}

void TokenRules::apply_row(torch::Tensor& log_probs, int64_t row, int64_t t, const std::vector<int64_t>* prefix,
                           const std::vector<int64_t>& history, const int64_t* vocabulary) const {
  const int64_t V = log_probs.size(1);
  float* p = log_probs.data_ptr<float>() + row * V;
  if (prefix) {  // only the prefix's next token (a forced token is never barred)
    const int64_t keep = column_of((*prefix)[static_cast<size_t>(t)], V, vocabulary);
    const float kept = keep >= 0 ? p[keep] : kNegInfF;
    std::fill(p, p + V, kNegInfF);
    if (keep >= 0) p[keep] = kept;
    return;
  }
  if (t < min_length_) {
    if (const int64_t c = column_of(eos_, V, vocabulary); c >= 0) p[c] = kNegInfF;
  }
  if (ngram_ > 0) {
    for (int64_t token : repeating_tokens(history, ngram_)) {
      if (const int64_t c = column_of(token, V, vocabulary); c >= 0) p[c] = kNegInfF;
    }
  }
}

}  // namespace attnmt
