// The experiment configuration: typed structs with their defaults. Parsed once from YAML by
// config/yaml_io.cpp (the only file that includes yaml-cpp), validated by config/validate.cpp,
// and then passed around as these plain structs. Every field here is a YAML key of the same dotted name
// (e.g. model.encoder.hidden_size); its entry in config/key_table.cpp's key table says when it may
// change, the values it takes and its help line, and docs/config.md shows that table.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/choices.h"

namespace attnmt {

struct CorpusConfig {
  std::string src;  // path of the source-side text file (plain or .gz), one sentence per line
  std::string tgt;  // path of the target-side text file, same number of lines as src
  // data.train as a list of {src, tgt, weight}: this corpus's share of each epoch's pairs,
  // relative to the others' weights (not a key of its own: it only exists in the list form)
  double weight = 1.0;
};

struct DataConfig {
  CorpusConfig train;  // required for training (data.train as a list: its first corpus)
  // data.train given as a list of corpora: the ones after the first, in order
  std::vector<CorpusConfig> more_train;
  CorpusConfig valid;  // required for training (validation perplexity / BLEU)
  CorpusConfig test;   // optional: translated and scored at the end of training when set
  int max_length = 100;  // pairs with more subword tokens than this on either side are skipped
  std::string cache_dir;  // the corpora as token ids, memory-mapped by later runs ("" = TRAIN.SAVE_DIR/cache)
  int batch_window = 0;   // sentences sorted by length together (maxi-batch); 0 = the whole epoch
  // BPE-dropout at training time (data/bpe_dropout.h): each merge of the source's (target's) BPE
  // segmentation skipped with this probability, drawn anew each time a pair is trained on (0 = off)
  double src_bpe_dropout = 0.0;
  double tgt_bpe_dropout = 0.0;
};

// Every training corpus: data.train, then data.more_train.
inline std::vector<CorpusConfig> training_corpora(const DataConfig& data) {
  std::vector<CorpusConfig> all{data.train};
  all.insert(all.end(), data.more_train.begin(), data.more_train.end());
  return all;
}

struct TokenizerConfig {
  // sentencepiece: subword models trained on data.train (raw text in, raw text out);
  // none: the text is already tokenized, a token is a run of non-spaces (data/word_vocab.h)
  TokenizerType type = TokenizerType::sentencepiece;
  SubwordModel model_type = SubwordModel::bpe;  // bpe | unigram (sentencepiece)
  int vocab_size = 8000;               // per model (one shared model, or one per side)
  bool shared = true;                  // one model trained on both sides, or one per side
  double character_coverage = 1.0;     // SentencePiece --character_coverage
  int input_sentence_size = 2000000;   // SentencePiece trains on a seeded sample of this many lines (0 = all)
  std::string user_defined_symbols;    // SentencePiece --user_defined_symbols: pieces kept whole, comma-separated
};

// Multi-head self-attention blocks over the encoder RNN's states (RNMT+-style hybrids):
// x <- LayerNorm(x + Dropout(MultiHead(x, x, x))), keys masked to each sentence's real tokens.
struct SelfAttentionConfig {
  int layers = 0;        // blocks (0 = none: the RNN encoder alone)
  int heads = 4;         // heads per block (the encoder's output size must divide by it)
  double dropout = 0.1;  // on each block's attention output, before the residual sum
};

struct EncoderConfig {
  RnnType rnn = RnnType::lstm;  // lstm | gru
  bool bidirectional = true;  // forward and backward states are concatenated
  // bidirectional: each direction a stack of its own over its own outputs, concatenated after the
  // last layer (Marian's enc-type bidirectional); false: concatenated after every layer, the next
  // layer reading both (PyTorch's, OpenNMT-py's)
  bool separate_directions = false;
  int layers = 2;
  int hidden_size = 256;      // per direction
  double dropout = 0.3;       // between layers and on the encoder output
  // word dropout while training (Sennrich et al. 2016; Marian's dropout-src): the probability that
  // a source token's whole embedding is zeroed (the rest are not rescaled)
  double word_dropout = 0.0;
  SelfAttentionConfig self_attention;
  // Size of the source embeddings (0 = model.embedding_size); converted models may have their
  // own per side (OpenNMT-py's src_word_vec_size, Joey NMT's encoder embedding_dim).
  int embedding_size = 0;
};

struct DecoderConfig {
  RnnType rnn = RnnType::lstm;  // lstm | gru
  // luong (attention after the RNN step) | bahdanau (before) | conditional (between two cells,
  // model/decoder.h)
  DecoderStyle style = DecoderStyle::luong;
  int layers = 2;
  int hidden_size = 256;
  bool input_feeding = true;    // luong style: feed the previous attentional state h~ to the RNN
  double dropout = 0.3;
  double word_dropout = 0.0;    // as the encoder's, on the target tokens fed to the decoder
  // intra-decoder attention over the decoder's own previous states (Paulus et al. 2017, 2.2), its
  // context joining the attentional hidden's input
  bool self_attention = false;
  // The decoder's initial state from the encoder's (docs/convert.md has the toolkits' forms):
  //   bridge               h0 = tanh(W_h f + b_h), c0 = W_c f + b_c per layer (f: the top encoder
  //                        layer's final states, directions concatenated)
  //   encoder              each layer's h0 (and c0) = the same encoder layer's final h (and c),
  //                        directions concatenated (OpenNMT-py)
  //   encoder_relu_bridge  the same through OpenNMT-py's bridge: ReLU(W s + b) on the stacked
  //                        final states, one W for h and one for c
  //   encoder_linear       each layer's h0 = W_h h_l + b_h (and c0 = W_c c_l + b_c), one W for
  //                        every layer, no activation (fairseq's encoder_hidden_proj / _cell_proj)
  //   tanh_bridge          h0 = c0 = tanh(W f + b), the same for every layer (Joey NMT's bridge)
  //   last                 h0 = c0 = f (its forward half when f is twice the decoder size; Joey NMT)
  //   zero                 h0 = c0 = 0
  //   mean_bridge          h0 = c0 = tanh(W mean_j(h_j) + b), the encoder's states averaged over the
  //                        source positions, the same for every layer (Nematus, Marian's s2s)
  DecoderInit init = DecoderInit::bridge;
  // conditional style: cells after the second, with no input of their own (Marian's
  // dec-cell-base-depth - 2, the "deep transition" of Miceli Barone et al. 2017)
  int transitions = 0;
  // The layer that makes the attentional hidden h~ (luong: W_c [c_t; s_t]): with a bias, and
  // through tanh or not (OpenNMT-py's mlp attention has a bias and no tanh; Joey NMT bias and tanh).
  bool combine_bias = false;
  bool combine_tanh = true;
  // The size of h~ (0 = hidden_size): the output layer's input (Marian's deep output is at its
  // embedding size).
  int combine_size = 0;
};

struct AttentionConfig {
  std::string type = "luong_general";  // one of the registered names (attention/registry.cpp)
  int hidden_size = 0;        // additive/concat scores: size of the tanh layer (0 = decoder size)
  int window = 10;            // local_m / local_p: half-width D of the window
  std::string score = "general";  // local_m / local_p / forced_forward: dot | scaled_dot | general | concat
  int max_positions = 128;    // luong_location: source positions with their own score (longer share the last)
  bool hard_decode = true;    // monotonic: hard (one-hot, never moving left) attention when decoding
  double score_bias_init = -4.0;  // monotonic: initial r of the selection energy (sigmoid(r) = first p)
  int heads = 4;              // multi_head: number of heads
  double dropout = 0.0;       // multi_head: dropout on each head's weights while training (0 = off)
  int max_area = 3;           // area: maximal span length A
  int chunk_size = 4;         // chunkwise (MoChA): states w of the chunk ending at the monotonic stop
  bool coverage = false;      // additive score with a coverage term (See et al., 2017)
  double coverage_loss = 0.0; // weight lambda of the coverage loss (0 = off)
  // milk: weight lambda of the expected Differentiable Average Lagging of the monotonic head added
  // to the training loss (MILk's latency-augmented training; 0 = off)
  double latency_loss = 0.0;
};

struct ModelConfig {
  int embedding_size = 256;
  EncoderConfig encoder;
  DecoderConfig decoder;
  AttentionConfig attention;
  bool tie_embeddings = false;  // output layer shares the target embedding matrix
  bool share_embeddings = false;  // encoder and decoder read one embedding matrix (one vocabulary)
  // The encoder reads the source's end-of-sentence token (false: it stops before it, as
  // OpenNMT-py's models were trained: their source has no </s>).
  bool source_eos = true;
};

struct TrainConfig {
  std::string save_dir;          // required: checkpoints, tokenizer models, logs
  int batch_size = 64;           // sentences per batch (used when batch_tokens == 0)
  int batch_tokens = 0;          // if > 0: batches hold up to this many target tokens
  int max_steps = 0;             // stop after this many updates (0 = no limit)
  int max_epochs = 0;            // stop after this many epochs (0 = no limit)
  double max_minutes = 0;        // stop after this much wall-clock training time, validation included (0 = no limit)
  Optimizer optimizer = Optimizer::adam;  // adam | sgd
  double learning_rate = 1e-3;
  double clip_norm = 5.0;        // global gradient-norm clipping (0 = off)
  double label_smoothing = 0.1;
  LrSchedule lr_schedule = LrSchedule::plateau;  // plateau | constant | inverse_sqrt | cosine
  int warmup_steps = 0;          // linear warm-up from 0 over the first N updates (every schedule; 0 = none)
  double lr_decay = 0.5;         // plateau: multiply the LR by this when valid does not improve
  int lr_patience = 1;           // plateau: validations without improvement before decaying
  double min_learning_rate = 1e-5;  // plateau's floor; cosine's end
  double weight_decay = 0.0;     // decoupled weight decay (AdamW, Loshchilov & Hutter 2019): p -= lr * wd * p
  double ema_decay = 0.0;        // > 0: validate and save an exponential moving average of the weights (train/ema.h)
  // > 0: prefix-to-prefix training (STACL's wait-k): target step t attends to the first
  // min(k + t - 1, |x|) source tokens (the end of sentence with the last), and the decoder starts
  // from the first min(k, |x|) -- what wait-k's prefix policy shows it when decoding a stream
  // (model/seq2seq.h, Seq2SeqImpl::set_wait_k). 0: whole sentences.
  int wait_k = 0;
  int valid_every = 1000;        // validate every N updates (and at the end of each epoch)
  ValidMetric valid_metric = ValidMetric::bleu;  // bleu | ppl: what "best" and early stopping look at
  int valid_beam_size = 1;       // beam size for valid BLEU (1 = greedy)
  int patience = 0;              // stop after N validations without improvement (0 = off)
  int keep_checkpoints = 3;      // keep the last K step checkpoints (plus best.pt)
  int report_every = 100;        // log a training line every N updates
  TrainPrecision precision = TrainPrecision::fp32;  // fp32 | bf16 (autocast: matrix products in bfloat16, weights fp32)
  // bf16 on a CPU without native bf16 products (no AVX512-BF16 or AMX, util/cpu_kernels.h) runs
  // them emulated, ~14x slower than fp32 on AVX2: `train` refuses it there unless this is true.
  bool allow_slow_bf16 = false;
  int replicas = 0;              // model replicas trained in threads on slices of each batch (0 = one per thread on CPU)
  uint64_t seed = 1234;
};

struct DecodeConfig {
  int beam_size = 5;
  double length_penalty = 0.6;    // GNMT alpha (0 = no normalisation)
  double coverage_penalty = 0.0;  // GNMT beta (0 = off)
  double max_length_ratio = 2.0;  // hypotheses stop at ratio * source length + 5 tokens
  int batch_size = 64;            // sentences decoded together
  int workers = 0;                // batches decoded at once, a thread each (0 = one per thread on CPU)
  // fp32 | bf16 | int8 (the encoder's and decoder step's products) | auto (the fastest this CPU has)
  DecodePrecision precision = DecodePrecision::fp32;
  bool packed_weights = true;      // CPU: the LSTM encoder's and decoder step's weights packed once for oneDNN (runtime/packed_linear.h)
  int n_best = 1;                 // hypotheses written per input line
  // Vocabulary shortlist (data/lexicon.h): a batch scores only the shortlist_first most frequent
  // target subwords and the shortlist_best likeliest translations of each of its source subwords
  // (IBM Model 1 on the training corpus, SAVE_DIR/lexicon.bin), not the whole vocabulary.
  bool shortlist = false;
  int shortlist_first = 100;
  int shortlist_best = 50;
  // Rules every search (greedy, beam, sampling) follows:
  int min_length = 0;             // no end of sentence before this many target tokens (0 = off)
  int max_length = 0;             // at most this many target tokens, besides max_length_ratio (0 = no cap)
  int no_repeat_ngram_size = 0;   // no n-gram of this size twice in a hypothesis (0 = off)
  // Random sampling instead of greedy/beam search: n_best samples per sentence, each token drawn
  // from softmax(logits / temperature) cut to the top_k likeliest (0 = all) and then to the
  // smallest set whose probability reaches top_p; reproducible for a seed, whatever the batching.
  bool sampling = false;
  double temperature = 1.0;
  int top_k = 0;
  double top_p = 1.0;
  // Epsilon sampling (Hewitt et al., 2022): before the cuts above, tokens whose probability under
  // the model is below epsilon are not drawn (the likeliest always may be). 0 = off.
  double epsilon = 0.0;
  uint64_t seed = 1;
  // Minimum Bayes risk decoding (decoding/mbr.h): the search's hypotheses (beam search: the best
  // mbr_candidates of the beam, 0 = beam_size; sampling: mbr_candidates samples) are reordered by
  // their expected sentence BLEU or chrF against each other, the expectation weighted by the
  // model's probabilities (beam) or uniform (samples). none = off.
  MbrMetric mbr = MbrMetric::none;  // none | bleu | chrf
  int mbr_candidates = 0;
  // Whose rules beam and greedy search follow (decoding/toolkit_search.h): attnmt's own, or
  // OpenNMT-py 2.3's, OpenNMT-py 3.x's or Joey NMT 2.3's, so that a model converted from one of
  // them translates as that toolkit translates it. With opennmt / joeynmt: max_length is the only
  // length limit, the end of sentence counted (max_length_ratio unused; opennmt: > 0; joeynmt: 0 =
  // Joey's default, 1.5 x the source length with its </s>); opennmt3: max_length (> 0) and
  // max_length_ratio, as 3.x's min(max_length, ratio x source + 5). length_penalty is their alpha
  // (0 = no length penalty; opennmt: GNMT's wu, opennmt3: avg = score / length^alpha, joeynmt:
  // beam_alpha); min_length their min_length / min_output_length; sampling, the shortlist,
  // coverage_penalty, no_repeat_ngram_size, mbr, prefixes and constraints are refused.
  // fairseq: SequenceGenerator's rules (fairseq-generate): length_penalty is its --lenpen (score =
  // log P / length^lenpen, eos counted), max_length and max_length_ratio its --max-len-b and
  // --max-len-a (at most int(a x source tokens with </s> + b) tokens before the eos), min_length
  // its --min-len, unk_penalty its --unkpen. marian: marian-decoder's BeamSearch (a sentence's beam
  // shrinks by each hypothesis that ends; the n best of all that ended): length_penalty its
  // --normalize, word_penalty its --word-penalty, max_length_ratio its --max-length-factor (the
  // search stops after ratio x source tokens with </s>), ban_unk the opposite of its --allow-unk.
  SearchRules search_rules = SearchRules::attnmt;  // attnmt | opennmt | opennmt3 | joeynmt | fairseq
  // opennmt / opennmt3 / joeynmt rules: the unknown word is never chosen (OpenNMT-py's ban_unk_token, Joey
  // NMT's generate_unk: false).
  bool ban_unk = false;
  // fairseq rules: subtracted from the log-probability of <unk> at every step (fairseq's --unkpen).
  double unk_penalty = 0.0;
  // marian rules: a hypothesis' score is (log P - word_penalty x length) / length^length_penalty
  // (marian-decoder's --word-penalty and --normalize, the eos counted in the length).
  double word_penalty = 0.0;
  // translate --streaming: the wait-k policy (decoding/streaming.h) with this k, unless --wait-k
  // gives one; 0 = the model's own: its train.wait_k where it was trained prefix-to-prefix, else
  // the hard-attention head's policy.
  int wait_k = 0;
  // How wait-k decides each target token (decoding/streaming.h, WaitKPolicy): replay | prefix |
  // auto (prefix for a model trained with train.wait_k whose encoder reads a token at a time, else replay).
  WaitKPolicy wait_k_policy = WaitKPolicy::automatic;
};

// decode:'s defaults, for the decoding options that mirror them (decoding/search_types.h,
// decoding/translator.h): those take their defaults from here rather than a copy.
inline const DecodeConfig& decode_defaults() {
  static const DecodeConfig defaults;
  return defaults;
}

// Data-parallel training (attnmt train --nproc N | --distributed): see train/distributed.h.
struct DistributedConfig {
  DistBackend backend = DistBackend::automatic;  // auto (nccl on cuda when built with it, else gloo) | gloo | nccl
  double timeout = 1800;         // seconds a collective may wait for the other ranks before failing
  double join_timeout = 300;     // seconds the ranks wait for each other at the start (a host that never comes)
  double bucket_mb = 25;         // gradients are all-reduced in buckets of about this many MiB
  GradCompress compress = GradCompress::none;  // none | fp16: gradients travel as fp16, scaled (train/distributed.h)
};

struct Config {
  DataConfig data;
  TokenizerConfig tokenizer;
  ModelConfig model;
  TrainConfig train;
  DecodeConfig decode;
  DistributedConfig distributed;
  int threads = 0;            // intra-op threads (0 = number of cores)
  GemmBackend gemm = GemmBackend::automatic;  // auto | onednn | blas: what runs fp32 matrix products on a CPU (runtime/gemm.h)
  std::string device = "cpu"; // cpu | cuda | cuda:N
};

}  // namespace attnmt
