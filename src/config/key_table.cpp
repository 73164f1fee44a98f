#include "config/key_table.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>

namespace attnmt::config_table {
namespace {

constexpr Rule any() { return {}; }
constexpr Rule at_least(double lo, const char* note = nullptr) { return {Rule::kAtLeast, lo, 0, nullptr, 0, note}; }
constexpr Rule above(double lo, const char* note = nullptr) { return {Rule::kAbove, lo, 0, nullptr, 0, note}; }
constexpr Rule in_co(double lo, double hi, const char* note = nullptr) { return {Rule::kHalfOpen, lo, hi, nullptr, 0, note}; }
constexpr Rule in_oc(double lo, double hi) { return {Rule::kOpenClosed, lo, hi, nullptr, 0, nullptr}; }
constexpr Rule in_cc(double lo, double hi) { return {Rule::kClosed, lo, hi, nullptr, 0, nullptr}; }
template <size_t N>
constexpr Rule one_of(const std::array<std::string_view, N>& names) {
  return {Rule::kChoice, 0, 0, names.data(), N, nullptr};
}
// A key of enum type E (util/choices.h): its names.
template <class E>
constexpr Rule one_of() {
  return one_of(Choice<E>::names);
}
// model.attention.score's names: the attention layer parses them (attention/score.h).
constexpr std::array<std::string_view, 4> kScoreNames{"dot", "scaled_dot", "general", "concat"};

constexpr KeyScope kTrain = KeyScope::train, kLoad = KeyScope::load, kCall = KeyScope::call;

// The stringised member path *is* the key, so the two cannot drift apart.
// clang-format off
#define ATTNMT_FIELD(path) \
  #path, [](Config& c) { return field_ref(&c.path); }, [](const Config& c) { return const_field_ref(&c.path); }
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

