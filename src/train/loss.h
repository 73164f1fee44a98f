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

// logits [B, T, V], target [B, T] with pad_id where there is no token.
LossResult sequence_loss(const torch::Tensor& logits, const torch::Tensor& target, int64_t pad_id,
                         double label_smoothing);

}  // namespace attnmt
