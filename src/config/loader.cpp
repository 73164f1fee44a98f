// YAML <-> Config. The only file in attnmt that includes yaml-cpp.
//
// Every key is declared once, in kFields below: the dotted path of its struct member (its type
// and default are the member's, in config.h), when it may change, the values it takes and its
// help line. The parser, the writer, validate_config, config_keys(), config_key_table() (the
// decode-time checks, the Python module, the CLI's help and docs/config.md's test) and the "did
// you mean" suggestions all read it, so a new option is one entry here plus its field in config.h.
#include "config/loader.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <variant>

#include "config/decode_rules.h"
#include "config/option_tree.h"
#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {
namespace {

// ---------------------------------------------------------------------------------------------
// The key table

using FieldRef = std::variant<int*, std::uint64_t*, double*, bool*, std::string*>;

// The values a key takes on its own: validate_config checks them, the "Allowed" column of
// docs/config.md shows them. Rules between keys are code (validate_config, after the table's
// checks) and the entry's `also` says them in words. Every number must be finite.
struct Rule {
  enum Kind { kAny, kAtLeast, kAbove, kHalfOpen, kOpenClosed, kClosed, kChoice } kind = kAny;
  double lo = 0, hi = 0;
  const char* choices = nullptr;  // kChoice: "adam|sgd"
  const char* note = nullptr;     // what a special value means, "0 = off": shown in parentheses
};
constexpr Rule any() { return {}; }
constexpr Rule at_least(double lo, const char* note = nullptr) { return {Rule::kAtLeast, lo, 0, nullptr, note}; }
constexpr Rule above(double lo, const char* note = nullptr) { return {Rule::kAbove, lo, 0, nullptr, note}; }
constexpr Rule in_co(double lo, double hi, const char* note = nullptr) { return {Rule::kHalfOpen, lo, hi, nullptr, note}; }
constexpr Rule in_oc(double lo, double hi) { return {Rule::kOpenClosed, lo, hi, nullptr, nullptr}; }
constexpr Rule in_cc(double lo, double hi) { return {Rule::kClosed, lo, hi, nullptr, nullptr}; }
constexpr Rule one_of(const char* choices) { return {Rule::kChoice, 0, 0, choices, nullptr}; }

constexpr KeyScope kTrain = KeyScope::train, kLoad = KeyScope::load, kCall = KeyScope::call;

struct Field {
  const char* key;             // dotted path, e.g. "model.encoder.hidden_size"
  FieldRef (*ref)(Config& c);  // the member it names (its type and default: config.h)
  KeyScope scope;              // when it may still change
  Rule rule;
  const char* help;            // one line, markdown: the CLI's help and docs/config.md's "Meaning" start with it
  const char* also = nullptr;  // rules with other keys, in words
};

// The stringised member path *is* the key, so the two cannot drift apart.
// clang-format off
#define ATTNMT_FIELD(path) #path, [](Config& c) -> FieldRef { return &c.path; }
// clang-format on

// In the order of config.h (config_to_yaml writes them in this order).
const Field kFields[] = {
    {ATTNMT_FIELD(data.train.src), kTrain, any(),
     "Source side of the training corpus", "a readable file; **required for training**"},
    {ATTNMT_FIELD(data.train.tgt), kTrain, any(),
     "Target side, same number of lines as `src`", "a readable file; **required for training**"},
    {ATTNMT_FIELD(data.valid.src), kTrain, any(),
     "Source side of the validation set (perplexity / BLEU)", "a readable file; **required for training**"},
    {ATTNMT_FIELD(data.valid.tgt), kTrain, any(),
     "Target side of the validation set", "a readable file; **required for training**"},
    {ATTNMT_FIELD(data.test.src), kTrain, any(),
     "Optional test set, translated and scored at the end of training", "a readable file, or empty"},
    {ATTNMT_FIELD(data.test.tgt), kTrain, any(),
     "Target side of the test set (references)", "a readable file; set together with `data.test.src`"},
    {ATTNMT_FIELD(data.max_length), kTrain, above(0),
     "Pairs with more subword tokens than this on either side are skipped"},
    {ATTNMT_FIELD(data.cache_dir), kTrain, any(),
     "Where the training corpora are kept as token ids (empty: `train.save_dir/cache`)", "a writable directory"},
    {ATTNMT_FIELD(data.batch_window), kTrain, at_least(0, "0 = the whole epoch"),
     "Batches are made of pairs of similar lengths"},
    {ATTNMT_FIELD(data.src_bpe_dropout), kTrain, in_co(0, 1),
     "BPE-dropout (Provilkov et al., 2020) on the source while training", "0 unless `tokenizer.type` is sentencepiece and `tokenizer.model_type` bpe"},
    {ATTNMT_FIELD(data.tgt_bpe_dropout), kTrain, in_co(0, 1),
     "The same on the target side (what the decoder reads and predicts)", "as `data.src_bpe_dropout`"},

    {ATTNMT_FIELD(tokenizer.type), kTrain, one_of("sentencepiece|none"),
     "`sentencepiece`: subword models learnt from the raw text"},
    {ATTNMT_FIELD(tokenizer.model_type), kTrain, one_of("bpe|unigram"),
     "SentencePiece model type"},
    {ATTNMT_FIELD(tokenizer.vocab_size), kTrain, at_least(8),
     "Vocabulary size per model (the shared one, or each side's)"},
    {ATTNMT_FIELD(tokenizer.shared), kTrain, any(),
     "One model trained on both sides, or one model per side"},
    {ATTNMT_FIELD(tokenizer.character_coverage), kTrain, in_oc(0, 1),
     "SentencePiece `--character_coverage`"},
    {ATTNMT_FIELD(tokenizer.input_sentence_size), kTrain, at_least(0, "0 = every line"),
     "SentencePiece is trained on a sample of this many training lines"},
    {ATTNMT_FIELD(tokenizer.user_defined_symbols), kTrain, any(),
     "SentencePiece `--user_defined_symbols`: pieces always kept whole", "comma-separated, no spaces; `sentencepiece` only"},

    {ATTNMT_FIELD(model.embedding_size), kTrain, above(0),
     "Size of the source and target word embeddings"},
    {ATTNMT_FIELD(model.encoder.rnn), kTrain, one_of("lstm|gru"),
     "The encoder's recurrent cell"},
    {ATTNMT_FIELD(model.encoder.bidirectional), kTrain, any(),
     "Forward and backward states are concatenated"},
    {ATTNMT_FIELD(model.encoder.layers), kTrain, above(0),
     "Number of stacked RNN layers of the encoder"},
    {ATTNMT_FIELD(model.encoder.hidden_size), kTrain, above(0),
     "Hidden size per direction"},
    {ATTNMT_FIELD(model.encoder.dropout), kTrain, in_co(0, 1),
     "Dropout between layers and on the encoder output"},
    {ATTNMT_FIELD(model.encoder.word_dropout), kTrain, in_co(0, 1),
     "Word dropout while training"},
    {ATTNMT_FIELD(model.encoder.self_attention.layers), kTrain, at_least(0, "0 = none"),
     "Multi-head self-attention blocks over the RNN's states (RNMT+-style hybrid)"},
    {ATTNMT_FIELD(model.encoder.self_attention.heads), kTrain, at_least(1),
     "Heads per block (each of size output / heads, scaled dot-product)", "divides the encoder's output size"},
    {ATTNMT_FIELD(model.encoder.self_attention.dropout), kTrain, in_co(0, 1),
     "Dropout on each block's attention output before the residual sum"},
    {ATTNMT_FIELD(model.encoder.embedding_size), kTrain, at_least(0, "0 = model.embedding_size"),
     "Size of the source embeddings"},
    {ATTNMT_FIELD(model.decoder.rnn), kTrain, one_of("lstm|gru"),
     "The decoder's recurrent cell"},
    {ATTNMT_FIELD(model.decoder.style), kTrain, one_of("luong|bahdanau"),
     "`luong`: attention after the RNN step; `bahdanau`: before it"},
    {ATTNMT_FIELD(model.decoder.layers), kTrain, above(0),
     "Number of stacked RNN layers of the decoder"},
    {ATTNMT_FIELD(model.decoder.hidden_size), kTrain, above(0),
     "Hidden size of the decoder"},
    {ATTNMT_FIELD(model.decoder.input_feeding), kTrain, any(),
     "Luong style: feed the previous attentional state h~ to the RNN"},
    {ATTNMT_FIELD(model.decoder.dropout), kTrain, in_co(0, 1),
     "Dropout between layers and on the decoder output"},
    {ATTNMT_FIELD(model.decoder.word_dropout), kTrain, in_co(0, 1),
     "The same for the target tokens fed to the decoder (Marian's `dropout-trg`)"},
    {ATTNMT_FIELD(model.decoder.self_attention), kTrain, any(),
     "Intra-decoder attention (Paulus et al. 2017, 2.2)"},
    {ATTNMT_FIELD(model.decoder.init), kTrain, one_of("bridge|encoder|encoder_relu_bridge|encoder_linear|tanh_bridge|last|zero"),
     "The decoder's initial state"},
    {ATTNMT_FIELD(model.decoder.combine_bias), kTrain, any(),
     "The layer that makes h~_t has a bias (OpenNMT-py's `mlp` attention, Joey NMT)"},
    {ATTNMT_FIELD(model.decoder.combine_tanh), kTrain, any(),
     "h~_t = tanh(W_c [c_t; s_t]); `false`: without the tanh (OpenNMT-py's `mlp` attention)"},
    {ATTNMT_FIELD(model.attention.type), kTrain, any(),
     "Attention mechanism (formulas: [attention.md](attention.md))", "a registered name: [attention.md](attention.md#what-each-variant-supports) lists them (an unknown name lists the valid ones)"},
    {ATTNMT_FIELD(model.attention.hidden_size), kTrain, at_least(0, "0 = decoder size"),
     "Size of the tanh layer of additive / concat scores"},
    {ATTNMT_FIELD(model.attention.window), kTrain, at_least(1),
     "`local_m` / `local_p`: half-width D of the window"},
    {ATTNMT_FIELD(model.attention.score), kTrain, one_of("dot|scaled_dot|general|concat"),
     "Score function of `local_m`, `local_p` (inside the window), `forced_forward`, `key_value`, `area`, `hard`, `forward`"},
    {ATTNMT_FIELD(model.attention.max_positions), kTrain, at_least(1),
     "`luong_location`: source positions with a row of their own in W_a"},
    {ATTNMT_FIELD(model.attention.hard_decode), kLoad, any(),
     "Decode with the hard monotonic algorithm (one-hot weights, never moves left)"},
    {ATTNMT_FIELD(model.attention.score_bias_init), kTrain, in_cc(-20, 20),
     "`monotonic`: the initial value of `r`, the selection energy's bias"},
    {ATTNMT_FIELD(model.attention.heads), kTrain, at_least(1),
     "`multi_head`: number of heads"},
    {ATTNMT_FIELD(model.attention.dropout), kTrain, in_co(0, 1),
     "`multi_head`: dropout on each head's attention weights while training", "`multi_head` only"},
    {ATTNMT_FIELD(model.attention.max_area), kTrain, at_least(1),
     "`area`: maximal span length A"},
    {ATTNMT_FIELD(model.attention.chunk_size), kTrain, at_least(1),
     "`chunkwise`: states w of the soft chunk ending at the monotonic stop"},
    {ATTNMT_FIELD(model.attention.coverage), kTrain, any(),
     "Additive score with a coverage term w_c cov_{t,i} (See et al., 2017)", "`false` unless the score is additive (`bahdanau`, `luong_concat`)"},
    {ATTNMT_FIELD(model.attention.coverage_loss), kTrain, at_least(0),
     "Weight lambda of the coverage loss (0 = off)"},
    {ATTNMT_FIELD(model.tie_embeddings), kTrain, any(),
     "The output layer shares the target embedding matrix"},
    {ATTNMT_FIELD(model.share_embeddings), kTrain, any(),
     "The encoder and the decoder read one embedding matrix", "`false` unless `tokenizer.shared`"},
    {ATTNMT_FIELD(model.source_eos), kTrain, any(),
     "The encoder reads the source's `</s>`"},

    {ATTNMT_FIELD(train.save_dir), kTrain, any(),
     "Directory for checkpoints, tokenizer models, logs and the resolved config", "**required for training**"},
    {ATTNMT_FIELD(train.batch_size), kTrain, above(0),
     "Sentences per batch (used when `batch_tokens` is 0)"},
    {ATTNMT_FIELD(train.batch_tokens), kTrain, at_least(0, "0 = batch by sentences"),
     "If > 0: batches hold up to this many target tokens"},
    {ATTNMT_FIELD(train.max_steps), kTrain, at_least(0, "0 = no limit"),
     "Stop after this many updates"},
    {ATTNMT_FIELD(train.max_epochs), kTrain, at_least(0, "0 = no limit"),
     "Stop after this many epochs"},
    {ATTNMT_FIELD(train.max_minutes), kTrain, at_least(0, "0 = no limit"),
     "Stop after this much wall-clock training time in minutes, validations included"},
    {ATTNMT_FIELD(train.optimizer), kTrain, one_of("adam|sgd"),
     "Optimiser"},
    {ATTNMT_FIELD(train.learning_rate), kTrain, above(0),
     "Initial learning rate"},
    {ATTNMT_FIELD(train.clip_norm), kTrain, at_least(0, "0 = off"),
     "Global gradient-norm clipping"},
    {ATTNMT_FIELD(train.label_smoothing), kTrain, in_co(0, 1),
     "Label smoothing of the cross-entropy loss"},
    {ATTNMT_FIELD(train.lr_schedule), kTrain, one_of("plateau|constant|inverse_sqrt|cosine"),
     "Learning-rate schedule"},
    {ATTNMT_FIELD(train.warmup_steps), kTrain, at_least(0, "0 = none"),
     "Linear warm-up over the first N updates"},
    {ATTNMT_FIELD(train.lr_decay), kTrain, in_oc(0, 1),
     "Plateau: multiply the LR by this when validation does not improve"},
    {ATTNMT_FIELD(train.lr_patience), kTrain, at_least(0),
     "Plateau: validations without improvement before decaying"},
    {ATTNMT_FIELD(train.min_learning_rate), kTrain, at_least(0),
     "Plateau: the LR does not decay below this; cosine: where it ends"},
    {ATTNMT_FIELD(train.weight_decay), kTrain, in_co(0, 1),
     "Decoupled weight decay (AdamW, Loshchilov & Hutter 2019)"},
    {ATTNMT_FIELD(train.ema_decay), kTrain, in_co(0, 1),
     "> 0: keep an exponential moving average of the weights"},
    {ATTNMT_FIELD(train.valid_every), kTrain, above(0),
     "Validate every N updates (and at the end of each epoch)"},
    {ATTNMT_FIELD(train.valid_metric), kTrain, one_of("bleu|ppl"),
     "What \"best\" and early stopping look at"},
    {ATTNMT_FIELD(train.valid_beam_size), kTrain, at_least(1),
     "Beam size for validation BLEU (1 = greedy)"},
    {ATTNMT_FIELD(train.patience), kTrain, at_least(0, "0 = off"),
     "Stop after N validations without improvement"},
    {ATTNMT_FIELD(train.keep_checkpoints), kTrain, at_least(1),
     "Keep the last K step checkpoints (plus `best.pt`)"},
    {ATTNMT_FIELD(train.report_every), kTrain, at_least(1),
     "Log a training line every N updates"},
    {ATTNMT_FIELD(train.precision), kTrain, one_of("fp32|bf16"),
     "`bf16`: CPU autocast, matrix products in bfloat16"},
    {ATTNMT_FIELD(train.allow_slow_bf16), kTrain, any(),
     "Train in bf16 even on a CPU without native bf16 products"},
    {ATTNMT_FIELD(train.replicas), kTrain, at_least(0, "0 = one per thread on a CPU"),
     "Data parallelism inside one process: this many model replicas"},
    {ATTNMT_FIELD(train.seed), kTrain, any(),
     "Random seed"},

    {ATTNMT_FIELD(decode.beam_size), kCall, at_least(1),
     "Beam size (1 = greedy)"},
    {ATTNMT_FIELD(decode.length_penalty), kCall, at_least(0),
     "GNMT length-normalisation alpha (0 = no normalisation)"},
    {ATTNMT_FIELD(decode.coverage_penalty), kCall, at_least(0),
     "GNMT coverage penalty beta (0 = off)"},
    {ATTNMT_FIELD(decode.max_length_ratio), kCall, at_least(0),
     "Hypotheses stop at ratio * source length + 5 tokens"},
    {ATTNMT_FIELD(decode.batch_size), kCall, at_least(1),
     "Sentences decoded together"},
    {ATTNMT_FIELD(decode.workers), kLoad, at_least(0, "0 = one per thread on a CPU"),
     "Batches decoded at once, each by a thread of its own"},
    {ATTNMT_FIELD(decode.precision), kLoad, one_of("fp32|bf16|int8|auto"),
     "The encoder's and decoder step's matrix products in fp32, bfloat16 or int8; auto: the fastest this CPU has (int8 from AVX2 up)"},
    {ATTNMT_FIELD(decode.packed_weights), kLoad, any(),
     "CPU: the LSTM encoder's and decoder step's weights packed once for oneDNN"},
    {ATTNMT_FIELD(decode.n_best), kCall, any(),
     "Hypotheses written per input line", "1 .. `decode.beam_size`; sampling: >= 1"},
    {ATTNMT_FIELD(decode.shortlist), kLoad, any(),
     "Vocabulary shortlist, as Marian's lexical shortlists"},
    {ATTNMT_FIELD(decode.shortlist_first), kLoad, at_least(0),
     "With `decode.shortlist`: how many of the most frequent target subwords every batch keeps"},
    {ATTNMT_FIELD(decode.shortlist_best), kLoad, at_least(0),
     "With `decode.shortlist`: how many translations of each source subword"},
    {ATTNMT_FIELD(decode.min_length), kCall, at_least(0),
     "No end of sentence before this many target tokens", "<= `decode.max_length` when that is set"},
    {ATTNMT_FIELD(decode.max_length), kCall, at_least(0, "0 = no cap"),
     "At most this many target tokens, besides `max_length_ratio` (the smaller limit wins)"},
    {ATTNMT_FIELD(decode.no_repeat_ngram_size), kCall, at_least(0, "0 = off"),
     "No n-gram of this many tokens twice in a hypothesis"},
    {ATTNMT_FIELD(decode.sampling), kCall, any(),
     "Random sampling instead of greedy/beam search"},
    {ATTNMT_FIELD(decode.temperature), kCall, above(0),
     "Sampling: tokens are drawn from softmax(logits / temperature)"},
    {ATTNMT_FIELD(decode.top_k), kCall, at_least(0, "0 = all"),
     "Sampling: only the k likeliest tokens of a step may be drawn"},
    {ATTNMT_FIELD(decode.top_p), kCall, in_oc(0, 1),
     "Sampling: only the smallest set of likeliest tokens whose probability reaches top_p"},
    {ATTNMT_FIELD(decode.epsilon), kCall, in_co(0, 1, "0 = off"),
     "Sampling: epsilon sampling (Hewitt et al., 2022)"},
    {ATTNMT_FIELD(decode.seed), kCall, any(),
     "Sampling: the seed"},
    {ATTNMT_FIELD(decode.mbr), kCall, one_of("none|bleu|chrf"),
     "Minimum Bayes risk decoding"},
    {ATTNMT_FIELD(decode.mbr_candidates), kCall, any(),
     "With `decode.mbr`: the hypotheses compared: the best N of the beam, or N samples", "beam search: 0 .. `decode.beam_size` (0 = the whole beam); sampling: >= 2"},
    {ATTNMT_FIELD(decode.search_rules), kCall, one_of("attnmt|opennmt|opennmt3|joeynmt|fairseq"),
     "Whose rules beam and greedy search follow"},
    {ATTNMT_FIELD(decode.ban_unk), kCall, any(),
     "`<unk>` is never generated", "`false` unless `decode.search_rules` is `opennmt`, `opennmt3` or `joeynmt`"},
    {ATTNMT_FIELD(decode.unk_penalty), kCall, any(),
     "Subtracted from `<unk>`'s log-probability at every step (fairseq's `--unkpen`)", "0 unless `decode.search_rules` is `fairseq`"},
    {ATTNMT_FIELD(decode.wait_k), kLoad, at_least(0, "0 = the hard-attention head's policy"),
     "`translate --streaming`: the wait-k policy, read k source tokens, then write one and read one in turn (`--wait-k` overrides)"},

    {ATTNMT_FIELD(distributed.backend), kTrain, one_of("auto|gloo|nccl"),
     "c10d backend; `auto` = NCCL on CUDA when LibTorch has it, else Gloo"},
    {ATTNMT_FIELD(distributed.timeout), kTrain, above(0, "seconds"),
     "Seconds a collective waits for the other ranks before failing"},
    {ATTNMT_FIELD(distributed.join_timeout), kTrain, above(0, "seconds"),
     "Seconds the ranks wait for each other at the start before failing, naming the ranks that did not come"},
    {ATTNMT_FIELD(distributed.bucket_mb), kTrain, above(0),
     "Gradients are all-reduced in buckets of about this many MiB"},
    {ATTNMT_FIELD(distributed.compress), kTrain, one_of("none|fp16"),
     "`fp16`: the gradients are all-reduced as fp16, half the bytes on the wire, scaled by a power of two "
     "that puts the largest at 2^14 / ranks (one more all-reduce of a number); `none`: fp32, exact. "
     "Gloo cannot reduce bf16 ([training.md](training.md#gradient-compression))"},

    {ATTNMT_FIELD(threads), kLoad, at_least(0, "0 = number of cores"),
     "Intra-op threads"},

    {ATTNMT_FIELD(gemm), kLoad, one_of("auto|onednn|blas"),
     "What runs LibTorch's fp32 matrix products on a CPU"},

    {ATTNMT_FIELD(device), kLoad, any(),
     "Where the model runs", "`cpu`, `cuda`, `cuda:N`"},
};

#undef ATTNMT_FIELD

// Comment lines written by config_to_yaml before a section (or top-level key).
struct KeyComment {
  const char* key;
  const char* text;
};
const KeyComment kComments[] = {
    {"data",
     "Parallel corpora, one sentence per line (plain or .gz); paths relative to the "
     "working directory"},
    {"tokenizer", "SentencePiece subword model(s), trained on data.train"},
    {"model", "Embeddings, RNN encoder and decoder, attention (see docs/config.md)"},
    {"train", "Optimisation, validation, checkpoints"},
    {"decode", "Beam search (translate, and the test set at the end of training)"},
    {"distributed", "Data-parallel training (attnmt train --nproc N | --distributed)"},
    {"threads", "Runtime"},
};

const Field* find_field(std::string_view key) {
  for (const Field& f : kFields) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

// Every proper prefix of a key ("model", "model.encoder", ...), in table order.
const std::vector<std::string>& section_keys() {
  static const std::vector<std::string> sections = [] {
    std::vector<std::string> out;
    for (const Field& f : kFields) {
      std::string_view key = f.key;
      for (size_t dot = key.find('.'); dot != std::string_view::npos;
           dot = key.find('.', dot + 1)) {
        std::string prefix(key.substr(0, dot));
        if (std::find(out.begin(), out.end(), prefix) == out.end()) out.push_back(prefix);
      }
    }
    return out;
  }();
  return sections;
}

bool is_section(std::string_view key) {
  const auto& sections = section_keys();
  return std::find(sections.begin(), sections.end(), key) != sections.end();
}

// ---------------------------------------------------------------------------------------------
// "Did you mean": closest key by edit distance

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// neighbours ("modle" -> "model" is 1) each cost 1.
size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t width = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * width);
  auto at = [&](size_t i, size_t j) -> size_t& { return d[i * width + j]; };
  for (size_t i = 0; i <= a.size(); ++i) at(i, 0) = i;
  for (size_t j = 0; j <= b.size(); ++j) at(0, j) = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(a.size(), b.size());
}

