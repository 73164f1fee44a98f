// The config keys whose value is one of a fixed set of names, as enums (here, below every layer,
// so that runtime/, config/'s peer, takes them too). Each enum's names are stated once, here, in
// the enum's order (Choice<E>::names); the key table (config/key_table.cpp) takes
// a key's allowed values from them, the YAML reader turns a name into the enum there and then (an
// unknown name is refused at its line, naming the key and the names), and the writer, the logs and
// the error messages turn it back with name_of. Code outside config/ compares enums, never names,
// so a misspelt choice does not compile.
//
// (model.attention.type and model.attention.score stay text: the attention registry owns their
// names, attention/registry.h.)
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace attnmt {

template <class E>
struct Choice;  // static constexpr std::array<std::string_view, N> names, in the enum's order

// tokenizer.type: sentencepiece (subword models learnt from the raw text) | none (text already
// tokenized, a token is a run of non-spaces: data/word_vocab.h)
enum class TokenizerType { sentencepiece, none };
template <>
struct Choice<TokenizerType> {
  static constexpr std::array<std::string_view, 2> names{"sentencepiece", "none"};
};

// tokenizer.model_type: SentencePiece's model type
enum class SubwordModel { bpe, unigram };
template <>
struct Choice<SubwordModel> {
  static constexpr std::array<std::string_view, 2> names{"bpe", "unigram"};
};

// model.encoder.rnn, model.decoder.rnn
enum class RnnType { lstm, gru };
template <>
struct Choice<RnnType> {
  static constexpr std::array<std::string_view, 2> names{"lstm", "gru"};
};

// model.decoder.style: luong (attention after the RNN step) | bahdanau (before it) | conditional
// (between two cells: Nematus' and Marian's cGRU)
enum class DecoderStyle { luong, bahdanau, conditional };
template <>
struct Choice<DecoderStyle> {
  static constexpr std::array<std::string_view, 3> names{"luong", "bahdanau", "conditional"};
};

// model.decoder.init: the decoder's initial state (model/decoder.h says what each one computes)
enum class DecoderInit { bridge, encoder, encoder_relu_bridge, encoder_linear, tanh_bridge, last, zero, mean_bridge };
template <>
struct Choice<DecoderInit> {
  static constexpr std::array<std::string_view, 8> names{"bridge",      "encoder",     "encoder_relu_bridge",
                                                         "encoder_linear", "tanh_bridge", "last",
                                                         "zero",        "mean_bridge"};
};

// train.optimizer
enum class Optimizer { adam, sgd };
template <>
struct Choice<Optimizer> {
  static constexpr std::array<std::string_view, 2> names{"adam", "sgd"};
};

// train.lr_schedule (train/schedule.h)
enum class LrSchedule { plateau, constant, inverse_sqrt, cosine };
template <>
struct Choice<LrSchedule> {
  static constexpr std::array<std::string_view, 4> names{"plateau", "constant", "inverse_sqrt", "cosine"};
};

// train.valid_metric: what "best" and early stopping look at
enum class ValidMetric { bleu, ppl };
template <>
struct Choice<ValidMetric> {
  static constexpr std::array<std::string_view, 2> names{"bleu", "ppl"};
};

// train.precision: fp32 | bf16 (autocast: matrix products in bfloat16, weights fp32)
enum class TrainPrecision { fp32, bf16 };
template <>
struct Choice<TrainPrecision> {
  static constexpr std::array<std::string_view, 2> names{"fp32", "bf16"};
};

// decode.precision: the products' precision, or automatic (the fastest this CPU has within the
// documented BLEU tolerance: decoding/seq2seq_step_model.h)
enum class DecodePrecision { fp32, bf16, int8, automatic };
template <>
struct Choice<DecodePrecision> {
  static constexpr std::array<std::string_view, 4> names{"fp32", "bf16", "int8", "auto"};
};

// decode.mbr: minimum Bayes risk reranking's utility (decoding/mbr.h), none = off
enum class MbrMetric { none, bleu, chrf };
template <>
struct Choice<MbrMetric> {
  static constexpr std::array<std::string_view, 3> names{"none", "bleu", "chrf"};
};

// decode.search_rules: whose beam and greedy search rules search() follows
enum class SearchRules {
  attnmt,    // decoding/search.h's
  opennmt,   // OpenNMT-py 2.3's BeamSearch (decoding/toolkit_search.h)
  opennmt3,  // OpenNMT-py 3.x's BeamSearch (v3.5.1)
  joeynmt,   // Joey NMT 2.3's beam_search and recurrent_greedy
  fairseq,   // fairseq's SequenceGenerator with its BeamSearch
  marian,    // marian-decoder's BeamSearch (Marian 1.12)
};
template <>
struct Choice<SearchRules> {
  static constexpr std::array<std::string_view, 6> names{"attnmt", "opennmt", "opennmt3", "joeynmt", "fairseq", "marian"};
};

// decode.wait_k_policy: how wait-k decides target token t (decoding/streaming.h)
enum class WaitKPolicy {
  replay,     // the decoder restarted over x_1..x_{g(t)} and the written tokens replayed (any model)
  prefix,     // the decoder kept across reads (a model whose encoder streams: unidirectional)
  automatic,  // prefix for a model trained prefix-to-prefix (train.wait_k) whose encoder streams, else replay
};
template <>
struct Choice<WaitKPolicy> {
  static constexpr std::array<std::string_view, 3> names{"replay", "prefix", "auto"};
};

// distributed.backend: automatic = nccl on cuda when built with it, else gloo
enum class DistBackend { automatic, gloo, nccl };
template <>
struct Choice<DistBackend> {
  static constexpr std::array<std::string_view, 3> names{"auto", "gloo", "nccl"};
};

// distributed.compress: gradients travel as they are, or as fp16, scaled (train/distributed.h)
enum class GradCompress { none, fp16 };
template <>
struct Choice<GradCompress> {
  static constexpr std::array<std::string_view, 2> names{"none", "fp16"};
};

// gemm: what runs fp32 matrix products on a CPU (runtime/gemm.h)
enum class GemmBackend { automatic, onednn, blas };
template <>
struct Choice<GemmBackend> {
  static constexpr std::array<std::string_view, 3> names{"auto", "onednn", "blas"};
};

template <class E>
constexpr std::string_view name_of(E value) {
  return Choice<E>::names[static_cast<size_t>(value)];
}
template <class E>
std::string name_string(E value) {
  return std::string(name_of(value));
}

// Written as its name (test messages, streams).
template <class E, class = decltype(Choice<E>::names)>
std::ostream& operator<<(std::ostream& out, E value) {
  return out << name_of(value);
}

// The value named `name`; nullopt if none is.
template <class E>
constexpr std::optional<E> choice_named(std::string_view name) {
  for (size_t i = 0; i < Choice<E>::names.size(); ++i) {
    if (Choice<E>::names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

// "one of {a, b}", as the key table's rule reads.
std::string choices_text(const std::string_view* names, size_t count);

// The value named `name`, else an InputError "<what> must be one of {...}, got '<name>'" (`what`:
// the key or flag it came from, e.g. "--wait-k-policy"). For values that arrive outside a config
// file and its overrides (a command-line flag of its own).
[[noreturn]] void throw_unknown_choice(const std::string& what, const std::string_view* names, size_t count,
                                       const std::string& name);
template <class E>
E parse_choice(const std::string& what, const std::string& name) {
  if (auto value = choice_named<E>(name)) return *value;
  throw_unknown_choice(what, Choice<E>::names.data(), Choice<E>::names.size(), name);
}

}  // namespace attnmt
