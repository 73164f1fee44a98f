#include "data/bpe_dropout.h"

#include <algorithm>
#include <queue>
#include <string_view>

#include "util/seed_mix.h"
#include "util/utf8.h"

namespace attnmt {
namespace {

// One symbol of the sentence being merged: a span of the sentence's text and its piece's id.
struct Symbol {
  size_t begin = 0, length = 0;  // length 0: merged into the symbol on its left
  int id = 0;
  int prev = -1, next = -1;
  bool frozen = false;
};

// A candidate merge of two adjacent symbols: popped best score first, ties to the leftmost.
struct Pair {
  float score;
  int left, right;
  size_t length;  // of the merged span: a pair whose symbols have changed since is stale
  int id;
  bool operator<(const Pair& other) const {
    return score < other.score || (score == other.score && left > other.left);
  }
};

}  // namespace

std::vector<std::string> split_symbols(const std::string& comma_separated) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= comma_separated.size()) {
    const size_t comma = std::min(comma_separated.find(',', start), comma_separated.size());
    if (comma > start) out.push_back(comma_separated.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

BpeDropout::BpeDropout(const Tokenizer& tokenizer, double p, const std::vector<std::string>& frozen) : p_(p) {
  const int n = tokenizer.vocab_size();
  piece_.resize(static_cast<size_t>(n));
  score_.resize(static_cast<size_t>(n));
  chars_.resize(static_cast<size_t>(n));
  std::vector<bool> ordinary(static_cast<size_t>(n));
  for (int id = 0; id < n; ++id) {
    const auto k = static_cast<size_t>(id);
    piece_[k] = tokenizer.piece(id);
    score_[k] = tokenizer.piece_score(id);
    ordinary[k] = tokenizer.piece_is_normal(id) &&
                  std::find(frozen.begin(), frozen.end(), piece_[k]) == frozen.end();
    if (ordinary[k]) id_.emplace(piece_[k], id);
  }
  for (size_t k = 0; k < piece_.size(); ++k) {
    if (!ordinary[k]) continue;
    const std::string& text = piece_[k];
    std::vector<int> chars;
    for (size_t at = 0; at < text.size();) {
      const size_t len = std::min(utf8_sequence_length(static_cast<unsigned char>(text[at])), text.size() - at);
      const auto it = id_.find(text.substr(at, len));
      if (it == id_.end()) {  // a character outside the vocabulary: the piece stays whole
        chars.clear();
        break;
      }
      chars.push_back(it->second);
      at += len;
    }
    chars_[k] = std::move(chars);
  }
}

std::vector<int> BpeDropout::apply(const std::vector<int>& ids, uint64_t seed) const {
  // The sentence's text (the pieces' strings end to end: SentencePiece's normalised text), cut
  // into characters, except the pieces that stay whole.
  std::string text;
  std::vector<Symbol> symbols;
  for (int id : ids) {
    const bool known = id >= 0 && static_cast<size_t>(id) < piece_.size();
    const std::string& piece = known ? piece_[static_cast<size_t>(id)] : piece_[0];
    const std::vector<int>* chars = known ? &chars_[static_cast<size_t>(id)] : nullptr;
    if (chars == nullptr || chars->empty()) {
      symbols.push_back({text.size(), std::max<size_t>(piece.size(), 1), id, -1, -1, true});
      text += piece.empty() ? std::string(1, '\0') : piece;
      continue;
    }
    for (int c : *chars) {
      const size_t len = piece_[static_cast<size_t>(c)].size();
      symbols.push_back({text.size(), len, c, -1, -1, false});
      text += piece_[static_cast<size_t>(c)];
    }
  }
  const int count = static_cast<int>(symbols.size());
  for (int i = 0; i < count; ++i) {
    symbols[static_cast<size_t>(i)].prev = i - 1;
    symbols[static_cast<size_t>(i)].next = i + 1 < count ? i + 1 : -1;
  }

  std::priority_queue<Pair> agenda;
  auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& a = symbols[static_cast<size_t>(left)];
    const Symbol& b = symbols[static_cast<size_t>(right)];
    if (a.frozen || b.frozen) return;
    const auto it = id_.find(std::string(std::string_view(text).substr(a.begin, a.length + b.length)));
    if (it == id_.end()) return;
    agenda.push({score_[static_cast<size_t>(it->second)], left, right, a.length + b.length, it->second});
  };
  for (int i = 1; i < count; ++i) consider(i - 1, i);

  uint64_t draws = seed;
  while (!agenda.empty()) {
    const Pair top = agenda.top();
    agenda.pop();
    Symbol& left = symbols[static_cast<size_t>(top.left)];
    Symbol& right = symbols[static_cast<size_t>(top.right)];
    if (left.length == 0 || right.length == 0 || left.length + right.length != top.length) continue;
    if (p_ > 0) {
      const double u = static_cast<double>(splitmix64(draws++) >> 11) * 0x1.0p-53;  // [0, 1)
      if (u < p_) continue;  // this merge is skipped, for the rest of the sentence
    }
    left.length = top.length;
    left.id = top.id;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.left;
    right.length = 0;
    consider(left.prev, top.left);
    consider(top.left, left.next);
  }

  std::vector<int> out;
  out.reserve(ids.size());
  for (int i = count > 0 ? 0 : -1; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    out.push_back(symbols[static_cast<size_t>(i)].id);
  }
  return out;
}

}  // namespace attnmt