std::string_view leaf_of(std::string_view key) {
  size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

// A typo in the full path (model.encoder.hiden_size), else a known leaf name under the wrong
// section (model.hidden_size -> model.encoder.hidden_size). Empty if nothing is close.
std::string suggest_key(const std::string& unknown) {
  std::vector<std::string> candidates = config_keys();
  const auto& sections = section_keys();
  candidates.insert(candidates.end(), sections.begin(), sections.end());

  const std::string_view leaf = leaf_of(unknown);
  const size_t threshold = std::max<size_t>(1, std::min<size_t>(3, leaf.size() / 3));

  std::string best;
  size_t best_score = threshold + 1;
  for (const auto& candidate : candidates) {
    size_t d = edit_distance(unknown, candidate);
    if (d < best_score) best_score = d, best = candidate;
  }
  if (!best.empty()) return best;

  size_t best_full = SIZE_MAX;
  best_score = threshold + 1;
  for (const auto& candidate : candidates) {
    size_t d = edit_distance(leaf, leaf_of(candidate));
    size_t full = edit_distance(unknown, candidate);
    if (d > threshold) continue;
    if (d < best_score || (d == best_score && full < best_full)) {
      best_score = d, best_full = full, best = candidate;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Where a value came from (the YAML file or one override), for error messages

// A config's first key may name the config it builds on (config inheritance).
constexpr const char* kBaseKey = "base";

struct Source {
  std::string label;  // "'cfg.yaml'" or "override 'train.max_steps=abc'"
  bool has_lines;     // YAML marks are meaningful (a file, not a one-line override)
};

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

std::string at_line(const Source& source, const YAML::Mark& mark) {
  if (!source.has_lines || mark.is_null() || mark.line < 0) return "";
  return " at line " + std::to_string(mark.line + 1);
}

std::string line_suffix(const Source& source, const YAML::Mark& mark) {
  if (!source.has_lines || mark.is_null() || mark.line < 0) return "";
  return " (line " + std::to_string(mark.line + 1) + ")";
}

[[noreturn]] void throw_unknown_key(const std::string& key, const Source& source,
                                    const YAML::Mark& mark) {
  std::string message =
      "unknown key " + in_quotes(key) + " in " + source.label + at_line(source, mark);
  if ((find_field(key) || is_section(key)) && key.find('.') != std::string::npos) {
    message += " (write nested maps, not dotted keys)";
  } else if (std::string suggestion = suggest_key(key); !suggestion.empty()) {
    message += " (did you mean " + in_quotes(suggestion) + "?)";
  }
  throw InputError(message);
}

[[noreturn]] void throw_syntax_error(const Source& source, const YAML::Exception& e) {
  std::string where;
  if (!e.mark.is_null()) {
    where = " at line " + std::to_string(e.mark.line + 1) + ", column " +
            std::to_string(e.mark.column + 1);
  }
  throw InputError(source.label + ": YAML syntax error" + where + ": " + e.msg);
}

// What a non-scalar (or empty) node is, for "expected X, got Y".
std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "an empty value";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      return in_quotes(node.Scalar());
    default:
      return "nothing";
  }
}

// ---------------------------------------------------------------------------------------------
// Scalars: strict parsing (no octal/hex, no "2.5" for an integer)

std::string format_double(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  // The shortest text that reads back exactly, in fixed notation for exponents in [-4, 16)
  // like Python's repr: 0.0003, 0.1, 1e-05.
  char buffer[400];
  auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  const char* e = std::find(buffer, result.ptr, 'e');  // "3e-04", "1e+20"
  int exponent = 0;
  std::from_chars(e + (e[1] == '+' ? 2 : 1), result.ptr, exponent);
  if (exponent >= -4 && exponent < 16) {
    result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed);
  }
  std::string text(buffer, result.ptr);
  // Keep it a YAML float to other readers too ("1" -> "1.0").
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

template <class Int>
bool parse_integer(std::string_view text, Int& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '+') return false;
  auto result = std::from_chars(text.data(), text.data() + text.size(), out, /*base=*/10);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

bool parse_double(std::string_view text, double& out) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == ".inf" || lower == "+.inf" || lower == "-.inf" || lower == ".nan") {
    out = lower == ".nan" ? std::nan("") : lower[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  // Only decimal notation: from_chars alone would also take "inf", "nan(...)".
  if (text.empty() || text.find_first_not_of("0123456789+-.eE") != std::string_view::npos) {
    return false;
  }
  if (text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '+') return false;
  auto result =
      std::from_chars(text.data(), text.data() + text.size(), out, std::chars_format::general);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

void set_field(Config& config, const Field& field, const YAML::Node& node, const Source& source,
               const YAML::Mark& mark) {
  auto fail = [&](const char* expected) {
    throw InputError(source.label + ": " + field.key + ": expected " + expected + ", got " +
                     describe(node) + line_suffix(source, mark));
  };
  FieldRef ref = field.ref(config);
  if (auto* s = std::get_if<std::string*>(&ref)) {
    if (node.IsNull()) return void(**s = "");  // "src:" / "src: ~" = not set
    if (!node.IsScalar()) fail("a string");
    **s = node.Scalar();
    return;
  }
  if (!node.IsScalar()) {
    fail(std::holds_alternative<bool*>(ref)     ? "a boolean (true/false)"
         : std::holds_alternative<double*>(ref) ? "a number"
         : std::holds_alternative<int*>(ref)    ? "an integer"
                                                : "a non-negative integer");
  }
  const std::string& text = node.Scalar();
  if (auto* b = std::get_if<bool*>(&ref)) {
    // yaml-cpp's own rule: true/false, yes/no, on/off, y/n (any of lower, Title or UPPER case).
    if (!YAML::convert<bool>::decode(node, **b)) fail("a boolean (true/false)");
  } else if (auto* d = std::get_if<double*>(&ref)) {
    if (!parse_double(text, **d)) fail("a number");
  } else if (auto* i = std::get_if<int*>(&ref)) {
    if (!parse_integer(text, **i)) fail("an integer");
  } else if (auto* u = std::get_if<std::uint64_t*>(&ref)) {
    if (!parse_integer(text, **u)) fail("a non-negative integer");
  }
}

// data.train as a list of corpora: [{src: a.de, tgt: a.en, weight: 2}, {src: ..., tgt: ...}].
void set_train_list(Config& config, const YAML::Node& list, const Source& source, const YAML::Mark& mark) {
  if (list.size() == 0) throw InputError(source.label + ": data.train: the list of corpora is empty" + line_suffix(source, mark));
  std::vector<CorpusConfig> corpora;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string where = "data.train item " + std::to_string(i + 1);
    if (!item.IsMap()) {
      throw InputError(source.label + ": " + where + ": expected a map {src, tgt, weight}, got " + describe(item) +
                       line_suffix(source, item.Mark()));
    }
    CorpusConfig corpus;
    std::set<std::string> seen;
    for (const auto& entry : item) {
      const std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "";
      const YAML::Node& value = entry.second;
      const auto at = line_suffix(source, entry.first.Mark());
      if (!seen.insert(name).second) throw InputError(source.label + ": " + where + ": duplicate key " + in_quotes(name) + at);
      if (name == "src" || name == "tgt") {
        if (!value.IsScalar() || value.Scalar().empty()) {
          throw InputError(source.label + ": " + where + ": " + name + ": expected a path, got " + describe(value) + at);
        }
        (name == "src" ? corpus.src : corpus.tgt) = value.Scalar();
      } else if (name == "weight") {
        if (!value.IsScalar() || !parse_double(value.Scalar(), corpus.weight) || !(corpus.weight > 0) ||
            !std::isfinite(corpus.weight)) {
          throw InputError(source.label + ": " + where + ": weight must be a number > 0, got " + describe(value) + at);
        }
      } else {
        throw InputError(source.label + ": " + where + ": unknown key " + in_quotes(name) +
                         " (a corpus has src, tgt and weight)" + at);
      }
    }
    for (const char* side : {"src", "tgt"}) {
      if (!seen.count(side)) {
        throw InputError(source.label + ": " + where + ": missing " + side + line_suffix(source, item.Mark()));
      }
    }
    corpora.push_back(std::move(corpus));
  }
  config.data.train = corpora.front();
  config.data.more_train.assign(corpora.begin() + 1, corpora.end());
}

// Applies the keys of `map` (the contents of section `prefix`, "" for the top level).
void apply_map(Config& config, const YAML::Node& map, const std::string& prefix,
               const Source& source) {
  std::set<std::string> seen;
  for (const auto& entry : map) {
    const YAML::Node& key_node = entry.first;
    const YAML::Node& value = entry.second;
    const YAML::Mark mark = key_node.Mark();
    const std::string where = prefix.empty() ? "the top level" : in_quotes(prefix);
    if (!key_node.IsScalar()) {
      throw InputError(source.label + ": keys in " + where + " must be names, got " +
                       describe(key_node) + line_suffix(source, mark));
    }
    const std::string& name = key_node.Scalar();
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    if (!seen.insert(name).second) {
      throw InputError(source.label + ": duplicate key " + in_quotes(key) +
                       line_suffix(source, mark));
    }
    if (name.empty() || name.find('.') != std::string::npos) throw_unknown_key(key, source, mark);
    if (prefix.empty() && name == kBaseKey) continue;  // applied first, by apply_config_text

    if (const Field* field = find_field(key)) {
      set_field(config, *field, value, source, mark);
    } else if (key == "data.train" && value.IsSequence()) {
      set_train_list(config, value, source, mark);
    } else if (is_section(key)) {
      if (value.IsNull()) continue;  // "test:" with nothing under it
      if (!value.IsMap()) {
        throw InputError(source.label + ": " + key + ": expected a map of keys, got " +
                         describe(value) + line_suffix(source, mark));
      }
      apply_map(config, value, key, source);
    } else {
      throw_unknown_key(key, source, mark);
    }
  }
}

std::string trim(std::string_view s) {
  const char* space = " \t\r\n";
  size_t begin = s.find_first_not_of(space);
  if (begin == std::string_view::npos) return "";
  size_t end = s.find_last_not_of(space);
  return std::string(s.substr(begin, end - begin + 1));
}

void apply_override(Config& config, const std::string& override_text) {
  const size_t eq = override_text.find('=');
  const std::string key = eq == std::string::npos ? "" : trim(override_text.substr(0, eq));
  if (key.empty()) {
    throw InputError("malformed override " + in_quotes(override_text) +
                     ": expected key=value, e.g. train.max_steps=100");
  }
  const Source source{"override " + in_quotes(override_text), /*has_lines=*/false};
  const Field* field = find_field(key);
  if (!field && !is_section(key)) throw_unknown_key(key, source, YAML::Mark::null_mark());

  if (find_invalid_utf8(override_text) != std::string::npos || override_text.find('\0') != std::string::npos) {
    throw InputError(source.label + ": invalid UTF-8");  // yaml-cpp may loop forever on it
  }
  YAML::Node value;
  try {
    value = YAML::Load(override_text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw_syntax_error(source, e);
  }
  if (field) {
    set_field(config, *field, value, source, YAML::Mark::null_mark());
  } else if (key == "data.train" && value.IsSequence()) {
    set_train_list(config, value, source, YAML::Mark::null_mark());
  } else if (!value.IsNull()) {
    if (!value.IsMap()) {
      throw InputError(source.label + ": " + key + ": expected a map of keys, got " +
                       describe(value));
    }
    apply_map(config, value, key, source);
  }
}

// ---------------------------------------------------------------------------------------------
// Validation helpers: "<key> must be <what>, got <value>"

[[noreturn]] void invalid(const std::string& key, const std::string& what, const std::string& got) {
  throw InputError(key + " must be " + what + ", got " + got);
}

void check_int(bool ok, const char* key, const char* what, long long value) {
  if (!ok) invalid(key, what, std::to_string(value));
}

// A bound as messages and the docs write it: "0", "20", "0.5".
std::string bound_text(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? std::to_string(static_cast<long long>(v)) : format_double(v);
}

std::vector<std::string> choices_of(const Rule& rule) {
  std::vector<std::string> out;
  for (std::string_view rest = rule.choices; !rest.empty();) {
    const size_t bar = std::min(rest.find('|'), rest.size());
    out.emplace_back(rest.substr(0, bar));
    rest.remove_prefix(std::min(bar + 1, rest.size()));
  }
  return out;
}

// "in [0, 1) (0 = off)", "one of {adam, sgd}"; markdown: the choices as "`adam`, `sgd`".
std::string rule_text(const Rule& rule, bool markdown) {
  std::string text;
  switch (rule.kind) {
    case Rule::kAny: return "";
    case Rule::kAtLeast: text = ">= " + bound_text(rule.lo); break;
    case Rule::kAbove: text = "> " + bound_text(rule.lo); break;
    case Rule::kHalfOpen: text = "in [" + bound_text(rule.lo) + ", " + bound_text(rule.hi) + ")"; break;
    case Rule::kOpenClosed: text = "in (" + bound_text(rule.lo) + ", " + bound_text(rule.hi) + "]"; break;
    case Rule::kClosed: text = "in [" + bound_text(rule.lo) + ", " + bound_text(rule.hi) + "]"; break;
    case Rule::kChoice:
      for (const auto& choice : choices_of(rule)) {
        text += (text.empty() ? "" : ", ") + (markdown ? "`" + choice + "`" : choice);
      }
      if (!markdown) text = "one of {" + text + "}";
      break;
  }
  if (rule.note) text += std::string(" (") + rule.note + ")";
  return text;
}

// Written as "ok" conditions so that NaN (every comparison false) is refused too.
bool within(const Rule& rule, double v) {
  if (!std::isfinite(v)) return false;
  switch (rule.kind) {
    case Rule::kAtLeast: return v >= rule.lo;
    case Rule::kAbove: return v > rule.lo;
    case Rule::kHalfOpen: return v >= rule.lo && v < rule.hi;
    case Rule::kOpenClosed: return v > rule.lo && v <= rule.hi;
    case Rule::kClosed: return v >= rule.lo && v <= rule.hi;
    default: return true;
  }
}

// The field's value against its rule: "<key> must be <rule>, got <value>".
void check_rule(Config& config, const Field& field) {
  const Rule& rule = field.rule;
  if (rule.kind == Rule::kAny) return;
  const FieldRef ref = field.ref(config);
  if (auto* s = std::get_if<std::string*>(&ref)) {
    const auto choices = choices_of(rule);
    if (std::find(choices.begin(), choices.end(), **s) == choices.end()) {
      invalid(field.key, rule_text(rule, false), in_quotes(**s));
    }
  } else if (auto* i = std::get_if<int*>(&ref)) {
    if (!within(rule, **i)) invalid(field.key, rule_text(rule, false), std::to_string(**i));
  } else if (auto* d = std::get_if<double*>(&ref)) {
    if (!within(rule, **d)) invalid(field.key, rule_text(rule, false), format_double(**d));
  } else {
    throw std::logic_error(std::string("config key table: ") + field.key + " has a rule its type cannot have");
  }
}

bool is_device(const std::string& device) {
  if (device == "cpu" || device == "cuda") return true;
  if (device.rfind("cuda:", 0) != 0 || device.size() == 5) return false;
  return device.find_first_not_of("0123456789", 5) == std::string::npos;
}

void check_readable(const std::string& key, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(key + ": cannot read " + in_quotes(path) + ": " + std::strerror(EISDIR));
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    throw InputError(key + ": cannot read " + in_quotes(path) + ": " + std::strerror(errno));
  }
  std::fclose(file);
}

// Receives a document's parse events and ignores them (parse_config counts documents with it).
struct DocumentCounter : YAML::EventHandler {
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// "key=value", the value a YAML scalar as an override's value is parsed.
std::string setting(const Field& f, Config& config) {
  YAML::Emitter value;
  value << YAML::DoublePrecision(17);
  std::visit([&](auto* p) { value << *p; }, f.ref(config));
  return std::string(f.key) + "=" + value.c_str();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const Field& f : kFields) keys.emplace_back(f.key);
  return keys;
}

const std::vector<KeyInfo>& config_key_table() {
  static const std::vector<KeyInfo> table = [] {
    Config defaults;
    std::vector<KeyInfo> out;
    for (const Field& f : kFields) {
      KeyInfo info;
      info.key = f.key;
      info.scope = f.scope;
      info.help = f.help;
      const FieldRef ref = f.ref(defaults);
      info.type = std::holds_alternative<int*>(ref)             ? "int"
                  : std::holds_alternative<std::uint64_t*>(ref) ? "uint64"
                  : std::holds_alternative<double*>(ref)        ? "float"
                  : std::holds_alternative<bool*>(ref)          ? "bool"
                                                                : "string";
      if (auto* d = std::get_if<double*>(&ref)) {
        info.default_value = format_double(**d);
      } else {
        const std::string set = setting(f, defaults);
        info.default_value = set.substr(set.find('=') + 1);
        if (info.default_value == "\"\"") info.default_value.clear();
      }
      info.allowed = rule_text(f.rule, /*markdown=*/true);
      if (f.also) info.allowed += (info.allowed.empty() ? "" : "; ") + std::string(f.also);
      out.push_back(std::move(info));
    }
    return out;
  }();
  return table;
}

const KeyInfo* find_key_info(std::string_view key) {
  for (const KeyInfo& info : config_key_table()) {
    if (info.key == key) return &info;
  }
  return nullptr;
}

bool may_change(std::string_view key, KeyScope at) {
  bool any = false;
  for (const Field& f : kFields) {
    const std::string_view k = f.key;
    const bool under = k == key || (k.size() > key.size() && k.compare(0, key.size(), key) == 0 && k[key.size()] == '.');
    if (!under) continue;
    if (f.scope < at) return false;
    any = true;
  }
  return any;
}

bool is_key_or_section(std::string_view key) { return find_field(key) || is_section(key); }

std::vector<std::string> keys_that_may_change(KeyScope at) {
  std::vector<std::string> out;
  for (const KeyInfo& info : config_key_table()) {
    if (info.scope >= at) out.push_back(info.key);
  }
  return out;
}

std::string describe_keys(const std::vector<std::string>& keys) {
  // A section whose keys are all listed is written "section.*" (first); the other keys after it.
  std::vector<std::string> wildcards, singles;
  auto listed = [&](const std::string& key) { return std::find(keys.begin(), keys.end(), key) != keys.end(); };
  for (const std::string& key : keys) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
      singles.push_back(key);
      continue;
    }
    const std::string section = key.substr(0, dot + 1);
    bool whole = true;
    for (const Field& f : kFields) {
      if (std::string_view(f.key).rfind(section, 0) == 0) whole = whole && listed(f.key);
    }
    if (!whole) {
      singles.push_back(key);
    } else if (std::find(wildcards.begin(), wildcards.end(), section + "*") == wildcards.end()) {
      wildcards.push_back(section + "*");
    }
  }
  wildcards.insert(wildcards.end(), singles.begin(), singles.end());
  std::string text;
  for (size_t i = 0; i < wildcards.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == wildcards.size() ? " and " : ", ") + wildcards[i];
  }
  return text;
}

