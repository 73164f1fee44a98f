// Batches as tensors, and the teacher-forced negative log-likelihood of a dataset (valid
// perplexity in training, and again in `attnmt compare` on the loaded model).
#pragma once
#include <torch/torch.h>

#include <vector>

#include "data/examples.h"
#include "model/seq2seq.h"

namespace attnmt {

struct BatchTensors {
  torch::Tensor src, lengths, tgt_in, tgt_out;  // [B, S], [B], [B, T], [B, T]
  int64_t tgt_tokens = 0;                       // real target tokens, end of sentence included
};

// src: ids + eos; tgt_in: bos + ids; tgt_out: ids + eos; all padded with pad.
BatchTensors make_batch(const std::vector<Example>& examples, const std::vector<size_t>& ids,
                        const torch::Device& device);

struct NllSum {
  double nll = 0;      // sum of -log p(y) over every target token, end of sentence included
  int64_t tokens = 0;  // those tokens
  double perplexity() const;
};

// No label smoothing, no gradient; the caller sets eval mode.
NllSum teacher_forced_nll(Seq2Seq& model, const std::vector<Example>& examples, int batch_size,
                          const torch::Device& device);

}  // namespace attnmt
