#include "align/words.h"

#include <algorithm>
#include <sstream>

namespace attnmt {
namespace {

const std::string kWordStart = "\xE2\x96\x81";  // "▁", SentencePiece's word-start mark

bool is_closing(const std::string& w) {
  static const std::vector<std::string> closing = {",", ".", ";", ":", "!",           "?",
                                                   ")", "]", "}", "%", "\xE2\x80\xA6" /* … */};
  if (w.empty()) return false;
  // every character one of the closing marks ("?!", "...", ").")
  size_t i = 0;
  while (i < w.size()) {
    bool matched = false;
    for (const auto& c : closing) {
      if (w.compare(i, c.size(), c) == 0) {
        i += c.size();
        matched = true;
        break;
      }
    }
    if (!matched) return false;
  }
  return true;
}

bool is_clitic(const std::string& w) {
  if (w == "n't" || w == "n\xE2\x80\x99t") return true;
  if (w.size() < 2 || w.size() > 4 || w[0] != '\'') return false;
  return std::all_of(w.begin() + 1, w.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

bool is_opening(const std::string& w) {
  return w == "(" || w == "[" || w == "{" || w == "\xC2\xBF" /* ¿ */ || w == "\xC2\xA1" /* ¡ */ ||
         w == "\xE2\x80\x9E" /* „ */;
}

bool is_special_piece(const std::string& p) { return p == "</s>" || p == "<s>" || p == "<pad>"; }

}  // namespace

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

TextWithWords join_words(const std::vector<std::string>& words, bool detokenize) {
  TextWithWords out;
  bool glue_next = false;
  int double_quotes = 0, single_quotes = 0;
  for (const auto& w : words) {
    bool no_space_before = false, opens = false;
    if (detokenize) {
      no_space_before = is_closing(w) || is_clitic(w);
      opens = is_opening(w);
      int* quotes = w == "\"" ? &double_quotes : w == "'" ? &single_quotes : nullptr;
      if (quotes) {
        (*quotes % 2 == 0 ? opens : no_space_before) = true;
        ++*quotes;
      }
    }
    if (!out.text.empty() && !glue_next && !no_space_before) out.text += ' ';
    const size_t begin = out.text.size();
    out.text += w;
    out.spans.emplace_back(begin, out.text.size());
    glue_next = opens;
  }
  return out;
}

std::vector<std::vector<int>> map_pieces(const std::vector<std::pair<size_t, size_t>>& pieces,
                                         const std::vector<std::pair<size_t, size_t>>& words) {
  std::vector<std::vector<int>> out(pieces.size());
  for (size_t p = 0; p < pieces.size(); ++p) {
    const auto [pb, pe] = pieces[p];
    for (size_t w = 0; w < words.size(); ++w) {
      if (words[w].first < pe && pb < words[w].second) out[p].push_back(static_cast<int>(w));
    }
    if (!out[p].empty() || words.empty()) continue;
    // covers no word (a lone "▁", a space): the next word, else the last one
    int next = -1;
    for (size_t w = 0; w < words.size() && next < 0; ++w) {
      if (words[w].first >= pe) next = static_cast<int>(w);
    }
    out[p].push_back(next >= 0 ? next : static_cast<int>(words.size()) - 1);
  }
  return out;
}

PieceWords words_from_pieces(const std::vector<std::string>& pieces) {
  PieceWords out;
  out.piece_to_words.resize(pieces.size());
  for (size_t p = 0; p < pieces.size(); ++p) {
    const auto& piece = pieces[p];
    if (is_special_piece(piece)) continue;
    const bool starts = piece.compare(0, kWordStart.size(), kWordStart) == 0;
    std::string text = starts ? piece.substr(kWordStart.size()) : piece;
    if (starts || out.words.empty()) {
      out.words.push_back(text);
    } else {
      out.words.back() += text;
    }
    out.piece_to_words[p].push_back(static_cast<int>(out.words.size()) - 1);
  }
  return out;
}

std::vector<std::vector<float>> merge_attention(const std::vector<std::vector<float>>& attention,
                                                const std::vector<std::vector<int>>& tgt_piece_words,
                                                const std::vector<std::vector<int>>& src_piece_words, size_t tgt_words,
                                                size_t src_words) {
  std::vector<std::vector<float>> merged(tgt_words, std::vector<float>(src_words, 0.f));
  std::vector<int> pieces_per_word(tgt_words, 0);
  std::vector<double> row(src_words);
  for (size_t t = 0; t < attention.size() && t < tgt_piece_words.size(); ++t) {
    if (tgt_piece_words[t].empty()) continue;
    std::fill(row.begin(), row.end(), 0.0);
    for (size_t s = 0; s < attention[t].size() && s < src_piece_words.size(); ++s) {
      for (int w : src_piece_words[s]) row[w] += attention[t][s];
    }
    double total = 0;
    for (double v : row) total += v;
    for (int w : tgt_piece_words[t]) {
      ++pieces_per_word[w];
      if (total <= 0) continue;
      for (size_t s = 0; s < src_words; ++s) merged[w][s] += static_cast<float>(row[s] / total);
    }
  }
  for (size_t w = 0; w < tgt_words; ++w) {
    if (pieces_per_word[w] > 1) {
      for (auto& v : merged[w]) v /= static_cast<float>(pieces_per_word[w]);
    }
  }
  return merged;
}

Links links_from_attention(const std::vector<std::vector<float>>& words, double threshold) {
  Links links;
  for (size_t t = 0; t < words.size(); ++t) {
    const auto& row = words[t];
    if (threshold > 0) {
      for (size_t s = 0; s < row.size(); ++s) {
        if (row[s] > 0 && row[s] >= threshold) links.insert({static_cast<int>(s), static_cast<int>(t)});
      }
      continue;
    }
    const auto best = std::max_element(row.begin(), row.end());
    if (best == row.end() || *best <= 0) continue;
    links.insert({static_cast<int>(best - row.begin()), static_cast<int>(t)});
  }
  return links;
}

}  // namespace attnmt
