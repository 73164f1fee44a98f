// Masked cross-entropy with label smoothing (Szegedy et al., 2016): for each real target token,
//   loss = (1 - eps) * -log p(y) + eps * mean_v(-log p(v)),
// summed over tokens whose target is not padding.
#pragma once
#include <torch/torch.h>

namespace attnmt {

struct LossResult {
  torch::Tensor loss;  // scalar: smoothed loss summed over real tokens (for backward)
  double nll_sum = 0;  // sum of -log p(y) over real tokens (for perplexity)
  int64_t tokens = 0;  // real target tokens
  torch::Tensor sentence_nll;  // [B] sum of -log p(y) per sentence, detached
};

// The output layer and the loss in one pass, for training: logits = hidden W^T + b are formed only
// for the rows whose target is not padding, `chunk_rows` rows at a time, and never all at once.
// When hidden/weight/bias need gradients, each chunk's gradient of the loss with respect to its
// logits is known in the forward pass already (softmax minus the smoothed target), so the three
// gradients (hidden, W, b) are accumulated there too and backward only scales them by the incoming
// gradient. Same values as generate() followed by log_softmax and the sum above: the peak memory of a step drops from
// several [B, T, V] tensors to a few [chunk_rows, V] ones, and the loss touches each logit while it
// is in cache. bf16: the three matrix products run in bfloat16 (oneDNN), the softmax in fp32.
// 256 rows (8 MB of logits at V = 8000): a lower peak than 1,024 rows at the same speed (such a
// product still runs at full GEMM speed).
// hidden [B, T, H], weight [V, H], bias [V], target [B, T].
LossResult output_layer_loss(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                             const torch::Tensor& target, int64_t pad_id, double label_smoothing, bool bf16 = false,
                             int64_t chunk_rows = 256);

}  // namespace attnmt
