// Hand-written step models for the search tests: the next token's distribution is a table.
#pragma once
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "decoding/search_types.h"
#include "decoding/step_model.h"

namespace attnmt::test {

// Vocabulary: 0 pad, 1 unk, 2 bos, 3 eos, 4 "a", 5 "b". The next-token distribution depends only
// on the previous token (a bigram table), written by hand. With `columns`, a step scores only
// those tokens, as a shortlist does (StepResult::vocabulary).
class BigramModel : public StepModel {
 public:
  struct State : SearchState {
    torch::Tensor dummy;  // [N] stands in for a recurrent state
    void index_select(const torch::Tensor& index) override { dummy = dummy.index_select(0, index); }
  };
  explicit BigramModel(std::map<int64_t, std::vector<double>> table, std::vector<int64_t> columns = {})
      : table_(std::move(table)), columns_(std::move(columns)) {}
  std::unique_ptr<SearchState> start(const torch::Tensor& src, const torch::Tensor&) override {
    auto s = std::make_unique<State>();
    s->dummy = torch::arange(src.size(0));
    return s;
  }
  StepResult step(const torch::Tensor& prev, SearchState&, bool want_attention) override {
    const int64_t N = prev.size(0);
    auto lp = torch::full({N, 6}, -1e9, torch::kDouble);
    for (int64_t n = 0; n < N; ++n) {
      const auto it = table_.find(prev[n].item<int64_t>());
      if (it == table_.end()) {  // rows of dead beams (prev = eos): anything, it never wins
        lp[n][3] = 0.0;
        continue;
      }
      const auto& probs = it->second;
      for (int64_t v = 0; v < 6; ++v) {
        if (probs[v] > 0) lp[n][v] = std::log(probs[v]);
      }
    }
    StepResult r;
    r.logits = lp.to(torch::kFloat);
    if (!columns_.empty()) {
      r.vocabulary = torch::tensor(columns_, torch::kLong);
      r.logits = r.logits.index_select(1, r.vocabulary).contiguous();
    }
    if (want_attention) r.attention = torch::full({N, 2}, 0.5);
    return r;
  }
  int64_t bos_id() const override { return 2; }
  int64_t eos_id() const override { return 3; }
  torch::Device device() const override { return torch::kCPU; }

 private:
  std::map<int64_t, std::vector<double>> table_;
  std::vector<int64_t> columns_;
};

// After bos: a 0.6, b 0.4. After a: eos 0.4, a 0.3, b 0.3. After b: eos 0.9, a 0.05, b 0.05.
// Greedy: "a" (0.6 * 0.4 = 0.24). Best sequence: "b" (0.4 * 0.9 = 0.36).
// The two word tokens of the models below (0-3 are pad, unk, bos, eos).
constexpr int64_t a = 4, b = 5;

inline BigramModel garden_path() {
  return BigramModel({{2, {0, 0, 0, 0, 0.6, 0.4}}, {4, {0, 0, 0, 0.4, 0.3, 0.3}}, {5, {0, 0, 0, 0.9, 0.05, 0.05}}});
}

// A deterministic toy with a history: each row's state is a hash of its source and of the tokens
// fed so far, and a step's logits are a fixed pseudo-random function of that hash in [-2, 2)
// (multiples of 2^-22, exact in float32), eos_offset + eos_slope * step added to the end of
// sentence's, so that hypotheses end after a few steps (a negative offset: later, or at the
// maximum length). Attention: hash-drawn weights over the row's real source positions. Each row
// keeps its own step, so states of batches started apart merge (continuous batching) and every
// row's numbers stay exactly its own.
// tests/data/toolkit_search/make.py is the same model in Python: the toolkits' search code runs on
// it there, and its expected outputs are compared with attnmt's (test_toolkit_search.cpp).
// Vocabulary: 0 pad, 1 unk, 2 bos, 3 eos, then words.
class HashModel : public StepModel {
 public:
  struct State : SearchState {
    torch::Tensor hash;     // [N] int64 (< 2^62)
    torch::Tensor lengths;  // [N] the row's source length
    torch::Tensor steps;    // [N] int64: the row's step
    int64_t width = 0;      // the attention's columns: the longest padded source
    void index_select(const torch::Tensor& index) override {
      hash = hash.index_select(0, index);
      lengths = lengths.index_select(0, index);
      steps = steps.index_select(0, index);
    }
  };
  HashModel(int64_t vocab, double eos_offset, double eos_slope)
      : vocab_(vocab), eos_offset_(eos_offset), eos_slope_(eos_slope) {}

