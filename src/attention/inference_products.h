// The two products every scored attention makes per decoder step, as plain loops for decoding.
//
//   scores[n, s]  = sum_d query[n, d] * keys[n / G, s, d]       (dot_scores, attention.h)
//   context[n, d] = sum_s weights[n, s] * values[n / G, s, d]   (weighted_sum, attention.h)
//
// G ("group") is the number of consecutive query rows that read one memory row: 1 when the
// memory has a row per query, K in beam search when the memory keeps one row per sentence for
// its K beams. Written with tensors, both are an element-wise product into a fresh [N, S, D]
// block and a sum over it, and in beam search that `aten::mul` took a large share of the
// operators' time (docs/performance.md, "Decoding's attention products as loops"). These loops
// read each memory row once per query row and write only the result.
//
// With the memory's mask ([N / G, S] bool, true = attended), a row reads its memory row only up to
// that row's last attended position: the scores after it are left 0 (the caller masks them with
// the same mask) and the weights after it are not read (they must be 0, as masked_softmax with
// that mask makes them). So the padding of a batch of mixed lengths costs nothing, and every
// number read is the same as without the mask: the results are identical. A row whose mask is all
// false reads everything, as without the mask.
//
// They run only where no gradient is wanted (decoding: InferenceMode or no tensor that requires
// one), on the CPU, in float; `inference_products_apply` says when. Elsewhere the callers keep
// the tensor expressions (training, other devices and types). The sums run in another order
// than LibTorch's reduction, so results differ in the last bits.
#pragma once
#include <torch/torch.h>

namespace attnmt {

// Whether the loops below take these operands (query or weights, and keys or values).
bool inference_products_apply(const torch::Tensor& rows, const torch::Tensor& memory);

// query [N, D], keys [N / group, S, D], mask undefined or [N / group, S] -> [N, S].
torch::Tensor inference_dot_scores(const torch::Tensor& query, const torch::Tensor& keys, int64_t group,
                                   const torch::Tensor& mask = {});

// weights [N, S], values [N / group, S, D], mask undefined or [N / group, S] -> [N, D].
torch::Tensor inference_weighted_sum(const torch::Tensor& weights, const torch::Tensor& values, int64_t group,
                                     const torch::Tensor& mask = {});

}  // namespace attnmt
