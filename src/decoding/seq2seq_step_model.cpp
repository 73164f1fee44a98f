#include "decoding/seq2seq_step_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "data/lexicon.h"
#include "data/tokenizer.h"
#include "runtime/int8_gemm.h"
#include "util/cpu_kernels.h"
#include "util/decode_phases.h"
#include "util/error.h"

namespace attnmt {

namespace {

bool model_on_cpu(const Seq2Seq& model) {
  for (const auto& p : model->parameters()) return p.device().is_cpu();
  return true;
}

// decode.precision: bf16 where the CPU has no native bf16 products (util/cpu_kernels.h): oneDNN has
// no kernel to pack for, and LibTorch's emulated bf16 product made the output layer many times
// slower than in fp32 (AVX2). Such a CPU decodes in fp32 products, and says so once per process.
bool bf16_products(DecodePrecision precision, const Seq2Seq& model) {
  if (precision != DecodePrecision::bf16) return false;
  const bool cpu = model_on_cpu(model);
  const auto& flags = this_cpu_flags();
  if (!cpu || has_native_bf16(flags)) return true;  // (bf16 applies on a CPU only: model/seq2seq.h)
  static std::once_flag said;
  std::call_once(said, [&] {
    spdlog::warn("[decode] decode.precision: bf16: {}: decoding in fp32 products instead", no_native_bf16(flags));
  });
  return false;
}

// ", ATTNMT_CPU_ISA=avx2" where the switch lowered the instruction set, for the logs.
std::string isa_note() {
  return cpu_isa_forced() ? std::string(", ATTNMT_CPU_ISA=") + cpu_isa_name(this_cpu_isa()) : "";
}

// decode.precision: int8 (runtime/int8_gemm.h): every product of the encoder's LSTM, the decoder
// step and the output layer on int8 weights, whether or not the weights are packed for oneDNN.
ExecutionMode int8_mode(const Seq2Seq& model) {
  for (const auto& p : model->parameters()) {
    if (!p.device().is_cpu()) {
      throw InputError("decode.precision: int8 runs on the CPU only (the model is on " + p.device().str() +
                       "): use fp32 or bf16 there");
    }
    break;
  }
  static std::once_flag said;
  std::call_once(said, [] {
    const auto kernel = Int8Matrix::kernel_in_use();
    if (kernel == Int8Kernel::kPortable) {
      spdlog::warn("[decode] decode.precision: int8: this CPU has no AVX2{}: the int8 products run in a portable "
                   "loop, slower than fp32", isa_note());
    } else {
      spdlog::info("[decode] int8 products: {} kernel{}", int8_kernel_name(kernel), isa_note());
    }
  });
  return ExecutionMode::packed(ProductPrecision::kInt8);
}

ExecutionMode decoding_mode(DecodePrecision precision, bool packed_weights, const Seq2Seq& model) {
  const DecodePrecision chosen = precision == DecodePrecision::automatic ? auto_precision(model_on_cpu(model)) : precision;
  if (precision == DecodePrecision::automatic) {
    static std::once_flag said;
    std::call_once(said, [&] {
      spdlog::info("[decode] decode.precision: auto: {} on this CPU{}", name_of(chosen), isa_note());
    });
  }
  if (chosen == DecodePrecision::int8) return int8_mode(model);
  const auto type = bf16_products(chosen, model) ? ProductPrecision::kBf16 : ProductPrecision::kFp32;
  if (type == ProductPrecision::kBf16 && model_on_cpu(model)) {
    static std::once_flag said;
    std::call_once(said, [] {
      spdlog::info("[decode] bf16 products: {} (oneDNN){}", bf16_kernel_name(bf16_kernel(this_cpu_flags())), isa_note());
    });
  }
  return packed_weights ? ExecutionMode::packed(type) : ExecutionMode{ExecutionMode::kLibTorch, type};
}

}  // namespace

DecodePrecision auto_precision(bool on_cpu) {
  if (!on_cpu) return DecodePrecision::fp32;
  // docs/performance.md's table per CPU class: int8 is the fastest wherever it has a kernel of its
  // own (1.9x fp32 on AVX2, more with VNNI and AMX), within the BLEU tolerance; without AVX2 the
  // portable loop is slower than fp32, and such a CPU has no native bf16 either.
  if (Int8Matrix::kernel_in_use() != Int8Kernel::kPortable) return DecodePrecision::int8;
  return has_native_bf16(this_cpu_flags()) ? DecodePrecision::bf16 : DecodePrecision::fp32;
}

namespace {

struct Seq2SeqSearchState : SearchState {
  AttentionMemory memory;
  DecoderStepState state;
  int64_t t = 0;
  bool share_memory = false;  // the attention reads one memory row per sentence for its beams
  // decode.shortlist: the batch's tokens [L] (CPU int64) and the output layer's rows for them.
  torch::Tensor vocabulary;
  std::shared_ptr<const Product> output;
  void index_select(const torch::Tensor& index) override {
    state = state.index_select(index);
    if (memory.group == 1) {
      memory = memory.index_select(index);
      return;
    }
    // Whole groups move (expand_beams): the first row of group a names its sentence. Sentences
    // only drop out and keep their order, so keep_rows moves their memory down in place.
    TORCH_CHECK(index.size(0) % memory.group == 0, "search state: rows selected in part of a beam group");
    const auto first_rows = index.slice(0, 0, index.size(0), memory.group).div(memory.group, "floor").to(torch::kCPU).contiguous();
    const int64_t* p = first_rows.data_ptr<int64_t>();
    const std::vector<int64_t> rows(p, p + first_rows.numel());
    memory.keep_rows(rows);
  }
  // The memory is per source sentence (attention.h): rows a*K..a*K+K-1 stay sentence a's.
  void reorder_beams(const torch::Tensor& index) override { state = state.index_select(index); }
  std::unique_ptr<SearchState> clone() const override { return std::make_unique<Seq2SeqSearchState>(*this); }
  EncoderStream encoder;  // streaming: the encoder after the tokens read so far
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

Seq2SeqStepModel::Seq2SeqStepModel(Seq2Seq model, DecodePrecision precision, bool packed_weights)
    : model_(model, decoding_mode(precision, packed_weights, model)) {}  // (copies of one module)

std::unique_ptr<SearchState> Seq2SeqStepModel::start(const torch::Tensor& src, const torch::Tensor& lengths) {
  PhaseScope phase(DecodePhase::kEncoder);
  auto enc = model_.encode(src, lengths);
  auto s = std::make_unique<Seq2SeqSearchState>();
  s->memory = std::move(enc.memory);
  s->state = std::move(enc.state);
  s->share_memory = model_.shares_memory_across_beams();
  if (lexicon_) {
    const auto ids = src.to(torch::kCPU, torch::kLong).contiguous();
    const int64_t* p = ids.data_ptr<int64_t>();
    const std::vector<int> source(p, p + ids.numel());  // padding (id 0) included: harmless
    // Rounded up to a multiple of 64 rows: oneDNN's kernels for the batch's output layer come from
    // its primitive cache for the few sizes that occur instead of being compiled for each batch.
    const auto list = lexicon_->shortlist(source, shortlist_first_, shortlist_best_,
                                          {static_cast<int>(model_.vocab().eos_id), Tokenizer::kUnk}, /*round_to=*/64);
    s->vocabulary = torch::tensor(std::vector<int64_t>(list.begin(), list.end()), torch::kLong);
    shortlist_rows_ += static_cast<int64_t>(list.size());
    ++shortlist_batches_;
    s->output = model_.output_rows(s->vocabulary);
  }
  return s;
}

double Seq2SeqStepModel::mean_shortlist_size() const {
  const int64_t batches = shortlist_batches_;
  return batches > 0 ? static_cast<double>(shortlist_rows_) / static_cast<double>(batches) : 0.0;
}

std::string Seq2SeqStepModel::kernel() const {
  if (!device().is_cpu()) return "the device's";
  switch (model_.precision()) {
    case ProductPrecision::kInt8:
      return int8_kernel_name(Int8Matrix::kernel_in_use());
    case ProductPrecision::kBf16:
      return std::string(bf16_kernel_name(bf16_kernel(this_cpu_flags()))) + " (oneDNN)";
    case ProductPrecision::kFp32:
      break;
  }
  return packed() ? "oneDNN fp32 (packed)" : "fp32 (LibTorch)";
}

std::string Seq2SeqStepModel::precision() const {
  switch (model_.precision()) {
    case ProductPrecision::kBf16: return "bf16";
    case ProductPrecision::kInt8: return "int8";
    case ProductPrecision::kFp32: break;
  }
  return "fp32";
}

void Seq2SeqStepModel::use_shortlist(std::shared_ptr<const Lexicon> lexicon, int first, int best) {
  const auto& v = model_.vocab();
  if (!lexicon) throw InputError("decode.shortlist: the model has no lexicon (build one: attnmt lexicon --model MODEL)");
  if (lexicon->src_vocab != v.src || lexicon->tgt_vocab != v.tgt) {
    throw InputError("decode.shortlist: the lexicon is for vocabularies of " + std::to_string(lexicon->src_vocab) +
                     " / " + std::to_string(lexicon->tgt_vocab) + " subwords, the model has " +
                     std::to_string(v.src) + " / " + std::to_string(v.tgt) + " (rebuild it: attnmt lexicon --model MODEL)");
  }
  lexicon_ = std::move(lexicon);
  shortlist_first_ = first;
  shortlist_best_ = best;
}

StepResult Seq2SeqStepModel::step(const torch::Tensor& prev_tokens, SearchState& state, bool want_attention) {
  auto& s = static_cast<Seq2SeqSearchState&>(state);
  StepResult r;
  auto hidden = [&] {
    PhaseScope phase(DecodePhase::kRecurrent);
    return model_.step_hidden(prev_tokens, s.memory, s.state, s.t, want_attention ? &r.attention : nullptr);
  }();
  PhaseScope phase(DecodePhase::kOutput);
  if (s.vocabulary.defined()) {
    r.logits = (*s.output)(hidden);
    r.vocabulary = s.vocabulary;
  } else {
    r.logits = model_.logits(hidden);
  }
  ++s.t;
  return r;
}

bool Seq2SeqStepModel::streams_source() const {
  return !lexicon_ && model_.model()->streams_source();
}

bool Seq2SeqStepModel::keeps_decoder_across_reads() const {
  return model_.model()->decoder_keeps_across_reads();
}

std::unique_ptr<SearchState> Seq2SeqStepModel::start_stream() {
  TORCH_CHECK(streams_source(), "streaming: this model does not read its source a token at a time");
  return std::make_unique<Seq2SeqSearchState>();
}

void Seq2SeqStepModel::read(SearchState& state, int64_t token) {
  PhaseScope phase(DecodePhase::kEncoder);
  auto& s = static_cast<Seq2SeqSearchState&>(state);
  const bool started = s.memory.values.defined();
  model_.read_source(torch::full({1}, token, torch::dtype(torch::kLong).device(device())), s.encoder, s.memory);
  if (started && !s.state.rnn.h.empty()) {
    s.state.attention = model_.model()->decoder()->attention().grow_state(s.state.attention, 1);
  }
}

void Seq2SeqStepModel::restart_decoder(SearchState& state) {
  auto& s = static_cast<Seq2SeqSearchState&>(state);
  s.state = model_.model()->start_decoder(s.encoder, s.memory);
  s.t = 0;
}

void Seq2SeqStepModel::advance(const torch::Tensor& prev_tokens, SearchState& state) {
  auto& s = static_cast<Seq2SeqSearchState&>(state);
  PhaseScope phase(DecodePhase::kRecurrent);
  model_.step_hidden(prev_tokens, s.memory, s.state, s.t, nullptr);
  ++s.t;
}

bool Seq2SeqStepModel::streams_prefix_batches() const {
  return !lexicon_ && model_.model()->masks_source_prefixes();
}

std::unique_ptr<SearchState> Seq2SeqStepModel::start_prefixes(const torch::Tensor& src, const torch::Tensor& lengths,
                                                              const std::vector<int64_t>& visible) {
  TORCH_CHECK(streams_prefix_batches(), "start_prefixes: this model cannot stream a batch of prefixes");
  const int64_t B = src.size(0), S = src.size(1);
  TORCH_CHECK(static_cast<int64_t>(visible.size()) == B && lengths.size(0) == B, "start_prefixes: ", B,
              " sources, ", visible.size(), " prefixes");
  auto s = std::make_unique<Seq2SeqSearchState>();
  EncoderStream first;  // each row's encoder once its first visible[b] tokens are read
  {
    PhaseScope phase(DecodePhase::kEncoder);
    const auto columns = src.to(device(), torch::kLong);
    for (int64_t i = 0; i < S; ++i) {
      // Rows past their end read padding: the memory masks those positions (limit_source).
      model_.read_source(columns.select(1, i).contiguous(), s->encoder, s->memory);
      std::vector<int64_t> now(static_cast<size_t>(B), 0);  // 1: the row's prefix ends here
      for (int64_t b = 0; b < B; ++b) now[static_cast<size_t>(b)] = visible[static_cast<size_t>(b)] == i + 1;
      if (std::find(now.begin(), now.end(), 1) == now.end()) continue;
      if (first.h.empty()) {
        first = s->encoder;  // the rows not yet at their prefix are replaced when they are
        continue;
      }
      const auto rows = torch::tensor(now, torch::kLong).to(device()).gt(0).unsqueeze(1);  // [B, 1]
      for (size_t l = 0; l < first.h.size(); ++l) first.h[l] = torch::where(rows, s->encoder.h[l], first.h[l]);
      for (size_t l = 0; l < first.c.size(); ++l) first.c[l] = torch::where(rows, s->encoder.c[l], first.c[l]);
    }
  }
  TORCH_CHECK(!first.h.empty(), "start_prefixes: no prefix within the sources");
  limit_source(*s, visible);
  s->state = model_.model()->start_decoder(first, s->memory);
  s->share_memory = model_.shares_memory_across_beams();
  return s;
}

void Seq2SeqStepModel::limit_source(SearchState& state, const std::vector<int64_t>& visible) {
  auto& s = static_cast<Seq2SeqSearchState&>(state);
  TORCH_CHECK(s.memory.group == 1 && s.memory.values.size(0) == static_cast<int64_t>(visible.size()),
              "limit_source: ", visible.size(), " prefixes for ", s.memory.values.size(0), " rows");
  const auto v = torch::tensor(visible, torch::kLong).to(device());
  s.memory.lengths = v;
  s.memory.mask = torch::arange(s.memory.values.size(1), v.options()).unsqueeze(0).lt(v.unsqueeze(1));
}

void Seq2SeqStepModel::take_back(SearchState& state, const SearchState& before, const std::vector<int64_t>& rows) {
  auto& s = static_cast<Seq2SeqSearchState&>(state);
  const auto& b = static_cast<const Seq2SeqSearchState&>(before);
  s.state = s.state.with_rows_of(b.state, torch::tensor(rows, torch::kLong).to(device()));
}

bool Seq2SeqStepModel::merges_states() const {
  return !lexicon_ && model_.model()->joins_running_batches();
}

void Seq2SeqStepModel::merge(SearchState& into, SearchState& from) {
  TORCH_CHECK(merges_states(), "merge: this model's batches cannot be merged");
  auto& a = static_cast<Seq2SeqSearchState&>(into);
  auto& b = static_cast<Seq2SeqSearchState&>(from);
  TORCH_CHECK(a.share_memory == b.share_memory && a.memory.group == b.memory.group,
              "merge: states expanded to beams differently");
  const auto& attention = model_.model()->decoder()->attention();
  auto states = attention.cat_states(a.state.attention, a.memory.values.size(1), b.state.attention, b.memory.values.size(1));
  a.state = DecoderStepState::cat(a.state, b.state, std::move(states));
  a.memory = AttentionMemory::cat(a.memory, b.memory);
  a.t = 0;  // the rows' steps differ; this model reads none (joins_running_batches)
}

std::unique_ptr<Seq2SeqStepModel> make_step_model(Seq2Seq model, const DecodeConfig& decode,
                                                  std::shared_ptr<const Lexicon> lexicon) {
  auto step = std::make_unique<Seq2SeqStepModel>(std::move(model), decode.precision, decode.packed_weights);
  if (decode.shortlist) step->use_shortlist(std::move(lexicon), decode.shortlist_first, decode.shortlist_best);
  return step;
}

}  // namespace attnmt
