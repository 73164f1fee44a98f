// The vocabulary of a model converted from another toolkit (attnmt convert, docs/convert.md):
// that toolkit's token list, in its order, over an optional SentencePiece segmentation. Text is
// split into pieces by the SentencePiece model the source model was trained with (or at spaces,
// for pre-tokenized models), and each piece is looked up in the token list (<unk> if absent);
// decoding joins the tokens and, with SentencePiece, detokenizes them as `spm_decode
// --input_format=piece` does. Ids 0..3 are attnmt's pad/unk/bos/eos (the converter puts the
// toolkit's special tokens there); every other token keeps its place relative to the others.
// Implements the same backend interface as SentencePiece and WordVocab (data/spm_backend.h).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/spm_backend.h"

namespace attnmt {

class ToolkitVocab : public TokenizerBackend {
 public:
  using SentencePieceFactory = std::function<std::unique_ptr<TokenizerBackend>()>;
  explicit ToolkitVocab(SentencePieceFactory make_sentencepiece) : make_sentencepiece_(std::move(make_sentencepiece)) {}

  // Whether `bytes` (a model file's start, or all of it) is a ToolkitVocab.
  static bool is_toolkit_vocab(const std::string& bytes);
  // The serialized vocabulary: `tokens` (ids 0..3 = pad, unk, bos, eos) and the SentencePiece
  // model's bytes ("" = pre-tokenized text). std::invalid_argument for an empty or repeated token,
  // or one with a space in it.
  static std::string serialize(const std::vector<std::string>& tokens, const std::string& sentencepiece);

  std::string load(const std::string& model_path) override;
  std::string train(const std::string& model_prefix, const TokenizerConfig& config,
                    const std::vector<std::string>& sentences) override;
  void encode(std::string_view text, std::vector<int>* ids) const override;
  void encode_pieces(std::string_view text, std::vector<std::string>* pieces) const override;
  void encode_with_offsets(std::string_view text, std::vector<int>* ids,
                           std::vector<std::pair<size_t, size_t>>* offsets) const override;
  std::string decode(const std::vector<int>& ids) const override;
  std::string id_to_piece(int id) const override;
  int piece_size() const override { return static_cast<int>(tokens_.size()); }
  float piece_score(int) const override { return 0.0f; }
  bool piece_is_normal(int id) const override { return id >= 4 && id < piece_size(); }
  std::string serialized() const override;
  std::string load_serialized(const std::string& bytes) override;

  bool has_sentencepiece() const { return spm_ != nullptr; }

 private:
  int id(std::string_view token) const;
  SentencePieceFactory make_sentencepiece_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int> ids_;
  std::string spm_bytes_;
  std::unique_ptr<TokenizerBackend> spm_;
  std::unordered_map<std::string, int> spm_ids_;  // SentencePiece's own ids of its pieces (decoding)
  int spm_unk_ = 0;
};

}  // namespace attnmt