std::vector<std::string> config_settings(const Config& config_in, const std::string& prefix) {
  Config config = config_in;  // the field table hands out non-const pointers
  std::vector<std::string> out;
  for (const Field& f : kFields) {
    if (std::string_view(f.key).rfind(prefix, 0) == 0) out.push_back(setting(f, config));
  }
  return out;
}

namespace {

// The YAML text's one document, a map (InputError naming the source otherwise).
YAML::Node parse_root(const std::string& yaml_text, const Source& source) {
  // A config is text: bad bytes are rejected here, by line, before the parser sees them.
  if (const auto bad = find_invalid_utf8(yaml_text); bad != std::string::npos || yaml_text.find('\0') != std::string::npos) {
    const size_t at = std::min(bad, yaml_text.find('\0'));
    const size_t line = 1 + static_cast<size_t>(std::count(yaml_text.begin(), yaml_text.begin() + at, '\n'));
    const size_t line_start = yaml_text.rfind('\n', at == 0 ? 0 : at - 1);
    const size_t column = at - (line_start == std::string::npos || at == 0 ? 0 : line_start + 1);
    throw InputError(source.label + " line " + std::to_string(line) + ": " +
                     (yaml_text[at] == '\0' ? "NUL byte" : "invalid UTF-8") + " at byte " + std::to_string(column));
  }
  // The first document, and whether there is a second. Not YAML::LoadAll: yaml-cpp 0.7's parser
  // can return empty documents forever without consuming input (",#++" -- found by
  // tools/fuzz/fuzz_config), so documents are counted with a cap.
  YAML::Node root;
  size_t documents = 0;
  try {
    root = YAML::Load(yaml_text);
    std::istringstream in(yaml_text);
    YAML::Parser parser(in);
    DocumentCounter counter;
    while (documents < 2 && parser.HandleNextDocument(counter)) ++documents;
  } catch (const YAML::Exception& e) {
    throw_syntax_error(source, e);
  }
  if (documents > 1) {
    throw InputError(source.label + ": expected one YAML document, found more (separated by '---'?)");
  }
  if (root.IsNull()) {
    throw InputError(source.label +
                     ": the config is empty (expected a map of keys such as "
                     "'data:', 'model:', 'train:')");
  }
  if (!root.IsMap()) {
    throw InputError(source.label +
                     ": the top level must be a map of keys (such as 'data:', "
                     "'model:', 'train:'), got " +
                     describe(root));
  }
  return root;
}

std::string read_config_text(const std::string& path);

// Applies a config's text to `config`: first its `base:` chain (each path relative to the file
// that names it), then its own keys. `chain`: the files being applied, outermost first.
void apply_config_text(Config& config, const std::string& yaml_text, const std::string& source_name,
                       std::vector<std::string>& chain) {
  const Source source{in_quotes(source_name), /*has_lines=*/true};
  const YAML::Node root = parse_root(yaml_text, source);
  if (const YAML::Node base = root[kBaseKey]) {
    if (!base.IsScalar() || base.Scalar().empty()) {
      throw InputError(source.label + ": base: expected the path of a config file, got " + describe(base) +
                       line_suffix(source, base.Mark()));
    }
    const auto here = std::filesystem::path(source_name).parent_path();
    const auto path = (std::filesystem::path(base.Scalar()).is_absolute() ? std::filesystem::path(base.Scalar())
                                                                          : here / base.Scalar())
                          .lexically_normal()
                          .string();
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(path, ec).string();
    if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
      std::string names;
      for (const auto& c : chain) names += c + " -> ";
      throw InputError(source.label + ": base: a cycle of configs: " + names + canonical);
    }
    chain.push_back(canonical);
    apply_config_text(config, read_config_text(path), path, chain);
    chain.pop_back();
  }
  apply_map(config, root, /*prefix=*/"", source);
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides) {
  Config config;
  std::error_code ec;
  std::vector<std::string> chain{std::filesystem::weakly_canonical(source_name, ec).string()};
  apply_config_text(config, yaml_text, source_name, chain);
  for (const auto& override_text : overrides) apply_override(config, override_text);
  try {
    validate_config(config);
  } catch (const InputError& e) {
    throw InputError(in_quotes(source_name) + ": " + e.what());
  }
  return config;
}

