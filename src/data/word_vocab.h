// tokenizer.type: none -- text that is already tokenized (words or subwords separated by spaces,
// as an external BPE or a Moses tokenizer leaves it): a token is a run of non-space bytes, the
// vocabulary is the vocab_size most frequent training tokens (the 4 special ids included), and
// decoding joins tokens with one space. Implements the same backend interface as SentencePiece.
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/spm_backend.h"

namespace attnmt {

// The separators of pre-tokenized text: ASCII whitespace.
inline bool is_token_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Calls f(begin, end) for each token (run of non-space bytes) of `text`.
template <typename F>
void for_each_token(std::string_view text, F&& f) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_token_space(text[i])) ++i;
    const size_t begin = i;
    while (i < text.size() && !is_token_space(text[i])) ++i;
    if (i > begin) f(begin, i);
  }
}

class WordVocab : public TokenizerBackend {
 public:
  // Whether `bytes` (a model file's start, or all of it) is a WordVocab model.
  static bool is_word_vocab(const std::string& bytes);

  std::string load(const std::string& model_path) override;
  // Writes <model_prefix>.model (the vocabulary) and <model_prefix>.vocab (token, training count).
  std::string train(const std::string& model_prefix, const TokenizerConfig& config,
                    const std::vector<std::string>& sentences) override;
  void encode(std::string_view text, std::vector<int>* ids) const override;
  void encode_pieces(std::string_view text, std::vector<std::string>* pieces) const override;
  void encode_with_offsets(std::string_view text, std::vector<int>* ids,
                           std::vector<std::pair<size_t, size_t>>* offsets) const override;
  std::string decode(const std::vector<int>& ids) const override;
  std::string id_to_piece(int id) const override;
  int piece_size() const override { return static_cast<int>(pieces_.size()); }
  float piece_score(int) const override { return 0.0f; }  // words are never merged
  bool piece_is_normal(int id) const override { return id >= 4 && id < piece_size(); }
  std::string serialized() const override;
  std::string load_serialized(const std::string& bytes) override;

 private:
  int id(std::string_view token) const;
  std::vector<std::string> pieces_;
  std::unordered_map<std::string, int> ids_;
};

}  // namespace attnmt
