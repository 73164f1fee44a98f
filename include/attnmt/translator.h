// attnmt::Translator: a trained attnmt model file, opened once, translating lists of sentences as
// `attnmt translate` does (the same tokenization, search, batching and settings, so the same
// output). docs/cpp.md describes the API, its threading and what stays stable between versions.
//
//   attnmt::Translator tr("model.pt");
//   attnmt::DecodeOptions o;
//   o.beam_size = 5;
//   o.n_best = 2;
//   for (const auto& hyp : tr.translate({"Ein Hund läuft."}, o)[0]) std::cout << hyp.score << ' ' << hyp.text << '\n';
//
// This header includes only the standard library: the model, LibTorch and SentencePiece are behind
// the library's interface (pimpl). Every failure is an attnmt::Error (attnmt/error.h) whose
// message is the line `attnmt` prints for the same mistake.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <attnmt/error.h>
#include <attnmt/export.h>

namespace attnmt {

// How a model is opened: the settings of `attnmt translate` that hold for every call.
struct TranslatorOptions {
  // Intra-op threads (0 = one per core). LibTorch's thread pool is one per process, so this is a
  // process-wide setting: the last Translator opened sets it.
  int threads = 0;
  // fp32 | bf16 | int8 | auto (decode.precision); empty: the model's.
  std::string precision;
  // cpu | cuda | cuda:N; empty: the model's.
  std::string device;
  // When the model path is a training save dir: one of its checkpoints instead of best.pt.
  std::string checkpoint;
  // Config keys as `attnmt translate --set key=value` takes them, in order ({"decode.shortlist",
  // "true"}, {"decode.beam_size", "10"}): any key a loaded model may change (`attnmt config
  // --keys`). Values are read as YAML scalars, checked as the program checks them.
  std::vector<std::pair<std::string, std::string>> settings;
};

// One call's decode options: each set field overrides the model's decode.<name> key for this call
// (docs/config.md describes them; unset fields keep the model's value). They are the keys of the
// program's key table that may change per call, and are checked as `--set decode.<name>=...` is,
// with the same messages.
struct DecodeOptions {
  std::optional<int> beam_size;             // 1 = greedy search
  std::optional<int> n_best;                // hypotheses per sentence (<= beam_size; samples when sampling)
  std::optional<double> length_penalty;     // GNMT alpha (0 = none)
  std::optional<double> coverage_penalty;   // GNMT beta (0 = off)
  std::optional<double> max_length_ratio;   // at most ratio x source length + 5 tokens
  std::optional<int> batch_size;            // sentences decoded together
  std::optional<int> min_length;            // no end of sentence before this many tokens (0 = off)
  std::optional<int> max_length;            // at most this many tokens (0 = no cap)
  std::optional<int> no_repeat_ngram_size;  // no n-gram of this size twice (0 = off)
  std::optional<bool> sampling;             // random sampling instead of search
  std::optional<double> temperature;        // sampling: softmax(logits / temperature)
  std::optional<int> top_k;                 // sampling: from the k likeliest (0 = all)
  std::optional<double> top_p;              // sampling: nucleus
  std::optional<double> epsilon;            // sampling: no token below this probability (0 = off)
  std::optional<std::uint64_t> seed;        // sampling: reproducible per seed
  std::optional<std::string> mbr;           // none | bleu | chrf: minimum Bayes risk reordering
  std::optional<int> mbr_candidates;        // hypotheses MBR compares (0 = the beam)
  std::optional<std::string> search_rules;  // attnmt | opennmt | opennmt3 | joeynmt | fairseq
  std::optional<bool> ban_unk;              // the toolkits' rules: never choose the unknown word
  std::optional<double> unk_penalty;        // fairseq's rules: subtracted from the unknown word's score
  std::optional<double> word_penalty;       // Marian's rules: subtracted per target token before normalising

  // Fill TranslationHypothesis::attention.
  bool return_attention = false;
};

// What a sentence may ask of its translation besides its source; each list empty, or one entry
// per input sentence.
struct TranslationGuides {
  std::vector<std::string> prefixes;                  // target text the translation starts with ("" = none)
  std::vector<std::vector<std::string>> constraints;  // target phrases every translation must contain
};

struct TranslationHypothesis {
  std::string text;                          // the detokenized translation
  double score = 0;                          // the search's score: log P / length penalty (+ coverage penalty)
  double log_prob = 0;                       // log P(translation | source), end of sentence included
  std::vector<std::string> tokens;           // target subwords, "</s>" last when finished
  std::vector<std::string> source_tokens;    // source subwords, "</s>" last
  bool finished = true;                      // false when cut at the maximum length
  bool constraints_met = true;               // holds every constraint of its sentence
  std::vector<std::vector<float>> attention;  // [tokens][source_tokens]; empty unless return_attention
};

class ATTNMT_API Translator {
 public:
  // `model`: a model file (.pt) or a training save dir (its best.pt). InputError for a path with
  // no model, a file that is not one (or is of a newer format), or a bad option.
  explicit Translator(const std::string& model, const TranslatorOptions& options = {});
  ~Translator();
  Translator(Translator&&) noexcept;
  Translator& operator=(Translator&&) noexcept;
  Translator(const Translator&) = delete;
  Translator& operator=(const Translator&) = delete;

  // One list of hypotheses per input sentence (n_best long, best first), in input order. An empty
  // sentence gives one empty hypothesis. Safe to call from several threads at once on one
  // Translator (the model's weights are shared, read-only); each call decodes its own batches.
  std::vector<std::vector<TranslationHypothesis>> translate(const std::vector<std::string>& sentences,
                                                            const DecodeOptions& options = {},
                                                            const TranslationGuides& guides = {}) const;

  // The model file read (a save dir's best.pt, when given the dir).
  const std::string& model_path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnmt
