// The RNN encoder-decoder: embeddings, encoder, attentional decoder, output layer.
// Training calls forward() / hidden_states() (teacher forcing over all steps; the output layer runs
// once over all steps as one product). Decoding runs a DecodingSeq2Seq (below): the same
// encoder and decoder one step at a time, on products made once in one execution mode
// (model/product.h). Search drives it through decoding/seq2seq_step_model.h.
#pragma once
#include <torch/torch.h>

#include <memory>

#include "config/config.h"
#include "model/decoder.h"
#include "model/encoder.h"
#include "model/product.h"

namespace attnmt {

struct VocabSizes {
  int64_t src = 0;
  int64_t tgt = 0;
  int64_t pad_id = 0;
  int64_t bos_id = 2;
  int64_t eos_id = 3;
};

// The encoder's, decoder's and output layer's products in one execution mode.
struct Seq2SeqProducts {
  EncoderProducts encoder;
  DecoderProducts decoder;
  std::unique_ptr<Product> output;  // [H] -> [V]
};

class DecodingSeq2Seq;

class Seq2SeqImpl : public torch::nn::Module {
 public:
  Seq2SeqImpl(const ModelConfig& config, const VocabSizes& vocab);

  struct Encoded {
    AttentionMemory memory;
    DecoderStepState state;
  };
  // src [B, S] int64 (padded with pad_id), lengths [B] int64.
  Encoded encode(const torch::Tensor& src, const torch::Tensor& lengths, const EncoderProducts& products);

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

  // One decoding step: prev [N] -> h~ [N, H] (the output layer's input); attention (if not null)
  // receives alpha_t [N, S].
  torch::Tensor step_hidden(const torch::Tensor& prev, const AttentionMemory& memory, DecoderStepState& state,
                            int64_t t, torch::Tensor* attention, const DecoderProducts& products);
  // Streaming a source a token at a time (decoding/streaming.h): whether the encoder's states of a
  // prefix are those of the whole sentence (encoder.h: EncoderImpl::streams) and the end of
  // sentence is read like any token (source_eos).
  bool streams_source() const { return encoder_->streams() && config_.source_eos; }
  // Reads tokens [B] (one per sentence): the encoder one step further, memory one row longer
  // (Attention::extend: that row's keys only).
  void read_source(const torch::Tensor& tokens, EncoderStream& stream, AttentionMemory& memory,
                   const EncoderProducts& products);
  // The decoder's initial state over the source read so far (as encode() gives for that prefix).
  DecoderStepState start_decoder(const EncoderStream& stream, const AttentionMemory& memory);
  // Whether a decoder state stays what it was as the source grows, for steps whose attention
  // stopped inside what was read: the initial state ignores the source (model.decoder.init: zero)
  // and the attention streams (attention/registry.h: hard, nothing right of its stop is read).
  bool decoder_keeps_across_reads() const;
  // Continuous batching (decoding/running_search.h): whether rows at different target steps, over
  // memories padded to one length, can share a decoder batch: no decoder self-attention (its past is
  // as long as the step) and an attention that allows it (Attention::joins_running_batches).
  bool joins_running_batches() const;
  // Whether prefix streams of a batch may read the memory whole, each row's steps masked to what its
  // stream has read (decoding/step_model.h, streams_prefix_batches): a source that streams, an
  // attention that weighs positions by the memory's mask alone (a global one, or a hard head) and
  // rows that need not be at one step.
  bool masks_source_prefixes() const;
  // Prefix-to-prefix training (config train.wait_k; STACL, Ma et al. 2019, 3.2): with k > 0,
  // hidden_states() lets target step t (1-based) attend to the first g(t) = min(k + t - 1, n) source
  // tokens of a source of n tokens (its end of sentence with the n-th), and starts the decoder from
  // the encoded first min(k, n) -- which is what decoding/streaming.h's wait-k prefix policy shows
  // each step. The variant must weigh positions by the memory's mask alone (a global attention);
  // an InputError names the key otherwise. 0: whole sentences.
  void set_wait_k(int64_t k);
  int64_t wait_k() const { return wait_k_; }
  // The products in `mode` on the current weights (stale once they change). The output layer's
  // product: in mode, except that bf16 without packing (kLibTorch) is the output layer's alone.
  Seq2SeqProducts products(ExecutionMode mode) const;

  Decoder& decoder() { return decoder_; }
  const VocabSizes& vocab() const { return vocab_; }
  int64_t parameter_count() const;
  // h~ [..., H] -> logits [..., V] (LibTorch's product)
  torch::Tensor generate(const torch::Tensor& hidden);

 private:
  ModelConfig config_;
  VocabSizes vocab_;
  torch::nn::Embedding src_embed_{nullptr}, tgt_embed_{nullptr};
  Encoder encoder_{nullptr};
  Decoder decoder_{nullptr};
  torch::Tensor out_weight_, out_bias_;  // output layer [V, H], [V]
  int64_t wait_k_ = 0;                   // set_wait_k
};
TORCH_MODULE(Seq2Seq);

// Seq2SeqImpl::set_wait_k's InputError for a model config that cannot train with wait-k `k` (train
// calls it before any data is read).
void check_wait_k_training(const ModelConfig& config, int64_t k);

// A Seq2Seq set up for decoding in one execution mode, chosen here once: it owns the products
// (packed weights) that every batch and step then uses. Thread-safe for concurrent batches.
// mode kPacked falls back to kLibTorch (fp32 recurrence) where the device is not a CPU or oneDNN
// has no kernel; bf16 applies on the CPU only; int8 (the CPU only) is always packed.
class DecodingSeq2Seq {
 public:
  DecodingSeq2Seq(Seq2Seq model, ExecutionMode mode);

  Seq2SeqImpl::Encoded encode(const torch::Tensor& src, const torch::Tensor& lengths);
  void read_source(const torch::Tensor& tokens, EncoderStream& stream, AttentionMemory& memory) {
    model_->read_source(tokens, stream, memory, products_.encoder);
  }
  torch::Tensor step_hidden(const torch::Tensor& prev, const AttentionMemory& memory, DecoderStepState& state,
                            int64_t t, torch::Tensor* attention);
  // h~ [N, H] -> logits [N, V].
  torch::Tensor logits(const torch::Tensor& hidden) const { return (*products_.output)(hidden); }
  // The output layer restricted to rows `index` [L] (int64, CPU): h~ [N, H] -> [N, L], in the same mode.
  std::shared_ptr<const Product> output_rows(const torch::Tensor& index) const;

  bool packed() const { return mode_.kind == ExecutionMode::kPacked; }
  ProductPrecision precision() const { return mode_.precision; }
  bool shares_memory_across_beams();
  const VocabSizes& vocab() const { return model_->vocab(); }
  torch::Device device() const;
  Seq2Seq& model() { return model_; }
  const Seq2Seq& model() const { return model_; }

 private:
  Seq2Seq model_;
  ExecutionMode mode_;
  Seq2SeqProducts products_;
};

}  // namespace attnmt