namespace {

std::string read_config_text(const std::string& path) {
  auto cannot_read = [&](int error) {
    throw InputError("cannot read config " + in_quotes(path) + ": " + std::strerror(error));
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) cannot_read(EISDIR);
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) cannot_read(errno);
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(file);
  const int error = errno;
  std::fclose(file);
  if (failed) cannot_read(error);
  return text;
}

}  // namespace

namespace {

// The leaves of `map` (section `prefix`) as "key=value" settings, in file order.
void collect_settings(const YAML::Node& map, const std::string& prefix, const Source& source,
                      std::vector<std::string>& out) {
  for (const auto& entry : map) {
    const YAML::Mark mark = entry.first.Mark();
    if (!entry.first.IsScalar()) {
      throw InputError(source.label + ": keys must be names, got " + describe(entry.first) + line_suffix(source, mark));
    }
    const std::string key = prefix.empty() ? entry.first.Scalar() : prefix + "." + entry.first.Scalar();
    if (find_field(key)) {
      if (!entry.second.IsScalar()) {
        throw InputError(source.label + ": " + key + ": expected a value, got " + describe(entry.second) +
                         line_suffix(source, mark));
      }
      out.push_back(key + "=" + YAML::Dump(entry.second));
    } else if (is_section(key) && entry.second.IsMap()) {
      collect_settings(entry.second, key, source, out);
    } else if (!(is_section(key) && entry.second.IsNull())) {
      throw_unknown_key(key, source, mark);
    }
  }
}

}  // namespace

