#include "train/validation.h"

#include <chrono>

#include "decoding/seq2seq_step_model.h"
#include "decoding/translator.h"
#include "eval/metrics.h"
#include "model/batch.h"

namespace attnmt {

Validation::Validation(const Config& config, const Tokenizers& tokenizers, std::shared_ptr<const Lexicon> lexicon,
                       ParallelText valid_text, Dataset valid, torch::Device device)
    : config_(config),
      tokenizers_(tokenizers),
      lexicon_(std::move(lexicon)),
      text_(std::move(valid_text)),
      data_(std::move(valid)),
      device_(device) {}

std::unique_ptr<Seq2SeqStepModel> Validation::decoding_model(Seq2Seq& model) const {
  const auto& d = config_.decode;
  auto m = std::make_unique<Seq2SeqStepModel>(model, d.precision, d.packed_weights);
  if (lexicon_) m->use_shortlist(lexicon_, d.shortlist_first, d.shortlist_best);
  return m;
}

std::vector<std::string> Validation::best_translations(StepModel& model, const std::vector<std::string>& lines,
                                                       TranslateOptions options) const {
  options.search.n_best = 1;
  std::vector<std::string> best;
  best.reserve(lines.size());
  for (auto& t : translate_lines(model, tokenizers_, lines, options)) best.push_back(std::move(t.front().text));
  return best;
}

ValidResult Validation::validate(Seq2Seq& model) const {
  torch::NoGradGuard no_grad;
  model->eval();
  ValidResult r;
  r.ppl = teacher_forced_nll(model, data_.examples, config_.train.batch_size, device_).perplexity();
  if (config_.train.valid_metric == ValidMetric::bleu) {
    TranslateOptions options = translate_options(config_.decode);
    options.search.beam_size = config_.train.valid_beam_size;
    options.search.sampling = false;
    options.progress_label = "[valid]";
    const auto hyps = best_translations(*decoding_model(model), text_.src, options);
    r.bleu = corpus_bleu(hyps, text_.tgt).score;
    r.chrf = corpus_chrf(hyps, text_.tgt).score;
  }
  model->train();
  return r;
}

TestResult Validation::test(Seq2Seq& model, const ParallelText& test) const {
  auto step_model = decoding_model(model);
  TranslateOptions options = translate_options(config_.decode);
  options.progress_label = "[test]";
  const auto start = std::chrono::steady_clock::now();
  TestResult r;
  r.hypotheses = best_translations(*step_model, test.src, options);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.bleu = corpus_bleu(r.hypotheses, test.tgt).score;
  r.chrf = corpus_chrf(r.hypotheses, test.tgt).score;
  r.beam_size = options.search.beam_size;
  return r;
}

}  // namespace attnmt
