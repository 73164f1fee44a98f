#include "data/word_vocab.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "util/text_io.h"

namespace attnmt {

namespace {

constexpr const char* kMagic = "attnmt-word-vocab 1\n";
// The special ids' pieces, as SentencePiece names them in attnmt's models (pad/unk/bos/eos = 0..3).
const std::vector<std::string> kSpecials{"<pad>", "<unk>", "<s>", "</s>"};

}  // namespace

bool WordVocab::is_word_vocab(const std::string& bytes) { return bytes.rfind(kMagic, 0) == 0; }

std::string WordVocab::load(const std::string& model_path) {
  try {
    return load_serialized(read_file(model_path));
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string WordVocab::load_serialized(const std::string& bytes) {
  if (!is_word_vocab(bytes)) return "not a word vocabulary (no '" + std::string(kMagic, 17) + "' header)";
  pieces_.clear();
  ids_.clear();
  std::istringstream in(bytes.substr(std::string(kMagic).size()));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) return "empty token on line " + std::to_string(pieces_.size() + 2);
    if (!ids_.emplace(line, static_cast<int>(pieces_.size())).second) {
      return "token '" + line + "' twice (line " + std::to_string(pieces_.size() + 2) + ")";
    }
    pieces_.push_back(line);
  }
  if (pieces_.size() < kSpecials.size() || !std::equal(kSpecials.begin(), kSpecials.end(), pieces_.begin())) {
    return "the first tokens are not <pad> <unk> <s> </s>";
  }
  return {};
}

std::string WordVocab::train(const std::string& model_prefix, const TokenizerConfig& config,
                             const std::vector<std::string>& sentences) {
  std::unordered_map<std::string, int64_t> counts;
  for (const auto& s : sentences) {
    for_each_token(s, [&](size_t b, size_t e) { ++counts[s.substr(b, e - b)]; });
  }
  for (const auto& special : kSpecials) counts.erase(special);
  std::vector<std::pair<std::string, int64_t>> order(counts.begin(), counts.end());
  // Most frequent first; ties in byte order, so that the vocabulary depends on the text alone.
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  const size_t keep = std::min(order.size(), static_cast<size_t>(std::max(0, config.vocab_size - 4)));
  std::string model = kMagic, vocab;
  for (const auto& special : kSpecials) {
    model += special + "\n";
    vocab += special + "\t0\n";
  }
  for (size_t i = 0; i < keep; ++i) {
    model += order[i].first + "\n";
    vocab += order[i].first + "\t" + std::to_string(order[i].second) + "\n";
  }
  try {
    write_file_atomic(model_prefix + ".vocab", vocab);
    write_file_atomic(model_prefix + ".model", model);
  } catch (const std::exception& e) {
    return e.what();
  }
  return load_serialized(model);
}

int WordVocab::id(std::string_view token) const {
  const auto it = ids_.find(std::string(token));
  return it == ids_.end() ? 1 : it->second;
}

void WordVocab::encode(std::string_view text, std::vector<int>* ids) const {
  ids->clear();
  for_each_token(text, [&](size_t b, size_t e) { ids->push_back(id(text.substr(b, e - b))); });
}

void WordVocab::encode_pieces(std::string_view text, std::vector<std::string>* pieces) const {
  pieces->clear();
  for_each_token(text, [&](size_t b, size_t e) { pieces->emplace_back(text.substr(b, e - b)); });
}

void WordVocab::encode_with_offsets(std::string_view text, std::vector<int>* ids,
                                    std::vector<std::pair<size_t, size_t>>* offsets) const {
  ids->clear();
  offsets->clear();
  for_each_token(text, [&](size_t b, size_t e) {
    ids->push_back(id(text.substr(b, e - b)));
    offsets->emplace_back(b, e);
  });
}

std::string WordVocab::decode(const std::vector<int>& ids) const {
  std::string text;
  for (int i : ids) {
    if (!text.empty()) text += ' ';
    text += id_to_piece(i);
  }
  return text;
}

std::string WordVocab::id_to_piece(int id) const {
  return id >= 0 && id < piece_size() ? pieces_[static_cast<size_t>(id)] : kSpecials[1];
}

std::string WordVocab::serialized() const {
  std::string bytes = kMagic;
  for (const auto& p : pieces_) bytes += p + "\n";
  return bytes;
}

}  // namespace attnmt
