#include "train/loss.h"

namespace attnmt {

LossResult sequence_loss(const torch::Tensor& logits, const torch::Tensor& target, int64_t pad_id,
                         double label_smoothing) {
  // With lse = logsumexp(logits): -log p(y) = lse - logit_y and mean_v(-log p(v)) = lse -
  // mean_v(logit_v), so the [B, T, V] log-softmax is never materialised (fewer full passes).
  auto mask = target.ne(pad_id);                                           // [B, T]
  auto lse = logits.logsumexp(-1);                                         // [B, T]
  auto nll = lse - logits.gather(-1, target.unsqueeze(-1)).squeeze(-1);    // [B, T]
  nll = nll.masked_fill(mask.logical_not(), 0.0);
  LossResult r;
  auto nll_sum = nll.sum();
  if (label_smoothing > 0) {
    auto smooth = (lse - logits.mean(-1)).masked_fill(mask.logical_not(), 0.0);  // [B, T]
    r.loss = (1.0 - label_smoothing) * nll_sum + label_smoothing * smooth.sum();
  } else {
    r.loss = nll_sum;
  }
  r.nll_sum = nll_sum.item<double>();
  r.sentence_nll = nll.sum(1).detach();
  r.tokens = mask.sum().item<int64_t>();
  return r;
}

}  // namespace attnmt
