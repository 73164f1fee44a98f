#include "align/links.h"

#include <cerrno>
#include <cstdlib>

#include "align/words.h"
#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {
namespace {

// A non-negative decimal integer filling the whole of `text`.
bool parse_index(const std::string& text, int* value) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  *value = std::atoi(text.c_str());
  return true;
}

// Splits "12-3" / "12p3" at the separator; false if the token is not of that shape.
bool split_link(const std::string& token, bool allow_possible, int* first, int* second, bool* possible) {
  const size_t at = token.find_first_of(allow_possible ? "-p" : "-");
  if (at == std::string::npos) return false;
  *possible = token[at] == 'p';
  return parse_index(token.substr(0, at), first) && parse_index(token.substr(at + 1), second);
}

// Each line of `path` parsed by `parse(line, "'path' line N")`.
template <typename Parse>
auto parse_lines(const std::string& path, Parse parse) {
  const auto lines = read_lines(path);
  std::vector<decltype(parse(lines.front(), path))> out;
  out.reserve(lines.size());
  for (size_t n = 0; n < lines.size(); ++n) {
    out.push_back(parse(lines[n], "'" + path + "' line " + std::to_string(n + 1)));
  }
  return out;
}

}  // namespace

Links parse_pharaoh(const std::string& line, const std::string& where) {
  Links links;
  for (const auto& token : split_words(line)) {
    int i = 0, j = 0;
    bool possible = false;
    if (!split_link(token, /*allow_possible=*/false, &i, &j, &possible)) {
      throw InputError(where + ": bad link '" + token + "' (expected 'i-j', 0-based word indices)");
    }
    links.insert({i, j});
  }
  return links;
}

GoldLinks parse_talp(const std::string& line, const std::string& where) {
  GoldLinks gold;
  for (const auto& token : split_words(line)) {
    int i = 0, j = 0;
    bool possible = false;
    if (!split_link(token, /*allow_possible=*/true, &i, &j, &possible)) {
      throw InputError(where + ": bad link '" + token +
                       "' (expected 'i-j' for a sure link or 'ipj' for a possible one, 1-based)");
    }
    if (i == 0 || j == 0) throw InputError(where + ": link '" + token + "' has index 0 (TALP indices are 1-based)");
    const Link link{i - 1, j - 1};
    if (!possible) gold.sure.insert(link);
    gold.possible.insert(link);
  }
  return gold;
}

std::vector<Links> read_pharaoh(const std::string& path) { return parse_lines(path, parse_pharaoh); }

std::vector<GoldLinks> read_talp(const std::string& path) { return parse_lines(path, parse_talp); }

std::string format_pharaoh(const Links& links) {
  std::string out;
  for (const auto& [i, j] : links) {
    if (!out.empty()) out += ' ';
    out += std::to_string(i) + '-' + std::to_string(j);
  }
  return out;
}

void AerCounts::add(const Links& a, const GoldLinks& gold) {
  predicted += a.size();
  sure += gold.sure.size();
  possible += gold.possible.size();
  for (const auto& link : a) {
    if (gold.sure.count(link)) ++predicted_and_sure;
    // S is a subset of P even if a caller built `possible` without the sure links.
    if (gold.possible.count(link) || gold.sure.count(link)) ++predicted_and_possible;
  }
}

AerResult alignment_error_rate(const AerCounts& c) {
  AerResult r;
  r.counts = c;
  r.precision = c.predicted > 0 ? static_cast<double>(c.predicted_and_possible) / c.predicted : 1.0;
  r.recall = c.sure > 0 ? static_cast<double>(c.predicted_and_sure) / c.sure : 1.0;
  const size_t denominator = c.predicted + c.sure;
  r.aer =
      denominator > 0 ? 1.0 - static_cast<double>(c.predicted_and_sure + c.predicted_and_possible) / denominator : 0.0;
  return r;
}

AerResult alignment_error_rate(const std::vector<Links>& predicted, const std::vector<GoldLinks>& gold) {
  if (predicted.size() != gold.size()) {
    throw InputError("alignments: " + std::to_string(predicted.size()) + " predicted sentence(s) but " +
                     std::to_string(gold.size()) + " gold sentence(s)");
  }
  AerCounts counts;
  for (size_t i = 0; i < gold.size(); ++i) counts.add(predicted[i], gold[i]);
  return alignment_error_rate(counts);
}

void check_gold_links(const std::vector<GoldLinks>& gold, const std::vector<std::string>& src,
                      const std::vector<std::string>& tgt, const std::string& gold_path) {
  if (gold.size() != src.size()) {
    throw InputError("gold alignments '" + gold_path + "' have " + std::to_string(gold.size()) +
                     " lines but the text has " + std::to_string(src.size()) + " sentence pairs");
  }
  for (size_t n = 0; n < gold.size(); ++n) {
    const size_t src_words = split_words(src[n]).size(), tgt_words = split_words(tgt[n]).size();
    for (const auto& [i, j] : gold[n].possible) {
      if (static_cast<size_t>(i) >= src_words || static_cast<size_t>(j) >= tgt_words) {
        throw InputError("'" + gold_path + "' line " + std::to_string(n + 1) + ": link " + std::to_string(i + 1) + "-" +
                         std::to_string(j + 1) + " (1-based) but the pair has " + std::to_string(src_words) +
                         " source and " + std::to_string(tgt_words) + " target words");
      }
    }
  }
}

AlignmentText read_alignment_text(const std::string& src_path, const std::string& tgt_path) {
  AlignmentText text;
  if (!tgt_path.empty()) {
    text.src = read_lines(src_path);
    text.tgt = read_lines(tgt_path);
    if (text.src.size() != text.tgt.size()) {
      throw InputError("'" + src_path + "' has " + std::to_string(text.src.size()) + " lines but '" + tgt_path +
                       "' has " + std::to_string(text.tgt.size()));
    }
  } else {
    const auto lines = read_lines(src_path);
    const std::string separator = " ||| ";
    for (size_t n = 0; n < lines.size(); ++n) {
      const size_t at = lines[n].find(separator);
      if (at == std::string::npos) {
        throw InputError("'" + src_path + "' line " + std::to_string(n + 1) +
                         ": no ' ||| ' (a single file holds 'SOURCE ||| TARGET' lines; give the target "
                         "side as a file of its own otherwise)");
      }
      text.src.push_back(lines[n].substr(0, at));
      text.tgt.push_back(lines[n].substr(at + separator.size()));
    }
  }
  if (text.src.empty()) throw InputError("'" + src_path + "' is empty");
  return text;
}

}  // namespace attnmt
