// What search takes from a step's logits: log-normalisers for greedy search, and beam search's
// best candidates per sentence. The step model returns logits (step_model.h); log_softmax is
// never written out.
//
// Beam search's step was: log_softmax over [N, V] in place, add each row's running score, then
// topk over each sentence's [K * V] (a copy of every value and index, then a partial sort), a
// large share of a beam search's operator time (docs/performance.md, "Beam candidates from the
// logits"). Here, on the CPU in float: one pass per row for the maximum of each block of 64
// logits and the sum of exp (log Z), summed against the largest block maximum so far and rescaled
// when a block raises it, then each block is compared, by its
// maximum, against the C-th best so far and looked inside only when it could enter (the row is
// not read again); inside, one comparison per 16 or 8 logits (AVX-512, AVX2) finds those
// above it, and only they are offered. A beam whose running score is already below the C-th best
// is not read at all (log_softmax <= 0). Elsewhere (other devices and types) the tensor
// expressions run.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace attnmt {

// log Z per row of logits [N, V]: log_softmax(logits)[n, v] = logits[n, v] - log Z[n]. [N] double, CPU.
std::vector<double> log_normalizers(const torch::Tensor& logits);

struct Candidates {
  int64_t per_sentence = 0;    // C
  std::vector<double> scores;  // [A * C], best first within each sentence
  std::vector<int64_t> ids;    // [A * C]: k * V + v, beam k of the sentence, word v
};

// For each sentence a (rows a*K .. a*K + K-1 of logits [A * K, V]) the C best of
// base[row] + log_softmax(logits)[row, v] over its K rows and V words. Rows whose base is -inf
// (dead beams) give no candidate; fewer than C candidates are padded with -inf.
// log_probs: the rows are log-probabilities already (no log_softmax; see StepResult::log_probs).
Candidates best_candidates(const torch::Tensor& logits, const std::vector<double>& base, int64_t K, int64_t C,
                           bool log_probs = false);

}  // namespace attnmt
