// The front end: SentencePiece subword models (tokenizer.type: sentencepiece), or the word
// vocabulary of text that is already tokenized (tokenizer.type: none, data/word_vocab.h). The
// backend is hidden behind this class (pimpl) so that only the SentencePiece module includes
// SentencePiece. Every model attnmt trains uses the same special ids.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace attnmt {

class Tokenizer {
 public:
  static constexpr int kPad = 0;
  static constexpr int kUnk = 1;
  static constexpr int kBos = 2;
  static constexpr int kEos = 3;

  // Loads a trained model (.model file); InputError if missing or unreadable.
  explicit Tokenizer(const std::string& model_path);
  // A model from its bytes (serialized(), as model files store them); `name` says where they come
  // from in messages. InputError if they are not a SentencePiece model.
  static Tokenizer from_bytes(const std::string& bytes, const std::string& name);
  Tokenizer(Tokenizer&&) noexcept;
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Trains a model of config.type on `sentences` and writes `<model_prefix>.model` / `.vocab`.
  // SentencePiece uses config.model_type, vocab_size, character_coverage; pad/unk/bos/eos = 0/1/2/3.
  // If the data cannot support vocab_size, SentencePiece's hard limit is lifted
  // (hard_vocab_limit=false) rather than failing.
  static void train(const std::vector<std::string>& sentences, const std::string& model_prefix,
                    const TokenizerConfig& config, uint64_t seed);

  std::vector<int> encode(std::string_view text) const;         // no bos/eos added
  std::vector<std::string> encode_pieces(std::string_view text) const;
  // Ids with the byte range [begin, end) of `text` each piece stands for (SentencePiece's own
  // offsets, valid through normalisation; a leading "▁" covers the space before the piece).
  struct PieceSpan {
    int id = 0;
    size_t begin = 0, end = 0;
  };
  std::vector<PieceSpan> encode_with_offsets(std::string_view text) const;
  std::string decode(const std::vector<int>& ids) const;       // special ids are dropped
  std::string piece(int id) const;
  float piece_score(int id) const;     // SentencePiece's score (BPE: the higher, the earlier merged)
  bool piece_is_normal(int id) const;  // not unknown, control, unused or a byte
  int vocab_size() const;
  // The tokenizer.type this model is.
  TokenizerType type() const;
  const std::string& model_path() const { return model_path_; }
  std::string serialized() const;  // the model file's bytes (stored inside model files)
  // The same pieces under the same ids (two trainings on one text store different file bytes:
  // SentencePiece keeps its training options, paths included, in the model).
  bool same_vocabulary(const Tokenizer& other) const;

 private:
  Tokenizer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string model_path_;
};

// The tokenizers of one model: `src` and `tgt` are the same object when shared.
struct Tokenizers {
  std::shared_ptr<Tokenizer> src;
  std::shared_ptr<Tokenizer> tgt;
};

// Loads the SentencePiece module (libattnmt_spm.so) now rather than at the first SentencePiece
// tokenizer: the resident engine (cli/resident.h) loads it once for all its commands.
// RuntimeError if it cannot be found.
void load_sentencepiece_module();

// Loads SAVE_DIR/spm.model (shared) or SAVE_DIR/spm.src.model + spm.tgt.model; if absent,
// trains them from `train_text` first (logging what it does). For translate, call with an empty
// train_text: missing models are then an InputError naming the expected path.
struct ParallelText;
Tokenizers load_or_train_tokenizers(const TokenizerConfig& config, const std::string& save_dir,
                                    const ParallelText* train_text, uint64_t seed);
// The same, training missing models on the files of `corpora` (all sources, then all targets),
// read as streams: only the lines SentencePiece trains on (tokenizer.input_sentence_size) are held
// in memory. With one corpus, the models equal those trained from its ParallelText.
Tokenizers load_or_train_tokenizers(const TokenizerConfig& config, const std::string& save_dir,
                                    const std::vector<CorpusConfig>& corpora, uint64_t seed);

}  // namespace attnmt
