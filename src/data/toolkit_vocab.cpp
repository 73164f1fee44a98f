#include "data/toolkit_vocab.h"

#include <stdexcept>

#include "data/word_vocab.h"
#include "util/text_io.h"

namespace attnmt {

namespace {

constexpr const char* kMagic = "attnmt-toolkit-vocab 1\n";

// "<name> <count>\n" at `pos`; advances pos past it. -1 when it is not there.
long long read_count(const std::string& bytes, size_t& pos, const std::string& name) {
  const auto eol = bytes.find('\n', pos);
  if (eol == std::string::npos) return -1;
  const std::string line = bytes.substr(pos, eol - pos);
  if (line.rfind(name + " ", 0) != 0) return -1;
  const std::string digits = line.substr(name.size() + 1);
  if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  pos = eol + 1;
  return std::stoll(digits);
}

}  // namespace

bool ToolkitVocab::is_toolkit_vocab(const std::string& bytes) { return bytes.rfind(kMagic, 0) == 0; }

std::string ToolkitVocab::serialize(const std::vector<std::string>& tokens, const std::string& sentencepiece) {
  std::string out = kMagic;
  out += "tokens " + std::to_string(tokens.size()) + "\n";
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto& t = tokens[i];
    if (t.empty()) throw std::invalid_argument("token " + std::to_string(i) + " is empty");
    for (char c : t) {
      if (is_token_space(c)) throw std::invalid_argument("token " + std::to_string(i) + " ('" + t + "') contains a space");
    }
    if (!seen.emplace(t, i).second) {
      throw std::invalid_argument("token '" + t + "' twice (ids " + std::to_string(seen[t]) + " and " +
                                  std::to_string(i) + ")");
    }
    out += t + "\n";
  }
  out += "spm " + std::to_string(sentencepiece.size()) + "\n";
  out += sentencepiece;
  return out;
}

std::string ToolkitVocab::load(const std::string& model_path) {
  try {
    return load_serialized(read_file(model_path));
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string ToolkitVocab::train(const std::string&, const TokenizerConfig&, const std::vector<std::string>&) {
  return "a converted model's vocabulary is the source toolkit's: it is not trained";
}

std::string ToolkitVocab::load_serialized(const std::string& bytes) {
  if (!is_toolkit_vocab(bytes)) return "not a converted vocabulary (no 'attnmt-toolkit-vocab' header)";
  size_t pos = std::string(kMagic).size();
  const long long n = read_count(bytes, pos, "tokens");
  if (n < 4) return "no token count of at least 4 after the header";
  tokens_.clear();
  ids_.clear();
  for (long long i = 0; i < n; ++i) {
    const auto eol = bytes.find('\n', pos);
    if (eol == std::string::npos || eol == pos) return "token " + std::to_string(i) + " is missing or empty";
    tokens_.push_back(bytes.substr(pos, eol - pos));
    if (!ids_.emplace(tokens_.back(), static_cast<int>(i)).second) return "token '" + tokens_.back() + "' twice";
    pos = eol + 1;
  }
  const long long m = read_count(bytes, pos, "spm");
  if (m < 0 || static_cast<size_t>(m) != bytes.size() - pos) return "the SentencePiece part is missing or truncated";
  spm_bytes_ = bytes.substr(pos);
  spm_.reset();
  spm_ids_.clear();
  if (!spm_bytes_.empty()) {
    spm_ = make_sentencepiece_();
    if (auto error = spm_->load_serialized(spm_bytes_); !error.empty()) return "its SentencePiece model: " + error;
    bool unk_found = false;
    for (int i = 0; i < spm_->piece_size(); ++i) {
      const auto piece = spm_->id_to_piece(i);
      spm_ids_.emplace(piece, i);
      if (!unk_found && piece == "<unk>") {
        spm_unk_ = i;
        unk_found = true;
      }
    }
  }
  return {};
}

int ToolkitVocab::id(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  return it == ids_.end() ? 1 : it->second;  // 1 = unk
}

void ToolkitVocab::encode(std::string_view text, std::vector<int>* ids) const {
  ids->clear();
  if (spm_) {
    std::vector<std::string> pieces;
    spm_->encode_pieces(text, &pieces);
    for (const auto& p : pieces) ids->push_back(id(p));
    return;
  }
  for_each_token(text, [&](size_t b, size_t e) { ids->push_back(id(text.substr(b, e - b))); });
}

void ToolkitVocab::encode_pieces(std::string_view text, std::vector<std::string>* pieces) const {
  std::vector<int> ids;
  encode(text, &ids);
  pieces->clear();
  for (int i : ids) pieces->push_back(tokens_[static_cast<size_t>(i)]);
}

void ToolkitVocab::encode_with_offsets(std::string_view text, std::vector<int>* ids,
                                       std::vector<std::pair<size_t, size_t>>* offsets) const {
  ids->clear();
  offsets->clear();
  if (spm_) {
    std::vector<int> spm_ids;
    spm_->encode_with_offsets(text, &spm_ids, offsets);
    for (int i : spm_ids) ids->push_back(id(spm_->id_to_piece(i)));
    return;
  }
  for_each_token(text, [&](size_t b, size_t e) {
    ids->push_back(id(text.substr(b, e - b)));
    offsets->emplace_back(b, e);
  });
}

std::string ToolkitVocab::decode(const std::vector<int>& ids) const {
  if (spm_) {
    std::vector<int> spm_ids;
    for (int i : ids) {
      auto it = spm_ids_.find(id_to_piece(i));
      spm_ids.push_back(it == spm_ids_.end() ? spm_unk_ : it->second);
    }
    return spm_->decode(spm_ids);
  }
  std::string out;
  for (int i : ids) {
    if (!out.empty()) out += ' ';
    out += id_to_piece(i);
  }
  return out;
}

std::string ToolkitVocab::id_to_piece(int id) const {
  return id >= 0 && id < piece_size() ? tokens_[static_cast<size_t>(id)] : tokens_[1];
}

std::string ToolkitVocab::serialized() const {
  std::string out = kMagic;
  out += "tokens " + std::to_string(tokens_.size()) + "\n";
  for (const auto& t : tokens_) out += t + "\n";
  out += "spm " + std::to_string(spm_bytes_.size()) + "\n";
  return out + spm_bytes_;
}

}  // namespace attnmt