std::vector<std::string> settings_file(const std::string& path) {
  const Source source{in_quotes(path), /*has_lines=*/true};
  const YAML::Node root = parse_root(read_config_text(path), source);
  if (root[kBaseKey]) throw InputError(source.label + ": base: not in a settings file (give every key)");
  std::vector<std::string> out;
  collect_settings(root, "", source, out);
  return out;
}

Config load_config_file(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_config(read_config_text(path), path, overrides);
}

void validate_config(const Config& config) {
  // Before the table's rule, which would only list fp32 and bf16.
  if (config.train.precision == "int8") {
    throw InputError("train.precision: int8 is for decoding only (decode.precision: int8, or translate --precision "
                     "int8); training takes fp32 or bf16");
  }
  Config copy = config;  // the field table hands out non-const pointers
  for (const Field& f : kFields) check_rule(copy, f);

  // The rules between keys (the table's `also` says them in words).
  const Config& c = config;
  const TokenizerConfig& tok = c.tokenizer;
  if (!tok.user_defined_symbols.empty() && tok.type != "sentencepiece") {
    invalid("tokenizer.user_defined_symbols", "empty with tokenizer.type none (it is a SentencePiece option)",
            in_quotes(tok.user_defined_symbols));
  }
  if (tok.user_defined_symbols.find_first_of(" \t") != std::string::npos) {
    invalid("tokenizer.user_defined_symbols", "comma-separated pieces without spaces", in_quotes(tok.user_defined_symbols));
  }
  for (const auto& [key, p] : {std::pair<const char*, double>{"data.src_bpe_dropout", c.data.src_bpe_dropout},
                                {"data.tgt_bpe_dropout", c.data.tgt_bpe_dropout}}) {
    if (p > 0 && (tok.type != "sentencepiece" || tok.model_type != "bpe")) {
      invalid(key, "0 unless tokenizer.type is sentencepiece and tokenizer.model_type bpe (it drops BPE merges)",
              format_double(p));
    }
  }

  const ModelConfig& m = c.model;
  if (m.share_embeddings && !tok.shared) {
    // Two tokenizers give the same id to different pieces: one matrix would mix them.
    invalid("model.share_embeddings", "false unless tokenizer.shared is true (one vocabulary for both sides)", "true");
  }
  const SelfAttentionConfig& sa = m.encoder.self_attention;
  const int encoder_out = m.encoder.hidden_size * (m.encoder.bidirectional ? 2 : 1);
  if (sa.layers > 0 && encoder_out % sa.heads != 0) {
    invalid("model.encoder.self_attention.heads",
            "a divisor of the encoder's output size " + std::to_string(encoder_out) + " (hidden_size x directions)",
            std::to_string(sa.heads));
  }
  if (m.decoder.init == "encoder" || m.decoder.init == "encoder_relu_bridge" || m.decoder.init == "encoder_linear") {
    // Layer l starts from encoder layer l's final state: the stacks must match in depth and cell,
    // and in width unless a projection (encoder_linear) maps one onto the other.
    const bool width = m.decoder.init == "encoder_linear" || encoder_out == m.decoder.hidden_size;
    if (m.encoder.layers != m.decoder.layers || !width || m.encoder.rnn != m.decoder.rnn) {
      invalid("model.decoder.init",
              "not '" + m.decoder.init + "' unless the encoder has the decoder's layers (" +
                  std::to_string(m.decoder.layers) + "), cell (" + m.decoder.rnn + ") and output size (" +
                  std::to_string(m.decoder.hidden_size) + ")",
              m.decoder.init);
    }
  }
  if (m.decoder.init == "last" && encoder_out != m.decoder.hidden_size && encoder_out != 2 * m.decoder.hidden_size) {
    invalid("model.decoder.init",
            "not 'last' unless the encoder's output size (" + std::to_string(encoder_out) +
                ") is the decoder's hidden size or twice it",
            "last");
  }
  // The name itself, the coverage and the dropout rules are the attention registry's (it knows the variants).
  if (m.attention.type.empty()) invalid("model.attention.type", "set (an attention name)", "''");

  const TrainConfig& t = c.train;
  if (t.lr_schedule == "inverse_sqrt" && t.warmup_steps == 0) {
    invalid("train.warmup_steps", "> 0 with train.lr_schedule: inverse_sqrt (lr * sqrt(warmup / step))", "0");
  }
  if (t.lr_schedule == "cosine" && t.max_steps == 0) {
    invalid("train.max_steps", "> 0 with train.lr_schedule: cosine (the cosine ends at it)", "0");
  }
  if (t.lr_schedule == "cosine" && t.min_learning_rate > t.learning_rate) {
    invalid("train.min_learning_rate", "<= train.learning_rate with train.lr_schedule: cosine",
            format_double(t.min_learning_rate));
  }

  const DecodeConfig& d = c.decode;
  if (d.sampling) {  // n_best samples, not beams
    check_int(d.n_best >= 1, "decode.n_best", ">= 1", d.n_best);
  } else {
    check_int(d.n_best >= 1 && d.n_best <= d.beam_size, "decode.n_best",
              ("in [1, decode.beam_size=" + std::to_string(d.beam_size) + "]").c_str(), d.n_best);
  }
  if (d.max_length > 0) {
    check_int(d.min_length <= d.max_length, "decode.min_length",
              ("<= decode.max_length=" + std::to_string(d.max_length)).c_str(), d.min_length);
  }
  if (d.mbr != "none") {
    if (d.sampling) {
      check_int(d.mbr_candidates >= 2, "decode.mbr_candidates", ">= 2 (the samples compared) with decode.sampling",
                d.mbr_candidates);
    } else {
      check_int(d.mbr_candidates >= 0 && d.mbr_candidates <= d.beam_size, "decode.mbr_candidates",
                ("in [0, decode.beam_size=" + std::to_string(d.beam_size) + "] (0 = the whole beam)").c_str(),
                d.mbr_candidates);
    }
    const int candidates = mbr_candidate_count(d.sampling, d.mbr_candidates, d.beam_size);
    check_int(d.n_best <= candidates, "decode.n_best",
              ("<= the hypotheses MBR compares (" + std::to_string(candidates) + ", decode.mbr_candidates)").c_str(),
              d.n_best);
  }
  if (d.search_rules != "fairseq") {
    // fairseq's --max-len-a is 0 by default; every other rule's ratio limit needs a positive ratio.
    if (!(d.max_length_ratio > 0)) {
      invalid("decode.max_length_ratio", ("> 0 with decode.search_rules: " + d.search_rules + " (0 only with fairseq)").c_str(),
              format_double(d.max_length_ratio));
    }
    if (d.unk_penalty != 0) {
      invalid("decode.unk_penalty", ("0 with decode.search_rules: " + d.search_rules + " (a rule of fairseq)").c_str(),
              format_double(d.unk_penalty));
    }
  }
  if (d.search_rules == "fairseq") {
    if (d.ban_unk) invalid("decode.ban_unk", "false with decode.search_rules: fairseq (its --unkpen is decode.unk_penalty)", "true");
    check_int(d.max_length > 0 || d.max_length_ratio > 0, "decode.max_length",
              "> 0, or decode.max_length_ratio > 0, with decode.search_rules: fairseq (its --max-len-b and --max-len-a)",
              d.max_length);
  }
  if (d.search_rules == "attnmt") {
    if (d.ban_unk) {
      invalid("decode.ban_unk", "false with decode.search_rules: attnmt (a rule of opennmt, opennmt3 and joeynmt)", "true");
    }
  } else {  // what the toolkits' rules (decoding/toolkit_search.h) do not do
    const std::string with = " with decode.search_rules: " + d.search_rules;
    // joeynmt: 0 = Joey NMT's own default (decoding/toolkit_search.h)
    if (d.search_rules == "opennmt" || d.search_rules == "opennmt3") {
      const char* why = d.search_rules == "opennmt" ? " (the toolkit's max_length, its only length limit)"
                                                    : " (the toolkit's max_length)";
      check_int(d.max_length > 0, "decode.max_length", ("> 0" + with + why).c_str(), d.max_length);
    }
    auto refuse = [&](bool on, const char* key, const std::string& off, const std::string& got) {
      if (on) invalid(key, off + with + " (attnmt's rules only)", got);
    };
    refuse(d.sampling, "decode.sampling", "false", "true");
    refuse(d.shortlist, "decode.shortlist", "false", "true");
    refuse(d.coverage_penalty != 0, "decode.coverage_penalty", "0", format_double(d.coverage_penalty));
    refuse(d.no_repeat_ngram_size != 0, "decode.no_repeat_ngram_size", "0", std::to_string(d.no_repeat_ngram_size));
    refuse(d.mbr != "none", "decode.mbr", "none", in_quotes(d.mbr));
  }

  if (!is_device(c.device)) invalid("device", "cpu, cuda or cuda:N", in_quotes(c.device));
}

