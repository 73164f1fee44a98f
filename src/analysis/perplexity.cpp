#include "analysis/perplexity.h"

#include <algorithm>
#include <cmath>

#include "data/batcher.h"
#include "train/loss.h"

namespace attnmt {

double perplexity(LoadedModel& loaded, const ParallelText& text, int batch_size) {
  torch::InferenceMode inference;
  loaded.model->eval();
  torch::Device device = torch::kCPU;
  for (const auto& p : loaded.model->parameters()) {
    device = p.device();
    break;
  }
  const auto data = encode_dataset(text, loaded.tokenizers, /*max_length=*/0);
  double nll = 0;
  int64_t tokens = 0;
  for (const auto& ids : make_batches(data.examples, batch_size, 0, /*shuffle=*/false, 0, 0)) {
    const int64_t B = static_cast<int64_t>(ids.size());
    int64_t S = 0, T = 0;
    for (auto i : ids) {
      S = std::max<int64_t>(S, data.examples[i].src.size() + 1);
      T = std::max<int64_t>(T, data.examples[i].tgt.size() + 1);
    }
    auto src = torch::full({B, S}, Tokenizer::kPad, torch::kLong);
    auto tgt_in = torch::full({B, T}, Tokenizer::kPad, torch::kLong);
    auto tgt_out = torch::full({B, T}, Tokenizer::kPad, torch::kLong);
    auto lengths = torch::empty({B}, torch::kLong);
    for (int64_t b = 0; b < B; ++b) {
      const auto& ex = data.examples[ids[b]];
      auto* s = src.data_ptr<int64_t>() + b * S;
      auto* ti = tgt_in.data_ptr<int64_t>() + b * T;
      auto* to = tgt_out.data_ptr<int64_t>() + b * T;
      std::copy(ex.src.begin(), ex.src.end(), s);
      s[ex.src.size()] = Tokenizer::kEos;
      lengths[b] = static_cast<int64_t>(ex.src.size()) + 1;
      ti[0] = Tokenizer::kBos;
      std::copy(ex.tgt.begin(), ex.tgt.end(), ti + 1);
      std::copy(ex.tgt.begin(), ex.tgt.end(), to);
      to[ex.tgt.size()] = Tokenizer::kEos;
    }
    auto logits = loaded.model->forward(src.to(device), lengths.to(device), tgt_in.to(device));
    auto loss = sequence_loss(logits, tgt_out.to(device), Tokenizer::kPad, /*label_smoothing=*/0.0);
    nll += loss.nll_sum;
    tokens += loss.tokens;
  }
  return std::exp(nll / std::max<int64_t>(tokens, 1));
}

}  // namespace attnmt