  static int64_t mix(int64_t h, int64_t x) {
    uint64_t z =
        static_cast<uint64_t>(h) * 6364136223846793005ULL + static_cast<uint64_t>(x) * 1442695040888963407ULL + 1;
    z ^= z >> 29;
    z *= 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 32;
    return static_cast<int64_t>(z & ((uint64_t{1} << 62) - 1));
  }
  std::unique_ptr<SearchState> start(const torch::Tensor& src, const torch::Tensor& lengths) override {
    auto s = std::make_unique<State>();
    const auto tokens = src.to(torch::kLong).contiguous();
    s->lengths = lengths.to(torch::kLong).contiguous().clone();
    s->hash = torch::empty_like(s->lengths);
    s->steps = torch::zeros_like(s->lengths);
    s->width = tokens.size(1);
    for (int64_t b = 0; b < tokens.size(0); ++b) {
      const int64_t n = s->lengths.data_ptr<int64_t>()[b];
      int64_t h = n;
      for (int64_t j = 0; j < n; ++j) h = mix(h, tokens.data_ptr<int64_t>()[b * s->width + j]);
      s->hash.data_ptr<int64_t>()[b] = h;
    }
    return s;
  }
  StepResult step(const torch::Tensor& prev_tokens, SearchState& state, bool want_attention) override {
    auto& s = static_cast<State&>(state);
    const auto prev = prev_tokens.to(torch::kLong).contiguous();
    const int64_t N = prev.size(0), S = s.width;
    s.hash = s.hash.contiguous();
    s.lengths = s.lengths.contiguous();
    s.steps = s.steps.contiguous();
    auto logits = torch::empty({N, vocab_}, torch::kFloat);
    auto attention = torch::zeros({N, S}, torch::kFloat);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t h = mix(s.hash.data_ptr<int64_t>()[n], prev.data_ptr<int64_t>()[n]);
      s.hash.data_ptr<int64_t>()[n] = h;
      for (int64_t v = 0; v < vocab_; ++v) {
        double x = static_cast<double>(mix(h, 1000 + v) >> 38) * 0x1p-22 - 2.0;
        if (v == eos_id()) x = x + (eos_offset_ + eos_slope_ * static_cast<double>(s.steps.data_ptr<int64_t>()[n]));
        logits.data_ptr<float>()[n * vocab_ + v] = static_cast<float>(x);
      }
      const int64_t len = s.lengths.data_ptr<int64_t>()[n];
      std::vector<double> w(static_cast<size_t>(len));
      double total = 0.0;
      for (int64_t j = 0; j < len; ++j) {
        w[static_cast<size_t>(j)] = static_cast<double>((mix(h, 5000 + j) >> 42) + 1);
        total += w[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < len; ++j)
        attention.data_ptr<float>()[n * S + j] = static_cast<float>(w[static_cast<size_t>(j)] / total);
    }
    s.steps += 1;
    StepResult r;
    r.logits = logits;
    if (want_attention) r.attention = attention;
    return r;
  }
  int64_t bos_id() const override { return 2; }
  int64_t eos_id() const override { return 3; }
  torch::Device device() const override { return torch::kCPU; }
  bool merges_states() const override { return true; }
  void merge(SearchState& into, SearchState& from) override {
    auto& a = static_cast<State&>(into);
    auto& b = static_cast<State&>(from);
    a.hash = torch::cat({a.hash, b.hash});
    a.lengths = torch::cat({a.lengths, b.lengths});
    a.steps = torch::cat({a.steps, b.steps});
    a.width = std::max(a.width, b.width);
  }

 private:
  int64_t vocab_;
  double eos_offset_, eos_slope_;
};

// Search options of beam size `beam` that score by the plain log-probability (no length penalty),
// so that scores compare with sums of the models' log-probabilities written by hand.
inline SearchOptions unnormalised(int beam) {
  SearchOptions o;
  o.beam_size = beam;
  o.length_penalty = 0;
  return o;
}

inline torch::Tensor source(int64_t B) { return torch::full({B, 2}, 7, torch::kLong); }
inline torch::Tensor lengths(int64_t B) { return torch::full({B}, 2, torch::kLong); }

}  // namespace attnmt::test
