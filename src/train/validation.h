// What training measures on held-out text: the validation set's perplexity and (train.valid_metric:
// bleu) its translations' BLEU and chrF after every train.valid_every updates, and the test set
// (data.test) translated by best.pt at the end. The model is decoded as `attnmt translate` would
// decode it, with the config's decode.* settings.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/examples.h"
#include "data/corpus.h"
#include "data/tokenizer.h"
#include "decoding/translator.h"
#include "model/seq2seq.h"

namespace attnmt {

struct Lexicon;
class Seq2SeqStepModel;

struct ValidResult {
  double ppl = 0;
  double bleu = 0;  // train.valid_metric: bleu
  double chrf = 0;
  // Higher is better: the BLEU, or minus the perplexity (train.valid_metric).
  double score(const TrainConfig& train) const { return train.valid_metric == ValidMetric::bleu ? bleu : -ppl; }
};

struct TestResult {
  std::vector<std::string> hypotheses;
  double bleu = 0, chrf = 0;
  double seconds = 0;  // translating them
  int beam_size = 0;
};

class Validation {
 public:
  Validation(const Config& config, const Tokenizers& tokenizers, std::shared_ptr<const Lexicon> lexicon,
             ParallelText valid_text, Dataset valid, torch::Device device);

  // The model as search sees it (decode.precision, packed weights, the shortlist).
  std::unique_ptr<Seq2SeqStepModel> decoding_model(Seq2Seq& model) const;
  // In eval mode without gradients, then back to training mode. Validation BLEU is greedy or
  // train.valid_beam_size, never sampled: the best model is chosen by what search finds.
  ValidResult validate(Seq2Seq& model) const;
  // Translates `test` with the decode.* settings (the caller loads best.pt and sets eval mode).
  TestResult test(Seq2Seq& model, const ParallelText& test) const;

 private:
  // Each line's best translation (n_best 1) under `options`.
  std::vector<std::string> best_translations(StepModel& model, const std::vector<std::string>& lines,
                                             TranslateOptions options) const;
  const Config& config_;
  const Tokenizers& tokenizers_;
  std::shared_ptr<const Lexicon> lexicon_;
  ParallelText text_;
  Dataset data_;
  torch::Device device_;
};

}  // namespace attnmt
