#include "model/seq2seq.h"
#include "model/random.h"
#include "data/lexicon.h"
#include "data/tokenizer.h"

#include "util/error.h"

namespace attnmt {

namespace F = torch::nn::functional;

Seq2SeqImpl::Seq2SeqImpl(const ModelConfig& config, const VocabSizes& vocab)
    : config_(config), vocab_(vocab) {
  const int64_t E = config.embedding_size;
  src_embed_ = register_module(
      "src_embed", torch::nn::Embedding(torch::nn::EmbeddingOptions(vocab.src, E).padding_idx(vocab.pad_id)));
  tgt_embed_ = register_module(
      "tgt_embed", torch::nn::Embedding(torch::nn::EmbeddingOptions(vocab.tgt, E).padding_idx(vocab.pad_id)));
  {
    // N(0, 1/E) instead of N(0, 1): keeps the first RNN inputs at a sensible scale.
    torch::NoGradGuard no_grad;
    const double std = 1.0 / std::sqrt(static_cast<double>(E));
    src_embed_->weight.normal_(0, std);
    tgt_embed_->weight.normal_(0, std);
    src_embed_->weight[vocab.pad_id].zero_();
    tgt_embed_->weight[vocab.pad_id].zero_();
  }
  encoder_ = register_module("encoder", Encoder(config.encoder, E));
  decoder_ = register_module("decoder", Decoder(config, encoder_->output_size()));
  const int64_t H = config.decoder.hidden_size;
  if (config.tie_embeddings && H != E) {
    throw InputError("model.tie_embeddings needs model.embedding_size (" + std::to_string(E) +
                     ") == model.decoder.hidden_size (" + std::to_string(H) + ")");
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

Seq2SeqImpl::Encoded Seq2SeqImpl::encode(const torch::Tensor& src, const torch::Tensor& lengths,
                                          const PackedSeq2Seq* packed) {
  auto embedded = stream_dropout(src_embed_(src), config_.encoder.dropout, is_training());  // [B, S, E]
  auto encoded = encoder_->forward(embedded, lengths, packed ? &packed->encoder : nullptr);
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
  auto enc = encode(src, lengths);
  // Time-major so that step t reads a contiguous [B, *] slice.
  auto embedded = stream_dropout(tgt_embed_(tgt_in.t()), config_.decoder.dropout, is_training());   // [T, B, E]
  // One GEMM for all steps; unbind (not gates[t]) so that backward is one stack, not T
  // full-size zero tensors.
  auto gates = decoder_->project_embeddings(embedded).unbind(0);  // T x [B, G]
  auto embedded_t = embedded.unbind(0);                           // T x [B, E]
  const int64_t T = tgt_in.size(1);
  std::vector<torch::Tensor> outputs, weights;
  outputs.reserve(T);
  for (int64_t t = 0; t < T; ++t) {
    torch::Tensor w;
    outputs.push_back(decoder_->step(gates[t], embedded_t[t], enc.memory, enc.state, t,
                                     attention ? &w : nullptr));
    if (attention) weights.push_back(w);
  }
  if (attention) *attention = torch::stack(weights, 1);  // [B, T, S]
  return torch::stack(outputs, 1);                        // [B, T, H]
}

torch::Tensor Seq2SeqImpl::step(const torch::Tensor& prev, const AttentionMemory& memory,
                                DecoderStepState& state, int64_t t, torch::Tensor* attention) {
  return generate(step_hidden(prev, memory, state, t, attention));
}

torch::Tensor Seq2SeqImpl::step_hidden(const torch::Tensor& prev, const AttentionMemory& memory,
                                       DecoderStepState& state, int64_t t, torch::Tensor* attention,
                                       const PackedSeq2Seq* packed) {
  const auto* packed_decoder = packed ? &packed->decoder : nullptr;
  auto embedded = tgt_embed_(prev);  // [N, E]
  auto gates = decoder_->project_embeddings(embedded, packed_decoder);
  return decoder_->step(gates, embedded, memory, state, t, attention, packed_decoder);
}

PackedSeq2Seq Seq2SeqImpl::pack(bool bf16) const {
  return {encoder_->pack(bf16), decoder_->pack(bf16), PackedLinear(out_weight_, out_bias_, bf16)};
}

namespace {
struct Seq2SeqSearchState : SearchState {
  AttentionMemory memory;
  DecoderStepState state;
  int64_t t = 0;
  bool share_memory = false;  // the attention reads one memory row per sentence for its beams
  // decode.shortlist: the batch's tokens [L] (CPU int64) and the output layer's rows for them,
  // packed (output) or as tensors (weight / weight_bf16, bias).
  torch::Tensor vocabulary;
  std::shared_ptr<PackedLinear> output;
  torch::Tensor weight, weight_bf16, bias;
  void index_select(const torch::Tensor& index) override {
    state = state.index_select(index);
    if (memory.group == 1) {
      memory = memory.index_select(index);
      return;
    }
    // Whole groups move (expand_beams): the first row of group a names its sentence.
    TORCH_CHECK(index.size(0) % memory.group == 0, "search state: rows selected in part of a beam group");
    memory = memory.index_select(index.slice(0, 0, index.size(0), memory.group).div(memory.group, "floor"));
  }
  // The memory is per source sentence (attention.h): rows a*K..a*K+K-1 stay sentence a's.
  void reorder_beams(const torch::Tensor& index) override { state = state.index_select(index); }
  void expand_beams(const torch::Tensor& index, int64_t beam_size) override {
    state = state.index_select(index);
    if (share_memory) {
      memory.group = beam_size;
    } else {
      memory = memory.index_select(index);
    }
  }
};
}  // namespace

namespace {
// Decoding's output layer, hidden [N, H] -> logits [N, V'] over the rows given: on packed weights,
// else from a bfloat16 copy of the weight (bf16 without packed weights), else LibTorch's fp32 product.
torch::Tensor output_logits(const torch::Tensor& hidden, const PackedLinear* packed, const torch::Tensor& weight_bf16,
                            const torch::Tensor& weight, const torch::Tensor& bias) {
  if (packed) return (*packed)(hidden);
  if (weight_bf16.defined()) {
    return torch::mm(hidden.to(torch::kBFloat16), weight_bf16.t()).to(torch::kFloat).add_(bias);
  }
  return torch::addmm(bias, hidden, weight.t());
}
}  // namespace

Seq2SeqStepModel::Seq2SeqStepModel(Seq2Seq model, const std::string& precision, bool packed_weights)
    : model_(std::move(model)), bf16_(precision == "bf16" && device().is_cpu()) {
  if (packed_weights && device().is_cpu() && packed_linear_available()) {
    packed_ = std::make_unique<PackedSeq2Seq>(model_->pack(precision == "bf16"));
    if (!packed_->output.packed()) packed_.reset();  // no oneDNN kernel for this CPU and type
  }
  if (!packed_ && precision == "bf16" && device().is_cpu()) {
    torch::NoGradGuard no_grad;
    out_weight_bf16_ = model_->output_weight().detach().to(torch::kBFloat16).contiguous();
  }
}

std::unique_ptr<SearchState> Seq2SeqStepModel::start(const torch::Tensor& src, const torch::Tensor& lengths) {
  auto enc = model_->encode(src, lengths, packed_.get());
  auto s = std::make_unique<Seq2SeqSearchState>();
  s->memory = std::move(enc.memory);
  s->state = std::move(enc.state);
  s->share_memory = model_->decoder()->attention().shares_memory_across_beams();
  if (lexicon_) {
    const auto ids = src.to(torch::kCPU, torch::kLong).contiguous();
    const int64_t* p = ids.data_ptr<int64_t>();
    const std::vector<int> source(p, p + ids.numel());  // padding (id 0) included: harmless
    const auto& v = model_->vocab();
    // Rounded up to a multiple of 64 rows: oneDNN's kernels for the batch's output layer come from
    // its primitive cache for the few sizes that occur instead of being compiled for each batch.
    const auto list = lexicon_->shortlist(source, shortlist_first_, shortlist_best_,
                                          {static_cast<int>(v.eos_id), Tokenizer::kUnk}, /*round_to=*/64);
    s->vocabulary = torch::tensor(std::vector<int64_t>(list.begin(), list.end()), torch::kLong);
    shortlist_rows_ += static_cast<int64_t>(list.size());
    ++shortlist_batches_;
    torch::NoGradGuard no_grad;
    const auto index = s->vocabulary.to(device());
    auto weight = model_->output_weight().detach().index_select(0, index).contiguous();
    auto bias = model_->output_bias().detach().index_select(0, index).contiguous();
    if (packed_) {
      s->output = std::make_shared<PackedLinear>(weight, bias, bf16_);
    } else if (out_weight_bf16_.defined()) {
      s->weight_bf16 = weight.to(torch::kBFloat16);
    } else {
      s->weight = weight;
    }
    s->bias = bias;
  }
  return s;
}

double Seq2SeqStepModel::mean_shortlist_size() const {
  const int64_t batches = shortlist_batches_;
  return batches > 0 ? static_cast<double>(shortlist_rows_) / static_cast<double>(batches) : 0.0;
}

void Seq2SeqStepModel::use_shortlist(std::shared_ptr<const Lexicon> lexicon, int first, int best) {
  const auto& v = model_->vocab();
  if (lexicon && (lexicon->src_vocab != v.src || lexicon->tgt_vocab != v.tgt)) {
    throw InputError("decode.shortlist: the lexicon is for vocabularies of " + std::to_string(lexicon->src_vocab) +
                     " / " + std::to_string(lexicon->tgt_vocab) + " subwords, the model has " +
                     std::to_string(v.src) + " / " + std::to_string(v.tgt) + " (rebuild it: attnmt lexicon --model DIR)");
  }
  lexicon_ = std::move(lexicon);
  shortlist_first_ = first;
  shortlist_best_ = best;
}

StepResult Seq2SeqStepModel::step(const torch::Tensor& prev_tokens, SearchState& state, bool want_attention) {
  auto& s = static_cast<Seq2SeqSearchState&>(state);
  StepResult r;
  auto hidden = model_->step_hidden(prev_tokens, s.memory, s.state, s.t, want_attention ? &r.attention : nullptr,
                                    packed_.get());
  if (s.vocabulary.defined()) {
    r.logits = output_logits(hidden, s.output.get(), s.weight_bf16, s.weight, s.bias);
    r.vocabulary = s.vocabulary;
  } else {
    r.logits = output_logits(hidden, packed_ ? &packed_->output : nullptr, out_weight_bf16_, model_->output_weight(),
                             model_->output_bias());
  }
  ++s.t;
  return r;
}

torch::Device Seq2SeqStepModel::device() const {
  for (const auto& p : model_->parameters()) return p.device();
  return torch::kCPU;
}

}  // namespace attnmt
