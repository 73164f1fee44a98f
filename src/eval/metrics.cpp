// Corpus BLEU and chrF with sacreBLEU 2.x default settings. sacreBLEU works on Python str
// (code points) and uses regular expressions; here the same rules run as loops over UTF-8 bytes.
// Where the two could differ (Python's notion of whitespace, n-grams of characters), the code
// decodes UTF-8 and follows Python's definition.
#include "eval/metrics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "util/error.h"

namespace attnmt {

namespace {

constexpr int kBleuMaxOrder = 4;
constexpr int kChrfCharOrder = 6;
constexpr double kChrfBeta = 2.0;
constexpr int kBleuStats = 2 + 2 * kBleuMaxOrder;
constexpr int kChrfStats = 3 * kChrfCharOrder;

// ---------------------------------------------------------------------------------------------
// UTF-8 helpers

// Length in bytes of the UTF-8 sequence starting at text[i]; a malformed sequence counts as one
// byte, so that any input (even invalid UTF-8) is split into "characters" deterministically.
size_t utf8_length(std::string_view text, size_t i, char32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 1;
  char32_t cp = lead;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    cp = lead & 0x07;
  }
  if (length == 1 || i + length > text.size()) {
    *code_point = lead;
    return 1;
  }
  for (size_t k = 1; k < length; ++k) {
    const unsigned char c = byte(i + k);
    if ((c & 0xC0) != 0x80) {
      *code_point = lead;
      return 1;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  *code_point = cp;
  return length;
}

// Python's str.isspace(), which is what str.split() without arguments splits on.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's ' '.join(text.split()).
std::string normalize_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    const size_t length = utf8_length(text, i, &cp);
    if (is_python_space(cp)) {
      pending_space = !out.empty();
    } else {
      if (pending_space) out.push_back(' ');
      pending_space = false;
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// 13a tokenizer

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (text.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  for (size_t hit; (hit = text.find(from, start)) != std::string::npos; start = hit + from.size()) {
    out.append(text, start, hit - start);
    out.append(to);
  }
  out.append(text, start, std::string::npos);
  text.swap(out);
}

bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_period_or_comma(unsigned char c) { return c == '.' || c == ','; }

// The character class of the first 13a rule, [\{-\~\[-\` -\&\(-\+\:-\@\/]: every ASCII symbol
// except the apostrophe, comma, hyphen and period (which have rules of their own, or none).
bool is_13a_symbol(unsigned char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

// re.sub for a two-character pattern ([first][second]) scanning left to right without overlap,
// as Python's regex engine does; the replacement is " " inserted before and/or after each of the
// two characters. Bytes >= 0x80 never match the ASCII classes on their own, and a non-digit
// class that matches a continuation byte gives the same output as matching the whole code point.
template <typename First, typename Second>
std::string substitute_pairs(const std::string& text, First first, Second second,
                             std::string_view before, std::string_view middle,
                             std::string_view after) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (size_t i = 0; i < text.size();) {
    const auto a = static_cast<unsigned char>(text[i]);
    if (i + 1 < text.size() && first(a) && second(static_cast<unsigned char>(text[i + 1]))) {
      out.append(before);
      out.push_back(text[i]);
      out.append(middle);
      out.push_back(text[i + 1]);
      out.append(after);
      i += 2;
    } else {
      out.push_back(text[i]);
      i += 1;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// n-gram counting

using NgramCounts = std::unordered_map<std::string_view, long>;

// Matches as sacreBLEU/Counter intersection: sum over hypothesis n-grams of min(hyp, ref).
long clipped_matches(const NgramCounts& hyp, const NgramCounts& ref) {
  long matches = 0;
  for (const auto& [ngram, count] : hyp) {
    const auto it = ref.find(ngram);
    if (it != ref.end()) matches += std::min(count, it->second);
  }
  return matches;
}

// Byte offsets where each token starts and (one past) where it ends, in a line whose tokens are
// separated by single spaces (the output of tokenize_13a).
struct TokenSpans {
  std::vector<size_t> begin, end;
};

TokenSpans split_tokens(const std::string& tokenized) {
  TokenSpans spans;
  size_t start = 0;
  while (start < tokenized.size()) {
    size_t stop = tokenized.find(' ', start);
    if (stop == std::string::npos) stop = tokenized.size();
    spans.begin.push_back(start);
    spans.end.push_back(stop);
    start = stop + 1;
  }
  return spans;
}

// An n-gram of words is the substring from its first word's start to its last word's end.
NgramCounts word_ngrams(const std::string& line, const TokenSpans& spans, size_t n) {
  NgramCounts counts;
  const std::string_view view(line);
  for (size_t i = 0; i + n <= spans.begin.size(); ++i) {
    ++counts[view.substr(spans.begin[i], spans.end[i + n - 1] - spans.begin[i])];
  }
  return counts;
}

// A character n-gram is the byte span of n consecutive code points; `starts` holds each code
// point's byte offset plus a final entry at the end of the string.
NgramCounts char_ngrams(std::string_view text, const std::vector<size_t>& starts, size_t n) {
  NgramCounts counts;
  const size_t num_chars = starts.size() - 1;
  for (size_t i = 0; i + n <= num_chars; ++i) {
    ++counts[text.substr(starts[i], starts[i + n] - starts[i])];
  }
  return counts;
}

void check_sizes(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  if (hyps.size() != refs.size()) {
    throw InputError("hypothesis has " + std::to_string(hyps.size()) +
                     " lines but reference has " + std::to_string(refs.size()));
  }
}

// sacreBLEU's my_log: log(0) is a huge negative number rather than -inf.
// The sum over the corpus of each sentence's statistics (width of them).
std::vector<double> corpus_stats(const std::vector<std::string>& hyps, const std::vector<std::string>& refs,
                                 int width, std::vector<double> (*sentence_stats)(const std::string&, const std::string&)) {
  check_sizes(hyps, refs);
  std::vector<double> sum(static_cast<size_t>(width), 0.0);
  for (size_t s = 0; s < hyps.size(); ++s) {
    const auto stats = sentence_stats(hyps[s], refs[s]);
    for (int i = 0; i < width; ++i) sum[i] += stats[i];
  }
  return sum;
}

double safe_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string tokenize_13a(const std::string& line) {
  // Language-independent part of mteval-v13a.
  std::string text = line;
  replace_all(text, "<skipped>", "");
  replace_all(text, "-\n", "");
  replace_all(text, "\n", " ");
  if (text.find('&') != std::string::npos) {
    // One after the other, in this order, as sacreBLEU does (so "&amp;lt;" ends up as "<").
    replace_all(text, "&quot;", "\"");
    replace_all(text, "&amp;", "&");
    replace_all(text, "&lt;", "<");
    replace_all(text, "&gt;", ">");
  }

  // Punctuation: every symbol becomes a token of its own.
  std::string padded;
  padded.reserve(text.size() * 2 + 2);
  padded.push_back(' ');
  for (const char c : text) {
    if (is_13a_symbol(static_cast<unsigned char>(c))) {
      padded.push_back(' ');
      padded.push_back(c);
      padded.push_back(' ');
    } else {
      padded.push_back(c);
    }
  }
  padded.push_back(' ');

  const auto not_digit = [](unsigned char c) { return !is_digit(c); };
  const auto is_dash = [](unsigned char c) { return c == '-'; };
  // Period and comma unless preceded by a digit: "\1 \2 ".
  padded = substitute_pairs(padded, not_digit, is_period_or_comma, "", " ", " ");
  // Period and comma unless followed by a digit: " \1 \2".
  padded = substitute_pairs(padded, is_period_or_comma, not_digit, " ", " ", "");
  // Dash preceded by a digit: "\1 \2 ".
  padded = substitute_pairs(padded, is_digit, is_dash, "", " ", " ");
  return normalize_spaces(padded);
}

std::vector<double> bleu_sentence_stats(const std::string& hyp_line, const std::string& ref_line) {
  std::vector<double> stats(kBleuStats, 0.0);  // sys_len, ref_len, counts[4], totals[4]
  // sacreBLEU right-strips before tokenizing; 13a drops surrounding spaces anyway.
  const std::string hyp = tokenize_13a(hyp_line);
  const std::string ref = tokenize_13a(ref_line);
  const TokenSpans hyp_tokens = split_tokens(hyp);
  const TokenSpans ref_tokens = split_tokens(ref);
  const size_t hyp_len = hyp_tokens.begin.size();
  stats[0] = static_cast<double>(hyp_len);
  stats[1] = static_cast<double>(ref_tokens.begin.size());
  for (int n = 1; n <= kBleuMaxOrder; ++n) {
    if (hyp_len < static_cast<size_t>(n)) break;
    stats[1 + n] = static_cast<double>(clipped_matches(word_ngrams(hyp, hyp_tokens, n), word_ngrams(ref, ref_tokens, n)));
    stats[1 + kBleuMaxOrder + n] = static_cast<double>(hyp_len - n + 1);
  }
  return stats;
}

BleuResult bleu_from_stats(const std::vector<double>& stats) {
  BleuResult result;
  result.sys_len = static_cast<long>(stats[0]);
  result.ref_len = static_cast<long>(stats[1]);
  result.counts.assign(kBleuMaxOrder, 0);
  result.totals.assign(kBleuMaxOrder, 0);
  result.precisions.assign(kBleuMaxOrder, 0.0);
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    result.counts[n] = static_cast<long>(stats[2 + n]);
    result.totals[n] = static_cast<long>(stats[2 + kBleuMaxOrder + n]);
  }

  if (result.sys_len < result.ref_len) {
    result.bp = result.sys_len > 0
                    ? std::exp(1.0 - static_cast<double>(result.ref_len) / result.sys_len)
                    : 0.0;
  } else {
    result.bp = 1.0;
  }

  bool any_match = false;
  for (const long c : result.counts) any_match = any_match || c > 0;
  if (!any_match) return result;  // score 0, precisions 0 (sacreBLEU's early stop)

  // 'exp' smoothing (mteval-v13a): the k-th order with no match gets precision 1 / (2^k total).
  double smooth = 1.0;
  for (int n = 1; n <= kBleuMaxOrder; ++n) {
    const long total = result.totals[n - 1];
    const long correct = result.counts[n - 1];
    if (total == 0) break;  // higher orders keep precision 0, so the score is 0
    if (correct == 0) {
      smooth *= 2.0;
      result.precisions[n - 1] = 100.0 / (smooth * static_cast<double>(total));
    } else {
      result.precisions[n - 1] = 100.0 * static_cast<double>(correct) / static_cast<double>(total);
    }
  }
  double log_sum = 0.0;
  for (const double p : result.precisions) log_sum += safe_log(p);
  result.score = result.bp * std::exp(log_sum / kBleuMaxOrder);
  return result;
}

BleuResult corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  return bleu_from_stats(corpus_stats(hyps, refs, kBleuStats, &bleu_sentence_stats));
}

std::vector<double> chrf_sentence_stats(const std::string& hyp_line, const std::string& ref_line) {
  // Whitespace is removed (Python's ''.join(line.split())), then each code point is a character.
  const auto prepare = [](const std::string& line, std::string* text, std::vector<size_t>* starts) {
    for (size_t i = 0; i < line.size();) {
      char32_t cp;
      const size_t length = utf8_length(line, i, &cp);
      if (!is_python_space(cp)) {
        starts->push_back(text->size());
        text->append(line, i, length);
      }
      i += length;
    }
    starts->push_back(text->size());
  };
  std::string hyp, ref;
  std::vector<size_t> hyp_starts, ref_starts;
  prepare(hyp_line, &hyp, &hyp_starts);
  prepare(ref_line, &ref, &ref_starts);
  // Per order n: hypothesis n-grams, reference n-grams, matches.
  std::vector<double> stats(kChrfStats, 0.0);
  const long hyp_chars = static_cast<long>(hyp_starts.size()) - 1;
  const long ref_chars = static_cast<long>(ref_starts.size()) - 1;
  for (int n = 1; n <= kChrfCharOrder; ++n) {
    stats[3 * (n - 1)] = static_cast<double>(std::max(0L, hyp_chars - n + 1));
    stats[3 * (n - 1) + 1] = static_cast<double>(std::max(0L, ref_chars - n + 1));
    if (hyp_chars >= n && ref_chars >= n) {
      stats[3 * (n - 1) + 2] =
          static_cast<double>(clipped_matches(char_ngrams(hyp, hyp_starts, n), char_ngrams(ref, ref_starts, n)));
    }
  }
  return stats;
}

ChrfResult chrf_from_stats(const std::vector<double>& stats) {
  // sacreBLEU without eps smoothing: precision and recall averaged over the orders where both
  // sides have n-grams, then one F-beta score from the averages.
  double avg_precision = 0.0, avg_recall = 0.0;
  int effective_order = 0;
  for (int n = 0; n < kChrfCharOrder; ++n) {
    const double hyp_total = stats[3 * n], ref_total = stats[3 * n + 1], matches = stats[3 * n + 2];
    if (hyp_total > 0 && ref_total > 0) {
      avg_precision += matches / hyp_total;
      avg_recall += matches / ref_total;
      ++effective_order;
    }
  }
  ChrfResult result;
  if (effective_order == 0) return result;
  avg_precision /= effective_order;
  avg_recall /= effective_order;
  if (avg_precision + avg_recall == 0.0) return result;
  const double beta_square = kChrfBeta * kChrfBeta;
  result.score = 100.0 * (1.0 + beta_square) * avg_precision * avg_recall /
                 (beta_square * avg_precision + avg_recall);
  return result;
}

ChrfResult corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  return chrf_from_stats(corpus_stats(hyps, refs, kChrfStats, &chrf_sentence_stats));
}

std::string BleuResult::signature() const {
  return "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp";
}

std::string BleuResult::format() const {
  std::string line = "BLEU = " + printf_string("%.2f", score) + " ";
  for (size_t n = 0; n < precisions.size(); ++n) {
    if (n > 0) line += "/";
    line += printf_string("%.1f", precisions[n]);
  }
  const double ratio = ref_len > 0 ? static_cast<double>(sys_len) / ref_len : 0.0;
  line += " (BP = " + printf_string("%.3f", bp) + " ratio = " + printf_string("%.3f", ratio) +
          " hyp_len = " + std::to_string(sys_len) + " ref_len = " + std::to_string(ref_len) + ")";
  return line;
}

std::string ChrfResult::signature() const {
  return "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no";
}

std::string ChrfResult::format() const { return "chrF2 = " + printf_string("%.2f", score); }

nlohmann::json bleu_json(const BleuResult& bleu) {
  return {{"bleu", bleu.score},       {"bleu_counts", bleu.counts}, {"bleu_totals", bleu.totals},
          {"bleu_precisions", bleu.precisions}, {"bp", bleu.bp}, {"sys_len", bleu.sys_len},
          {"ref_len", bleu.ref_len}};
}

}  // namespace attnmt
