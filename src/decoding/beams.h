// Beam search's hypotheses as a tree of back-pointers. Each step records, for every live row, the
// token it added and the row of the previous step it extends; a hypothesis's tokens (and its
// attention rows) are read back only when it finishes. A step therefore costs O(rows), not
// O(rows x length) as copying every row's history would.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "decoding/search_types.h"

namespace attnmt {

class Beams {
 public:
  // `rows` live rows, each the empty hypothesis with score `initial_scores[row]` (-inf: dead).
  // keep_attention: every step's attention rows are kept for the finished hypotheses.
  Beams(std::vector<double> initial_scores, bool keep_attention);

  // Cumulative log-probabilities of the live rows (-inf: a dead row that can never win).
  const std::vector<double>& scores() const { return scores_; }
  int64_t rows() const { return static_cast<int64_t>(scores_.size()); }

  // The next step's live rows: row i extends the current row parents[i] by tokens[i], with
  // cumulative log-probability scores[i]; attention[i] is the attention of the step that chose
  // tokens[i] (kept only with keep_attention; may be empty otherwise).
  void advance(const std::vector<int64_t>& parents, const std::vector<int64_t>& tokens, std::vector<double> scores,
               std::vector<std::vector<float>> attention);

  // The hypothesis that ends at current row `row`: its tokens so far, then `last_token` if given
  // (a hypothesis cut at the maximum length keeps its last token; one that chose eos does not);
  // `last_attention` is the attention of this final step. score is left to the caller.
  Hypothesis finish(int64_t row, double log_prob, std::optional<int64_t> last_token,
                    std::vector<float> last_attention) const;

  // The tokens of current row `row` so far (O(steps)).
  std::vector<int64_t> tokens(int64_t row) const;

 private:
  struct Step {
    std::vector<int64_t> parent;  // [rows of this step] -> row of the previous step
    std::vector<int64_t> token;
    std::vector<std::vector<float>> attention;  // [rows][source length], with keep_attention
  };
  std::vector<Step> steps_;
  std::vector<double> scores_;
  bool keep_attention_;
};

}  // namespace attnmt
