// The model's arithmetic, counted analytically from its config: every matrix product of one
// training step as (rows, inner, columns) with how often it runs, so that the benchmark can (a)
// give FLOPs per target token and (b) measure the GEMM ceiling at the model's own shapes.
//
// Counted: matrix products (2 * m * k * n FLOPs each), forward; a training step is 3x forward
// (backward computes two products of the same size per product: the input's and the weight's
// gradient). Not counted: element-wise work (gates, softmax, dropout), the encoder->decoder bridge
// (once per sentence), embeddings (lookups). Lengths are real tokens (no padding): padded positions
// are work the model did not need, so they lower the utilisation the benchmark reports.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace attnmt {

struct GemmShape {
  std::string name;   // e.g. "decoder.output"
  bool batched = false;  // a bmm over the batch (attention scores/context) instead of one mm
  int64_t m = 0, k = 0, n = 0;  // [m, k] x [k, n] (per batch element when batched), lengths rounded
  double calls_per_batch = 0;   // products of this shape in one forward pass of one batch
  double exact_rows = 0;        // m with the mean lengths unrounded (what flops() counts)
  double flops() const { return 2.0 * exact_rows * static_cast<double>(k) * static_cast<double>(n); }
};

struct ModelArithmetic {
  std::vector<GemmShape> gemms;    // one forward pass of a batch of `batch` sentences
  double forward_flops_per_batch = 0;
  double train_flops_per_target_token = 0;  // 3 x forward / target tokens per batch
};

// batch: sentences; src_len / tgt_len: mean real tokens per sentence (the decoder's target length
// includes </s>; the encoder's source length too). Throws InputError for an attention type whose
// arithmetic is not modelled here (global dot / general / concat / scaled-dot and Bahdanau are).
ModelArithmetic model_arithmetic(const ModelConfig& model, int64_t target_vocab, int64_t batch, double src_len,
                                 double tgt_len);

}  // namespace attnmt
