#include "model/seq2seq.h"

#include "attention/registry.h"

#include "runtime/packed_linear.h"
#include "runtime/random.h"
#include "util/error.h"

namespace attnmt {

namespace F = torch::nn::functional;

Seq2SeqImpl::Seq2SeqImpl(const ModelConfig& config, const VocabSizes& vocab)
    : config_(config), vocab_(vocab) {
  const int64_t E = config.embedding_size;
  const int64_t E_src = config.encoder.embedding_size > 0 ? config.encoder.embedding_size : E;
  if (config.share_embeddings && E_src != E) {
    throw InputError("model.share_embeddings needs model.encoder.embedding_size (" + std::to_string(E_src) +
                     ") == model.embedding_size (" + std::to_string(E) + ")");
  }
  if (config.share_embeddings && vocab.src != vocab.tgt) {
    throw InputError("model.share_embeddings needs one vocabulary for both sides, got " + std::to_string(vocab.src) +
                     " source and " + std::to_string(vocab.tgt) + " target pieces");
  }
  src_embed_ = register_module(
      "src_embed", torch::nn::Embedding(torch::nn::EmbeddingOptions(vocab.src, E_src).padding_idx(vocab.pad_id)));
  // Shared, the decoder reads the encoder's module itself, registered once: one parameter (one Adam
  // state, one entry in the model file) trained through both uses. The target module is built and
  // drawn all the same, so that every module after it starts as in the unshared model with the
  // same seed (a paired comparison), and then dropped.
  torch::nn::Embedding tgt(torch::nn::EmbeddingOptions(vocab.tgt, E).padding_idx(vocab.pad_id));
  tgt_embed_ = config.share_embeddings ? src_embed_ : register_module("tgt_embed", tgt);
  {
    // N(0, 1/E) instead of N(0, 1): keeps the first RNN inputs at a sensible scale.
    torch::NoGradGuard no_grad;
    for (auto* embed : {&src_embed_, &tgt}) {
      (*embed)->weight.normal_(0, 1.0 / std::sqrt(static_cast<double>((*embed)->weight.size(1))));
      (*embed)->weight[vocab.pad_id].zero_();
    }
  }
  const bool layer_states = config.decoder.init == DecoderInit::encoder ||
                            config.decoder.init == DecoderInit::encoder_relu_bridge ||
                            config.decoder.init == DecoderInit::encoder_linear;
  encoder_ = register_module("encoder", Encoder(config.encoder, E_src, layer_states));
  decoder_ = register_module("decoder", Decoder(config, encoder_->output_size()));
  const int64_t H = decoder_->output_size();  // h~'s size
  if (config.tie_embeddings && H != E) {
    throw InputError("model.tie_embeddings needs model.embedding_size (" + std::to_string(E) + ") == " +
                     (config.decoder.combine_size > 0 ? "model.decoder.combine_size (" : "model.decoder.hidden_size (") +
                     std::to_string(H) + ")");
  }
  // The output layer: logits = h~ W^T + b. Tied: W is the target embedding matrix itself (one
  // tensor, registered once, trained through both uses).
  const double k = 1.0 / std::sqrt(static_cast<double>(H));
  out_weight_ = config.tie_embeddings
                    ? tgt_embed_->weight
                    : register_parameter("out_weight", torch::empty({vocab.tgt, H}).uniform_(-k, k));
  out_bias_ = register_parameter("out_bias", torch::zeros({vocab.tgt}));
}

torch::Tensor Seq2SeqImpl::generate(const torch::Tensor& hidden) {
  return F::linear(hidden, out_weight_, out_bias_);
}

int64_t Seq2SeqImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void Seq2SeqImpl::read_source(const torch::Tensor& tokens, EncoderStream& stream, AttentionMemory& memory,
                              const EncoderProducts& products) {
  auto row = encoder_->step(src_embed_(tokens), stream, products);  // [B, H]
  memory = decoder_->attention().extend(memory, row);
}

bool Seq2SeqImpl::decoder_keeps_across_reads() const {
  return config_.decoder.init == DecoderInit::zero && attention_streams(config_.attention);
}

bool Seq2SeqImpl::joins_running_batches() const {
  return !config_.decoder.self_attention && decoder_->attention().joins_running_batches();
}

bool Seq2SeqImpl::masks_source_prefixes() const {
  // A global attention weighs positions by the mask alone; a hard head looks for its stop among the
  // positions the mask lets it see, and its soft weights (MILk, MoChA) reach no further than the stop.
  return streams_source() && joins_running_batches() &&
         (global_score_kind(config_.attention.type).has_value() || attention_streams(config_.attention));
}

void check_wait_k_training(const ModelConfig& config, int64_t k) {
  if (k > 0 && !config.source_eos) {
    throw InputError("train.wait_k: needs model.source_eos: true (a stream reads the end of sentence as a token)");
  }
  if (k > 0 && !global_score_kind(config.attention.type)) {
    std::string global;
    for (const auto& name : attention_names()) {
      if (global_score_kind(name)) global += (global.empty() ? "" : ", ") + name;
    }
    throw InputError("train.wait_k: needs an attention that weighs every source position by the memory's mask (" +
                     global + "), got model.attention.type " + config.attention.type);
  }
}

void Seq2SeqImpl::set_wait_k(int64_t k) {
  check_wait_k_training(config_, k);
  wait_k_ = k;
}

DecoderStepState Seq2SeqImpl::start_decoder(const EncoderStream& stream, const AttentionMemory& memory) {
  return decoder_->initial_state(encoder_->stream_output(stream), memory);
}

Seq2SeqImpl::Encoded Seq2SeqImpl::encode(const torch::Tensor& src, const torch::Tensor& lengths,
                                          const EncoderProducts& products) {
  auto embedded = stream_dropout(word_dropout(src_embed_(src), config_.encoder.word_dropout, is_training()),
                                 config_.encoder.dropout, is_training());  // [B, S, E]
  // Without source_eos the encoder stops before the </s> every source ends with (translator.h).
  const auto read = config_.source_eos ? lengths : (lengths - 1).clamp_min(1);
  auto encoded = encoder_->forward(embedded, read, products);
  Encoded out;
  out.memory = decoder_->attention().prepare(encoded.states, encoded.mask);
  out.state = decoder_->initial_state(encoded, out.memory);
  return out;
}

torch::Tensor Seq2SeqImpl::forward(const torch::Tensor& src, const torch::Tensor& lengths,
                                   const torch::Tensor& tgt_in, torch::Tensor* attention) {
  return generate(hidden_states(src, lengths, tgt_in, attention));  // [B, T, V]: one GEMM for all steps
}

torch::Tensor Seq2SeqImpl::hidden_states(const torch::Tensor& src, const torch::Tensor& lengths,
                                         const torch::Tensor& tgt_in, torch::Tensor* attention) {
  auto enc = encode(src, lengths, EncoderProducts());
  // Prefix-to-prefix (set_wait_k): n = lengths - 1 source tokens before the end of sentence;
  // g(t) = min(k + t - 1, n) of them read at step t, the end of sentence once all are.
  torch::Tensor n, positions;
  if (wait_k_ > 0) {
    n = lengths - 1;
    positions = torch::arange(src.size(1), lengths.options()).unsqueeze(0);  // [1, S]
    if (config_.decoder.init != DecoderInit::zero) {
      // The decoder's initial state from the first min(k, n) tokens (all of them and the end of
      // sentence when k >= n), as the stream starts it.
      const auto read = torch::where(n > wait_k_, torch::full_like(n, wait_k_), lengths);
      const int64_t longest = read.max().item<int64_t>();
      enc.state = encode(src.slice(1, 0, longest), read, EncoderProducts()).state;
    }
  }
  // Under the schedule, the rows step t may attend to: [B, S].
  auto visible = [&](int64_t t) {
    const auto g = n.clamp_max(wait_k_ + t);             // tokens read at step t (0-based)
    const auto rows = torch::where(g >= n, lengths, g);  // the end of sentence once all are
    return enc.memory.mask & (positions < rows.unsqueeze(1));
  };
  const auto products = decoder_->training_products();
  // Time-major so that step t reads a contiguous [B, *] slice.
  auto embedded = stream_dropout(word_dropout(tgt_embed_(tgt_in.t()), config_.decoder.word_dropout, is_training()),
                                 config_.decoder.dropout, is_training());  // [T, B, E]
  // One GEMM for all steps; unbind (not gates[t]) so that backward is one stack, not T
  // full-size zero tensors.
  auto gates = decoder_->project_embeddings(embedded, products).unbind(0);  // T x [B, G]
  auto embedded_t = embedded.unbind(0);                                     // T x [B, E]
  const int64_t T = tgt_in.size(1);
  std::vector<torch::Tensor> outputs, weights;
  outputs.reserve(T);
  AttentionMemory seen = enc.memory;  // wait-k: the memory with step t's mask
  for (int64_t t = 0; t < T; ++t) {
    torch::Tensor w;
    if (wait_k_ > 0) seen.mask = visible(t);
    outputs.push_back(decoder_->step(gates[t], embedded_t[t], wait_k_ > 0 ? seen : enc.memory, enc.state, t,
                                     attention ? &w : nullptr, products));
    if (attention) weights.push_back(w);
  }
  if (attention) *attention = torch::stack(weights, 1);  // [B, T, S]
  return torch::stack(outputs, 1);                        // [B, T, H]
}

torch::Tensor Seq2SeqImpl::step_hidden(const torch::Tensor& prev, const AttentionMemory& memory,
                                       DecoderStepState& state, int64_t t, torch::Tensor* attention,
                                       const DecoderProducts& products) {
  auto embedded = tgt_embed_(prev);  // [N, E]
  auto gates = decoder_->project_embeddings(embedded, products);
  return decoder_->step(gates, embedded, memory, state, t, attention, products);
}

Seq2SeqProducts Seq2SeqImpl::products(ExecutionMode mode) const {
  // Without packed weights, bf16 is the output layer's alone.
  const auto recurrence = mode.kind == ExecutionMode::kPacked ? mode : ExecutionMode::libtorch();
  return {encoder_->products(recurrence), decoder_->products(recurrence), make_product(out_weight_, out_bias_, mode)};
}

DecodingSeq2Seq::DecodingSeq2Seq(Seq2Seq model, ExecutionMode mode) : model_(std::move(model)) {
  const bool cpu = device().is_cpu();
  if (mode.precision == ProductPrecision::kInt8) {
    // attnmt's own kernel (runtime/int8_gemm.h): packed whatever the build's oneDNN; the caller
    // refuses int8 off the CPU (decoding/seq2seq_step_model.cpp).
    TORCH_CHECK(cpu, "decode.precision: int8 runs on the CPU only");
    mode_ = ExecutionMode::packed(ProductPrecision::kInt8);
    products_ = model_->products(mode_);
    return;
  }
  const auto precision = mode.bf16() && cpu ? ProductPrecision::kBf16 : ProductPrecision::kFp32;
  mode_ = {ExecutionMode::kLibTorch, precision};
  if (mode.kind == ExecutionMode::kPacked && cpu && packed_linear_available()) {
    products_ = model_->products(ExecutionMode::packed(precision));
    if (is_packed(*products_.output)) {  // else no oneDNN kernel for this CPU and type
      mode_ = ExecutionMode::packed(precision);
      return;
    }
  }
  products_ = model_->products(mode_);
}

Seq2SeqImpl::Encoded DecodingSeq2Seq::encode(const torch::Tensor& src, const torch::Tensor& lengths) {
  return model_->encode(src, lengths, products_.encoder);
}

torch::Tensor DecodingSeq2Seq::step_hidden(const torch::Tensor& prev, const AttentionMemory& memory,
                                           DecoderStepState& state, int64_t t, torch::Tensor* attention) {
  return model_->step_hidden(prev, memory, state, t, attention, products_.decoder);
}

std::shared_ptr<const Product> DecodingSeq2Seq::output_rows(const torch::Tensor& index) const {
  torch::NoGradGuard no_grad;
  const auto rows = index.to(device());
  auto weight = model_->output_weight().detach().index_select(0, rows).contiguous();
  auto bias = model_->output_bias().detach().index_select(0, rows).contiguous();
  return make_product(weight, bias, mode_);
}

bool DecodingSeq2Seq::shares_memory_across_beams() {
  return model_->decoder()->attention().shares_memory_across_beams();
}

torch::Device DecodingSeq2Seq::device() const {
  for (const auto& p : model_->parameters()) return p.device();
  return torch::kCPU;
}

}  // namespace attnmt