    {ATTNMT_FIELD(tokenizer.type), kTrain, one_of<TokenizerType>(),
     "`sentencepiece`: subword models learnt from the raw text"},
    {ATTNMT_FIELD(tokenizer.model_type), kTrain, one_of<SubwordModel>(),
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
    {ATTNMT_FIELD(model.encoder.rnn), kTrain, one_of<RnnType>(),
     "The encoder's recurrent cell"},
    {ATTNMT_FIELD(model.encoder.bidirectional), kTrain, any(),
     "Forward and backward states are concatenated"},
    {ATTNMT_FIELD(model.encoder.separate_directions), kTrain, any(),
     "Each direction a stack of its own, concatenated after the last layer (Marian's `enc-type bidirectional`); `false`: after every layer"},
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
    {ATTNMT_FIELD(model.decoder.rnn), kTrain, one_of<RnnType>(),
     "The decoder's recurrent cell"},
    {ATTNMT_FIELD(model.decoder.style), kTrain, one_of<DecoderStyle>(),
     "`luong`: attention after the RNN step; `bahdanau`: before it; `conditional`: between two cells (Nematus' and Marian's cGRU)"},
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
    {ATTNMT_FIELD(model.decoder.init), kTrain, one_of<DecoderInit>(),
     "The decoder's initial state"},
    {ATTNMT_FIELD(model.decoder.combine_bias), kTrain, any(),
     "The layer that makes h~_t has a bias (OpenNMT-py's `mlp` attention, Joey NMT)"},
    {ATTNMT_FIELD(model.decoder.combine_tanh), kTrain, any(),
     "h~_t = tanh(W_c [c_t; s_t]); `false`: without the tanh (OpenNMT-py's `mlp` attention)"},
    {ATTNMT_FIELD(model.decoder.combine_size), kTrain, at_least(0, "0 = decoder size"),
     "Size of h~_t, the output layer's input (Marian's deep output: its embedding size)"},
    {ATTNMT_FIELD(model.decoder.transitions), kTrain, at_least(0),
     "`conditional` style: cells after the second, without input (Marian's `dec-cell-base-depth` - 2)"},
    {ATTNMT_FIELD(model.attention.type), kTrain, any(),
     "Attention mechanism (formulas: [attention.md](attention.md))", "a registered name: [attention.md](attention.md#what-each-variant-supports) lists them (an unknown name lists the valid ones)"},
    {ATTNMT_FIELD(model.attention.hidden_size), kTrain, at_least(0, "0 = decoder size"),
     "Size of the tanh layer of additive / concat scores"},
    {ATTNMT_FIELD(model.attention.window), kTrain, at_least(1),
     "`local_m` / `local_p`: half-width D of the window"},
    {ATTNMT_FIELD(model.attention.score), kTrain, one_of(kScoreNames),
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
    {ATTNMT_FIELD(model.attention.latency_loss), kTrain, at_least(0, "0 = off"),
     "`milk`: weight lambda of the monotonic head's expected Differentiable Average Lagging, added to the training loss (MILk's latency-augmented training)", "0 unless `model.attention.type` is `milk`"},
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
    {ATTNMT_FIELD(train.optimizer), kTrain, one_of<Optimizer>(),
     "Optimiser"},
    {ATTNMT_FIELD(train.learning_rate), kTrain, above(0),
     "Initial learning rate"},
    {ATTNMT_FIELD(train.clip_norm), kTrain, at_least(0, "0 = off"),
     "Global gradient-norm clipping"},
    {ATTNMT_FIELD(train.label_smoothing), kTrain, in_co(0, 1),
     "Label smoothing of the cross-entropy loss"},
    {ATTNMT_FIELD(train.lr_schedule), kTrain, one_of<LrSchedule>(),
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
    {ATTNMT_FIELD(train.wait_k), kTrain, at_least(0, "0 = whole sentences"),
     "> 0: prefix-to-prefix training (STACL's wait-k): target step t attends to the first k + t - 1 source tokens and the decoder starts from the first k, as `translate --streaming --wait-k-policy prefix` decodes"},
    {ATTNMT_FIELD(train.valid_every), kTrain, above(0),
     "Validate every N updates (and at the end of each epoch)"},
    {ATTNMT_FIELD(train.valid_metric), kTrain, one_of<ValidMetric>(),
     "What \"best\" and early stopping look at"},
    {ATTNMT_FIELD(train.valid_beam_size), kTrain, at_least(1),
     "Beam size for validation BLEU (1 = greedy)"},
    {ATTNMT_FIELD(train.patience), kTrain, at_least(0, "0 = off"),
     "Stop after N validations without improvement"},
    {ATTNMT_FIELD(train.keep_checkpoints), kTrain, at_least(1),
     "Keep the last K step checkpoints (plus `best.pt`)"},
    {ATTNMT_FIELD(train.report_every), kTrain, at_least(1),
     "Log a training line every N updates"},
    {ATTNMT_FIELD(train.precision), kTrain, one_of<TrainPrecision>(),
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
    {ATTNMT_FIELD(decode.precision), kLoad, one_of<DecodePrecision>(),
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
    {ATTNMT_FIELD(decode.mbr), kCall, one_of<MbrMetric>(),
     "Minimum Bayes risk decoding"},
    {ATTNMT_FIELD(decode.mbr_candidates), kCall, any(),
     "With `decode.mbr`: the hypotheses compared: the best N of the beam, or N samples", "beam search: 0 .. `decode.beam_size` (0 = the whole beam); sampling: >= 2"},
    {ATTNMT_FIELD(decode.search_rules), kCall, one_of<SearchRules>(),
     "Whose rules beam and greedy search follow"},
    {ATTNMT_FIELD(decode.ban_unk), kCall, any(),
     "`<unk>` is never generated", "`false` unless `decode.search_rules` is `opennmt`, `opennmt3`, `joeynmt` or `marian`"},
    {ATTNMT_FIELD(decode.unk_penalty), kCall, any(),
     "Subtracted from `<unk>`'s log-probability at every step (fairseq's `--unkpen`)", "0 unless `decode.search_rules` is `fairseq`"},
    {ATTNMT_FIELD(decode.word_penalty), kCall, any(),
     "Subtracted from a hypothesis' log-probability once per target token before length normalisation (marian-decoder's `--word-penalty`)", "0 unless `decode.search_rules` is `marian`"},
    {ATTNMT_FIELD(decode.wait_k), kLoad, at_least(0, "0 = the model's train.wait_k, else the hard-attention head's policy"),
     "`translate --streaming`: the wait-k policy, read k source tokens, then write one and read one in turn (`--wait-k` overrides)"},
    {ATTNMT_FIELD(decode.wait_k_policy), kLoad, one_of<WaitKPolicy>(),
     "wait-k: `replay` restarts the decoder over the longer source prefix after each read and replays the written tokens (any model); `prefix` keeps the decoder across reads, each step attending to the source read by then (STACL's prefix-to-prefix; a unidirectional encoder); `auto`: `prefix` for a model trained with `train.wait_k` whose encoder is unidirectional, else `replay`"},

    {ATTNMT_FIELD(distributed.backend), kTrain, one_of<DistBackend>(),
     "c10d backend; `auto` = NCCL on CUDA when LibTorch has it, else Gloo"},
    {ATTNMT_FIELD(distributed.timeout), kTrain, above(0, "seconds"),
     "Seconds a collective waits for the other ranks before failing"},
    {ATTNMT_FIELD(distributed.join_timeout), kTrain, above(0, "seconds"),
     "Seconds the ranks wait for each other at the start before failing, naming the ranks that did not come"},
    {ATTNMT_FIELD(distributed.bucket_mb), kTrain, above(0),
     "Gradients are all-reduced in buckets of about this many MiB"},
    {ATTNMT_FIELD(distributed.compress), kTrain, one_of<GradCompress>(),
     "`fp16`: the gradients are all-reduced as fp16, half the bytes on the wire, scaled by a power of two "
     "that puts the largest at 2^14 / ranks (one more all-reduce of a number); `none`: fp32, exact. "
     "Gloo cannot reduce bf16 ([training.md](training.md#gradient-compression))"},

    {ATTNMT_FIELD(threads), kLoad, at_least(0, "0 = number of cores"),
     "Intra-op threads"},

    {ATTNMT_FIELD(gemm), kLoad, one_of<GemmBackend>(),
     "What runs LibTorch's fp32 matrix products on a CPU"},

    {ATTNMT_FIELD(device), kLoad, any(),
     "Where the model runs", "`cpu`, `cuda`, `cuda:N`"},
};

#undef ATTNMT_FIELD

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

}  // namespace

FieldRange fields() { return {std::begin(kFields), std::end(kFields)}; }

const Field* find_field(std::string_view key) {
  for (const Field& f : fields()) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

// Every proper prefix of a key ("model", "model.encoder", ...), in table order.
const std::vector<std::string>& section_keys() {
  static const std::vector<std::string> sections = [] {
    std::vector<std::string> out;
    for (const Field& f : fields()) {
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

namespace {
// A bound as messages and the docs write it: "0", "20", "0.5".
std::string bound_text(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? std::to_string(static_cast<long long>(v)) : format_double(v);
}
}  // namespace

std::vector<std::string> choices_of(const Rule& rule) {
  return {rule.choices, rule.choices + rule.choice_count};
}

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
      if (!markdown) {
        text = choices_text(rule.choices, rule.choice_count);
        break;
      }
      for (const auto& choice : choices_of(rule)) text += (text.empty() ? "`" : ", `") + choice + "`";
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

}  // namespace attnmt::config_table

namespace attnmt {

using namespace config_table;

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const Field& f : fields()) keys.emplace_back(f.key);
  return keys;
}

const std::vector<KeyInfo>& config_key_table() {
  static const std::vector<KeyInfo> table = [] {
    Config defaults;
    std::vector<KeyInfo> out;
    for (const Field& f : fields()) {
      KeyInfo info;
      info.key = f.key;
      info.scope = f.scope;
      info.help = f.help;
      const ConstFieldRef ref = f.cref(defaults);
      info.type = std::holds_alternative<const int*>(ref)             ? "int"
                  : std::holds_alternative<const std::uint64_t*>(ref) ? "uint64"
                  : std::holds_alternative<const double*>(ref)        ? "float"
                  : std::holds_alternative<const bool*>(ref)          ? "bool"
                                                                : "string";
      if (auto* d = std::get_if<const double*>(&ref)) {
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
  for (const Field& f : fields()) {
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
    for (const Field& f : fields()) {
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

}  // namespace attnmt
