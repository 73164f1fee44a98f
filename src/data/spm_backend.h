// A tokenizer's backend behind a virtual interface: SentencePiece's, built as a separate module
// (libattnmt_spm.so) and loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND) by tokenizer.cpp, and the
// pre-tokenized text's word vocabulary (data/word_vocab.h, tokenizer.type: none).
// Why: Debian's libsentencepiece embeds and exports its own protobuf-lite 3.14, while LibTorch
// loads libprotobuf 3.21; in one global symbol scope each library binds to the other's protobuf
// and the process crashes at start-up. Loaded locally with deep binding, SentencePiece keeps its
// own protobuf and LibTorch keeps its own. Only virtual calls cross the boundary.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"

namespace attnmt {

class TokenizerBackend {
 public:
  virtual ~TokenizerBackend() = default;
  // Empty string on success, else the error message.
  virtual std::string load(const std::string& model_path) = 0;
  // Trains a model on `sentences` (config's vocab_size and the backend's own keys) and writes
  // <model_prefix>.model and .vocab. Empty string on success, else the error message.
  virtual std::string train(const std::string& model_prefix, const TokenizerConfig& config,
                            const std::vector<std::string>& sentences) = 0;
  virtual void encode(std::string_view text, std::vector<int>* ids) const = 0;
  virtual void encode_pieces(std::string_view text, std::vector<std::string>* pieces) const = 0;
  // ids and, per piece, the byte range [begin, end) of `text` it stands for (SentencePiece's
  // own offsets: they survive normalisation; a piece's leading "▁" covers the space before it).
  virtual void encode_with_offsets(std::string_view text, std::vector<int>* ids,
                                   std::vector<std::pair<size_t, size_t>>* offsets) const = 0;
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  virtual std::string id_to_piece(int id) const = 0;
  virtual int piece_size() const = 0;
  // A piece's score: for a BPE model, the higher the earlier its merge was learned (its rank).
  virtual float piece_score(int id) const = 0;
  // Whether a piece is an ordinary one, made of characters and merges (not unknown, control,
  // unused or a byte): only those are split and re-merged by BPE-dropout (data/bpe_dropout.h).
  virtual bool piece_is_normal(int id) const = 0;
  virtual std::string serialized() const = 0;
  // load() from a model file's bytes (serialized()). Empty string on success, else the error.
  virtual std::string load_serialized(const std::string& bytes) = 0;
};

}  // namespace attnmt

// The module's one exported symbol: a new backend (delete it with `delete`).
extern "C" attnmt::TokenizerBackend* attnmt_spm_create();
