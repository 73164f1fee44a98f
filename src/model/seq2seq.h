// The RNN encoder-decoder: embeddings, encoder, attentional decoder, output layer.
// Training calls forward() (teacher forcing over all steps; the output layer runs once over all
// steps as one GEMM). Search drives the same decoder through Seq2SeqStepModel, one step at a time.
#pragma once
#include <torch/torch.h>

#include <atomic>
#include <memory>

#include "config/config.h"
#include "decoding/step_model.h"
#include "model/decoder.h"
#include "model/encoder.h"

namespace attnmt {

struct Lexicon;

struct VocabSizes {
  int64_t src = 0;
  int64_t tgt = 0;
  int64_t pad_id = 0;
  int64_t bos_id = 2;
  int64_t eos_id = 3;
};

// The encoder's, decoder step's and output layer's weights packed for decoding
// (runtime/packed_linear.h).
struct PackedSeq2Seq {
  PackedEncoder encoder;
  PackedDecoder decoder;
  PackedLinear output;
};

class Seq2SeqImpl : public torch::nn::Module {
 public:
  Seq2SeqImpl(const ModelConfig& config, const VocabSizes& vocab);

  struct Encoded {
    AttentionMemory memory;
    DecoderStepState state;
  };
  // src [B, S] int64 (padded with pad_id), lengths [B] int64. packed: pack()'s weights (decoding).
  Encoded encode(const torch::Tensor& src, const torch::Tensor& lengths, const PackedSeq2Seq* packed = nullptr);

  // Teacher forcing. tgt_in [B, T] = bos y_1 .. y_{T-1}. Returns logits [B, T, V];
  // attention (if not null) receives [B, T, S].
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& lengths,
                        const torch::Tensor& tgt_in, torch::Tensor* attention = nullptr);
  // forward() without the output layer: the attentional states h~ [B, T, H] (training feeds them
  // to output_layer_loss() with output_weight() / output_bias()).
  torch::Tensor hidden_states(const torch::Tensor& src, const torch::Tensor& lengths, const torch::Tensor& tgt_in,
                              torch::Tensor* attention = nullptr);
  const torch::Tensor& output_weight() const { return out_weight_; }
  const torch::Tensor& output_bias() const { return out_bias_; }

  // One decoding step: prev [N] -> logits [N, V].
  torch::Tensor step(const torch::Tensor& prev, const AttentionMemory& memory, DecoderStepState& state,
                     int64_t t, torch::Tensor* attention);
  // step() without the output layer: h~ [N, H]. packed: pack()'s weights for the products.
  torch::Tensor step_hidden(const torch::Tensor& prev, const AttentionMemory& memory, DecoderStepState& state,
                            int64_t t, torch::Tensor* attention, const PackedSeq2Seq* packed = nullptr);
  // The current encoder, decoder and output weights, packed for decoding (bf16: products in bfloat16).
  PackedSeq2Seq pack(bool bf16) const;

  Decoder& decoder() { return decoder_; }
  const VocabSizes& vocab() const { return vocab_; }
  int64_t parameter_count() const;
  // h~ [..., H] -> logits [..., V]
  torch::Tensor generate(const torch::Tensor& hidden);

 private:
  ModelConfig config_;
  VocabSizes vocab_;
  torch::nn::Embedding src_embed_{nullptr}, tgt_embed_{nullptr};
  Encoder encoder_{nullptr};
  Decoder decoder_{nullptr};
  torch::Tensor out_weight_, out_bias_;  // output layer [V, H], [V]
};
TORCH_MODULE(Seq2Seq);

// Adapts a Seq2Seq to the search interface (decoding/step_model.h).
class Seq2SeqStepModel : public StepModel {
 public:
  // The model's weights as they are now serve every step (build a new one after they change).
  // packed_weights (decode.packed_weights; CPU with oneDNN only, else ignored): an LSTM encoder's,
  // the decoder step's and the output layer's products run on weights packed here
  // (runtime/packed_linear.h).
  // precision (decode.precision): fp32, or bf16 = those products in bfloat16 (fp32 accumulation);
  // without packed weights, bf16 is the output layer's product alone, from a bfloat16 copy of its
  // weight (LibTorch, oneDNN). The softmax is fp32 either way. CPU only (else fp32).
  explicit Seq2SeqStepModel(Seq2Seq model, const std::string& precision = "fp32", bool packed_weights = true);
  // Whether the products run on packed weights.
  bool packed() const { return packed_ != nullptr; }
  // decode.shortlist: from now on, each batch's output layer covers only
  // lexicon->shortlist(its source ids, first, best, {eos, unk}) (data/lexicon.h), and the steps'
  // logits say which tokens their columns are (StepResult::vocabulary). InputError when the lexicon
  // was built for other vocabulary sizes.
  void use_shortlist(std::shared_ptr<const Lexicon> lexicon, int first, int best);
  // The mean shortlist size over the batches started so far (0 without a shortlist).
  double mean_shortlist_size() const;
  std::unique_ptr<SearchState> start(const torch::Tensor& src, const torch::Tensor& lengths) override;
  StepResult step(const torch::Tensor& prev_tokens, SearchState& state, bool want_attention) override;
  int64_t bos_id() const override { return model_->vocab().bos_id; }
  int64_t eos_id() const override { return model_->vocab().eos_id; }
  torch::Device device() const override;

 private:
  Seq2Seq model_;
  std::unique_ptr<PackedSeq2Seq> packed_;  // when decoding on packed weights
  torch::Tensor out_weight_bf16_;          // [V, H] for a bfloat16 output layer without them
  bool bf16_ = false;
  std::shared_ptr<const Lexicon> lexicon_;  // decode.shortlist
  int shortlist_first_ = 0, shortlist_best_ = 0;
  std::atomic<int64_t> shortlist_rows_{0}, shortlist_batches_{0};  // batches start in several threads
};

}  // namespace attnmt
