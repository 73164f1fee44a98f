// The only file that includes SentencePiece: see data/spm_backend.h for why it is a module.
#include "data/spm_backend.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

namespace attnmt {
namespace {

class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>& v) : v_(v) {}
  bool done() const override { return i_ >= v_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return v_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& v_;
  size_t i_ = 0;
};

class Backend : public TokenizerBackend {
 public:
  std::string load(const std::string& model_path) override {
    const auto status = processor_.Load(model_path);
    return status.ok() ? std::string() : status.ToString();
  }
  std::string train(const std::string& model_prefix, const TokenizerConfig& config,
                    const std::vector<std::string>& sentences) override {
    // SentencePiece 0.1.97 has no seed option; with shuffling off, BPE training is deterministic.
    const std::string args = "--model_prefix=" + model_prefix + " --model_type=" + name_string(config.model_type) +
                             " --vocab_size=" + std::to_string(config.vocab_size) +
                             " --character_coverage=" + std::to_string(config.character_coverage) +
                             " --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3 --hard_vocab_limit=false" +
                             " --input_sentence_size=0" +
                             (config.user_defined_symbols.empty() ? std::string()
                                                                  : " --user_defined_symbols=" + config.user_defined_symbols) +
                             " --shuffle_input_sentence=false --num_threads=2 --minloglevel=2";
    VectorIterator it(sentences);
    const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it);
    return status.ok() ? std::string() : status.ToString();
  }
  void encode(std::string_view text, std::vector<int>* ids) const override { processor_.Encode(text, ids); }
  void encode_pieces(std::string_view text, std::vector<std::string>* pieces) const override {
    processor_.Encode(text, pieces);
  }
  void encode_with_offsets(std::string_view text, std::vector<int>* ids,
                           std::vector<std::pair<size_t, size_t>>* offsets) const override {
    const auto spt = processor_.EncodeAsImmutableProto(text);
    ids->clear();
    offsets->clear();
    for (const auto& piece : spt.pieces()) {
      ids->push_back(static_cast<int>(piece.id()));
      offsets->emplace_back(piece.begin(), piece.end());
    }
  }
  std::string decode(const std::vector<int>& ids) const override {
    std::string text;
    processor_.Decode(ids, &text);
    return text;
  }
  std::string id_to_piece(int id) const override { return processor_.IdToPiece(id); }
  int piece_size() const override { return processor_.GetPieceSize(); }
  float piece_score(int id) const override { return processor_.GetScore(id); }
  bool piece_is_normal(int id) const override {
    return !processor_.IsUnknown(id) && !processor_.IsControl(id) && !processor_.IsUnused(id) && !processor_.IsByte(id);
  }
  std::string serialized() const override { return processor_.serialized_model_proto(); }
  std::string load_serialized(const std::string& bytes) override {
    const auto status = processor_.LoadFromSerializedProto(bytes);
    return status.ok() ? std::string() : status.ToString();
  }

 private:
  sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace
}  // namespace attnmt

extern "C" __attribute__((visibility("default"))) attnmt::TokenizerBackend* attnmt_spm_create() {
  return new attnmt::Backend();
}