void check_training_inputs(const Config& config, const std::string& source_name) {
  const std::pair<const char*, const std::string*> required[] = {
      {"train.save_dir", &config.train.save_dir}, {"data.train.src", &config.data.train.src},
      {"data.train.tgt", &config.data.train.tgt}, {"data.valid.src", &config.data.valid.src},
      {"data.valid.tgt", &config.data.valid.tgt},
  };
  for (const auto& [key, value] : required) {
    if (value->empty()) {
      throw InputError(in_quotes(source_name) + ": missing required key " + in_quotes(key));
    }
  }
  // The test set is optional, but half of it is a mistake.
  const CorpusConfig& test = config.data.test;
  if (test.src.empty() != test.tgt.empty()) {
    throw InputError(in_quotes(source_name) + ": missing required key " +
                     in_quotes(test.src.empty() ? "data.test.src" : "data.test.tgt") +
                     " (data.test needs both sides)");
  }
  const std::pair<const char*, const std::string*> files[] = {
      {"data.train.src", &config.data.train.src}, {"data.train.tgt", &config.data.train.tgt},
      {"data.valid.src", &config.data.valid.src}, {"data.valid.tgt", &config.data.valid.tgt},
      {"data.test.src", &config.data.test.src},   {"data.test.tgt", &config.data.test.tgt},
  };
  for (const auto& [key, path] : files) {
    if (!path->empty()) check_readable(key, *path);
  }
  for (size_t i = 0; i < config.data.more_train.size(); ++i) {
    const std::string item = "data.train item " + std::to_string(i + 2);
    check_readable(item + " src", config.data.more_train[i].src);
    check_readable(item + " tgt", config.data.more_train[i].tgt);
  }
}

