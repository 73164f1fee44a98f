#include "model/batch.h"

#include <algorithm>
#include <cmath>

#include "data/batcher.h"
#include "data/tokenizer.h"
#include "model/loss.h"

namespace attnmt {

BatchTensors make_batch(const std::vector<Example>& examples, const std::vector<size_t>& ids,
                        const torch::Device& device) {
  const int64_t B = static_cast<int64_t>(ids.size());
  int64_t S = 0, T = 0;
  for (auto i : ids) {
    S = std::max<int64_t>(S, examples[i].src.size() + 1);
    T = std::max<int64_t>(T, examples[i].tgt.size() + 1);
  }
  auto src = torch::full({B, S}, Tokenizer::kPad, torch::kLong);
  auto tin = torch::full({B, T}, Tokenizer::kPad, torch::kLong);
  auto tout = torch::full({B, T}, Tokenizer::kPad, torch::kLong);
  auto len = torch::empty({B}, torch::kLong);
  auto* s = src.data_ptr<int64_t>();
  auto* ti = tin.data_ptr<int64_t>();
  auto* to = tout.data_ptr<int64_t>();
  auto* l = len.data_ptr<int64_t>();
  BatchTensors b;
  for (int64_t r = 0; r < B; ++r) {
    const auto& ex = examples[ids[r]];
    for (size_t j = 0; j < ex.src.size(); ++j) s[r * S + j] = ex.src[j];
    s[r * S + ex.src.size()] = Tokenizer::kEos;
    l[r] = static_cast<int64_t>(ex.src.size()) + 1;
    ti[r * T] = Tokenizer::kBos;
    for (size_t j = 0; j < ex.tgt.size(); ++j) {
      ti[r * T + j + 1] = ex.tgt[j];
      to[r * T + j] = ex.tgt[j];
    }
    to[r * T + ex.tgt.size()] = Tokenizer::kEos;
    b.tgt_tokens += static_cast<int64_t>(ex.tgt.size()) + 1;
  }
  b.src = src.to(device);
  b.lengths = len.to(device);
  b.tgt_in = tin.to(device);
  b.tgt_out = tout.to(device);
  return b;
}

double NllSum::perplexity() const { return std::exp(nll / static_cast<double>(std::max<int64_t>(tokens, 1))); }

NllSum teacher_forced_nll(Seq2Seq& model, const std::vector<Example>& examples, int batch_size,
                          const torch::Device& device) {
  torch::NoGradGuard no_grad;
  NllSum sum;
  for (const auto& ids : make_batches(examples, batch_size, 0, /*shuffle=*/false, 0, 0)) {
    auto batch = make_batch(examples, ids, device);
    auto hidden = model->hidden_states(batch.src, batch.lengths, batch.tgt_in);
    auto loss = output_layer_loss(hidden, model->output_weight(), model->output_bias(), batch.tgt_out,
                                  Tokenizer::kPad, /*label_smoothing=*/0.0);
    sum.nll += loss.nll_sum;
    sum.tokens += loss.tokens;
  }
  return sum;
}

}  // namespace attnmt
