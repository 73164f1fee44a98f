// Adapts a Seq2Seq to the search interface (step_model.h): its decoding form (model/seq2seq.h's
// DecodingSeq2Seq, products in one execution mode) plus the vocabulary shortlist.
#pragma once
#include <torch/torch.h>

#include <atomic>
#include <memory>
#include <string>

#include "config/config.h"
#include "decoding/step_model.h"
#include "model/seq2seq.h"

namespace attnmt {

struct Lexicon;

class Seq2SeqStepModel : public StepModel {
 public:
  // The model's weights as they are now serve every step (build a new one after they change).
  // packed_weights (decode.packed_weights; CPU with oneDNN only, else ignored): the encoder's (LSTM),
  // the decoder step's and the output layer's products run on weights packed here
  // (runtime/packed_linear.h).
  // precision (decode.precision): fp32, or bf16 = those products in bfloat16 (fp32 accumulation);
  // without packed weights, bf16 is the output layer's product alone, from a bfloat16 copy of its
  // weight. The softmax is fp32 either way. CPU only (else fp32), and only a CPU with native bf16
  // products (util/cpu_kernels.h): elsewhere fp32, with a warning once per process. int8: those
  // products on int8 weights (runtime/int8_gemm.h), packed whatever packed_weights says; the CPU
  // only (InputError elsewhere).
  explicit Seq2SeqStepModel(Seq2Seq model, DecodePrecision precision = DecodePrecision::fp32, bool packed_weights = true);
  // Whether the products run on packed weights.
  bool packed() const { return model_.packed(); }
  // What the products run in: "fp32", "bf16" or "int8" (after the CPU's fallbacks and "auto").
  std::string precision() const;
  // The kernel they run on: "AVX512-VNNI" (int8), "AVX512-BF16 (oneDNN)", "oneDNN fp32 (packed)", ...
  std::string kernel() const;
  // decode.shortlist: from now on, each batch's output layer covers only
  // lexicon->shortlist(its source ids, first, best, {eos, unk}) (data/lexicon.h), and the steps'
  // logits say which tokens their columns are (StepResult::vocabulary). InputError when there is no
  // lexicon or it was built for other vocabulary sizes.
  void use_shortlist(std::shared_ptr<const Lexicon> lexicon, int first, int best);
  // The mean shortlist size over the batches started so far (0 without a shortlist).
  double mean_shortlist_size() const;
  std::unique_ptr<SearchState> start(const torch::Tensor& src, const torch::Tensor& lengths) override;
  StepResult step(const torch::Tensor& prev_tokens, SearchState& state, bool want_attention) override;
  int64_t bos_id() const override { return model_.vocab().bos_id; }
  int64_t eos_id() const override { return model_.vocab().eos_id; }
  int64_t pad_id() const override { return model_.vocab().pad_id; }
  torch::Device device() const override { return model_.device(); }
  // Unidirectional models read a token at a time (Seq2SeqImpl::streams_source), without a shortlist
  // (whose rows come from the whole source).
  bool streams_source() const override;
  std::unique_ptr<SearchState> start_stream() override;
  void read(SearchState& state, int64_t token) override;
  void restart_decoder(SearchState& state) override;
  // model.decoder.init zero and an attention that streams (registry.h: hard, stops in what was read).
  bool keeps_decoder_across_reads() const override;
  void advance(const torch::Tensor& prev_tokens, SearchState& state) override;
  // Without a shortlist, a model whose source streams, whose attention weighs the memory by its
  // mask alone and whose rows need not be at one step (Seq2SeqImpl::masks_source_prefixes).
  bool streams_prefix_batches() const override;
  std::unique_ptr<SearchState> start_prefixes(const torch::Tensor& src, const torch::Tensor& lengths,
                                              const std::vector<int64_t>& visible) override;
  void limit_source(SearchState& state, const std::vector<int64_t>& visible) override;
  void take_back(SearchState& state, const SearchState& before, const std::vector<int64_t>& rows) override;
  // Without a shortlist (each batch's output layer is its own) and on a model whose rows need not
  // be at one step (Seq2SeqImpl::joins_running_batches).
  bool merges_states() const override;
  void merge(SearchState& into, SearchState& from) override;

 private:
  DecodingSeq2Seq model_;
  std::shared_ptr<const Lexicon> lexicon_;  // decode.shortlist
  int shortlist_first_ = 0, shortlist_best_ = 0;
  std::atomic<int64_t> shortlist_rows_{0}, shortlist_batches_{0};  // batches start in several threads
};

// decode.precision: auto: what it stands for on this CPU (capped by ATTNMT_CPU_ISA) or off it:
// "int8" wherever int8 has a kernel of its own (AVX2 and up), else "bf16" with native bf16 products,
// else "fp32"; "fp32" off the CPU.
DecodePrecision auto_precision(bool on_cpu);

// The step model a decoding command builds from a trained model's decode.* settings (precision,
// packed_weights, and the shortlist from `lexicon` when decode.shortlist is on).
std::unique_ptr<Seq2SeqStepModel> make_step_model(Seq2Seq model, const DecodeConfig& decode,
                                                  std::shared_ptr<const Lexicon> lexicon);

}  // namespace attnmt
