// Hand-written step models for the search tests: the next token's distribution is a table.
#pragma once
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <memory>
#include <vector>

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
inline BigramModel garden_path() {
  return BigramModel({{2, {0, 0, 0, 0, 0.6, 0.4}}, {4, {0, 0, 0, 0.4, 0.3, 0.3}}, {5, {0, 0, 0, 0.9, 0.05, 0.05}}});
}

inline torch::Tensor source(int64_t B) { return torch::full({B, 2}, 7, torch::kLong); }
inline torch::Tensor lengths(int64_t B) { return torch::full({B}, 2, torch::kLong); }

}  // namespace attnmt::test
