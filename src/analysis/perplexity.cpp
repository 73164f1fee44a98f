#include "analysis/perplexity.h"

#include "model/batch.h"

namespace attnmt {

double perplexity(LoadedModel& loaded, const ParallelText& text, int batch_size) {
  loaded.model->eval();
  torch::Device device = torch::kCPU;
  for (const auto& p : loaded.model->parameters()) {
    device = p.device();
    break;
  }
  const auto data = encode_dataset(text, loaded.tokenizers, /*max_length=*/0);
  return teacher_forced_nll(loaded.model, data.examples, batch_size, device).perplexity();
}

}  // namespace attnmt