std::string config_to_yaml(const Config& config_in, bool only_changed) {
  Config config = config_in;  // the field table hands out non-const pointers
  Config defaults;
  YAML::Emitter out;
  out << YAML::Comment(only_changed ? "attnmt configuration: the keys whose values differ from the defaults (docs/config.md)"
                                    : "attnmt configuration: every key, defaults included (docs/config.md)");
  out << YAML::BeginMap;
  std::vector<std::string> open;  // path components of the maps currently open
  // data.train in its list form: several corpora, or one with a weight
  const bool train_list = !config.data.more_train.empty() || config.data.train.weight != 1.0;
  for (const Field& field : kFields) {
    const std::string_view name = field.key;
    if (train_list && name == "data.train.tgt") continue;  // written with data.train.src, in the list
    if (!(train_list && name == "data.train.src") && only_changed && setting(field, config) == setting(field, defaults)) {
      continue;
    }
    std::vector<std::string> parts;
    std::string_view key = field.key;
    for (size_t start = 0;;) {
      size_t dot = key.find('.', start);
      parts.emplace_back(key.substr(start, dot - start));
      if (dot == std::string_view::npos) break;
      start = dot + 1;
    }
    if (train_list && name == "data.train.src") parts.pop_back();  // "data.train" holds the list
    // Close the maps this key is not in, open the ones it is.
    size_t common = 0;
    while (common < open.size() && common + 1 < parts.size() && open[common] == parts[common]) {
      ++common;
    }
    for (; open.size() > common; open.pop_back()) out << YAML::EndMap;
    std::string path;
    for (size_t i = 0; i < parts.size(); ++i) {
      path += (i ? "." : "") + parts[i];
      if (i < open.size()) continue;
      for (const KeyComment& comment : kComments) {
        if (path == comment.key) out << YAML::Newline << YAML::Comment(comment.text);
      }
      out << YAML::Key << parts[i] << YAML::Value;
      if (i + 1 < parts.size()) {
        out << YAML::BeginMap;
        open.push_back(parts[i]);
      }
    }
    FieldRef ref = field.ref(config);
    if (train_list && name == "data.train.src") {
      out << YAML::BeginSeq;
      for (const auto& corpus : training_corpora(config.data)) {
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "src" << YAML::Value << YAML::DoubleQuoted << corpus.src
            << YAML::Key << "tgt" << YAML::Value << YAML::DoubleQuoted << corpus.tgt << YAML::Key << "weight"
            << YAML::Value << format_double(corpus.weight) << YAML::EndMap;
      }
      out << YAML::EndSeq;
    } else if (auto* s = std::get_if<std::string*>(&ref)) {
      out << YAML::DoubleQuoted << **s;
    } else if (auto* b = std::get_if<bool*>(&ref)) {
      out << YAML::TrueFalseBool << **b;
    } else if (auto* d = std::get_if<double*>(&ref)) {
      out << format_double(**d);
    } else if (auto* i = std::get_if<int*>(&ref)) {
      out << **i;
    } else if (auto* u = std::get_if<std::uint64_t*>(&ref)) {
      out << **u;
    }
  }
  for (; !open.empty(); open.pop_back()) out << YAML::EndMap;
  out << YAML::EndMap;
  if (!out.good()) throw RuntimeError("cannot write the config as YAML: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}


namespace {

bool yaml_bool(const std::string& s, bool* out) {
  static const char* const truths[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char* const lies[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  for (const char* t : truths) {
    if (s == t) return *out = true, true;
  }
  for (const char* f : lies) {
    if (s == f) return *out = false, true;
  }
  return false;
}

OptionValue yaml_tree(const YAML::Node& node, int depth, const Source& source) {
  if (depth > 64) throw InputError(source.label + ": nested more than 64 levels deep");
  OptionValue v;
  switch (node.Type()) {
    case YAML::NodeType::Map:
      v.kind = OptionValue::kMap;
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          throw InputError(source.label + ": keys must be names" + line_suffix(source, entry.first.Mark()));
        }
        v.map[entry.first.Scalar()] = yaml_tree(entry.second, depth + 1, source);
      }
      return v;
    case YAML::NodeType::Sequence:
      v.kind = OptionValue::kList;
      for (const auto& item : node) v.list.push_back(yaml_tree(item, depth + 1, source));
      return v;
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      v.s = s;
      v.kind = OptionValue::kString;
      if (node.Tag() == "!") return v;  // quoted: a string whatever it looks like
      if (s == "~" || s == "null" || s == "Null" || s == "NULL") {
        v.kind = OptionValue::kNone;
      } else if (yaml_bool(s, &v.b)) {
        v.kind = OptionValue::kBool;
      } else {
        const char* begin = s.data();
        const char* end = s.data() + s.size();
        int64_t i = 0;
        if (auto r = std::from_chars(begin, end, i); r.ec == std::errc() && r.ptr == end) {
          v.kind = OptionValue::kInt;
          v.i = i;
        } else if (!s.empty() && s.find_first_of("0123456789") != std::string::npos) {
          char* stop = nullptr;
          errno = 0;
          const double d = std::strtod(s.c_str(), &stop);
          if (stop == s.c_str() + s.size() && errno == 0) {
            v.kind = OptionValue::kFloat;
            v.f = d;
          }
        }
      }
      return v;
    }
    default:
      return v;  // null
  }
}

}  // namespace

OptionValue read_yaml_tree(const std::string& path) {
  const Source source{in_quotes(path), /*has_lines=*/true};
  return yaml_tree(parse_root(read_config_text(path), source), 0, source);
}

}  // namespace attnmt
