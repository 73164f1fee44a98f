// Word alignments as link sets, their two text formats, and the alignment error rate.
//   Pharaoh (what fast_align writes, what `attnmt align` writes): "i-j" per link, 0-based,
//     source index first, space-separated, one line per sentence pair.
//   TALP (gold alignments, e.g. ../shared/data/alignment-gold/): "i-j" = sure link, "ipj" =
//     possible link, 1-based, source (first side) index first.
// AER (Och & Ney, 2003, "A Systematic Comparison of Various Statistical Alignment Models",
// section 5): with predicted links A, sure links S and possible links P (S is a subset of P:
// a sure link also counts as possible),
//   AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|),  precision = |A∩P| / |A|,  recall = |A∩S| / |S|,
// counted over the whole corpus (the counts are summed over sentences, then divided).
// Empty cases: a ratio whose denominator is 0 counts as perfect — precision 1 when nothing was
// predicted (no wrong link), recall 1 when there is no sure link (none missed), AER 0 when both
// A and S are empty. These keep AER = 1 - precision when S is empty and AER = 1 when A is empty
// but S is not.
#pragma once
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace attnmt {

// {source word, target word}, 0-based. A set: duplicates collapse, output is sorted.
using Link = std::pair<int, int>;
using Links = std::set<Link>;

struct GoldLinks {
  Links sure;
  Links possible;  // sure links included (S is a subset of P)
};

// One line of each format. `where` names the line in errors ("'gold.talp' line 12"); InputError
// for a malformed link, a negative index, or an index 0 in 1-based TALP. A link given both as
// sure and as possible is sure.
Links parse_pharaoh(const std::string& line, const std::string& where);
GoldLinks parse_talp(const std::string& line, const std::string& where);

// Whole files (plain or gzip), one entry per line.
std::vector<Links> read_pharaoh(const std::string& path);
std::vector<GoldLinks> read_talp(const std::string& path);

// "0-0 1-2 2-1": sorted by source then target index, 0-based.
std::string format_pharaoh(const Links& links);

struct AerCounts {
  size_t predicted = 0;                                     // |A|
  size_t sure = 0;                                          // |S|
  size_t possible = 0;                                      // |P| (sure included)
  size_t predicted_and_sure = 0;                            // |A∩S|
  size_t predicted_and_possible = 0;                        // |A∩P|
  void add(const Links& predicted, const GoldLinks& gold);  // one sentence pair
};

struct AerResult {
  double aer = 0;        // 0..1
  double precision = 1;  // 0..1
  double recall = 1;     // 0..1
  AerCounts counts;
};

AerResult alignment_error_rate(const AerCounts& counts);
// Corpus AER; InputError if the sizes differ.
AerResult alignment_error_rate(const std::vector<Links>& predicted, const std::vector<GoldLinks>& gold);

// Checks that every gold link lies within its sentence's words: InputError naming the line
// ("'gold.talp' line 7: link 12-3 (1-based) but the source has 11 words").
void check_gold_links(const std::vector<GoldLinks>& gold, const std::vector<std::string>& src,
                      const std::vector<std::string>& tgt, const std::string& gold_path);

// Reads a parallel text for alignment: two files, or (tgt_path empty) one file of
// "SRC ||| TGT" lines as ../shared/data/alignment-gold/ ships them. InputError for different
// line counts or a line without " ||| ".
struct AlignmentText {
  std::vector<std::string> src, tgt;
};
AlignmentText read_alignment_text(const std::string& src_path, const std::string& tgt_path);

}  // namespace attnmt
