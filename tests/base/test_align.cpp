// Word alignment without a model: AER against hand-computed cases (possible links and empty
// alignments included), the TALP / Pharaoh formats, detokenisation with word spans, subword ->
// word merging, links from attention, and the comparison report's renderings.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "align/links.h"
#include "align/words.h"
#include "report/heatmap.h"
#include "report/report.h"
#include "util/error.h"

using namespace attnmt;
using Catch::Matchers::Contains;

namespace {

GoldLinks gold(const Links& sure, const Links& possible_only) {
  GoldLinks g;
  g.sure = sure;
  g.possible = sure;
  g.possible.insert(possible_only.begin(), possible_only.end());
  return g;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("AER: hand-computed cases", "[align]") {
  SECTION("sure and possible links") {
    // S = {0-0, 1-1}, P = S + {2-1}; A = {0-0, 2-1, 2-2}
    // |A∩S| = 1, |A∩P| = 2: AER = 1 - (1 + 2) / (3 + 2) = 0.4, precision 2/3, recall 1/2
    const auto r = alignment_error_rate({{{0, 0}, {2, 1}, {2, 2}}}, {gold({{0, 0}, {1, 1}}, {{2, 1}})});
    CHECK(r.aer == Approx(0.4));
    CHECK(r.precision == Approx(2.0 / 3));
    CHECK(r.recall == Approx(0.5));
    CHECK(r.counts.predicted == 3);
    CHECK(r.counts.sure == 2);
    CHECK(r.counts.possible == 3);
  }
  SECTION("perfect: A = S") {
    const auto r = alignment_error_rate({{{0, 0}, {1, 1}}}, {gold({{0, 0}, {1, 1}}, {{2, 1}})});
    CHECK(r.aer == Approx(0.0));
    CHECK(r.precision == Approx(1.0));
    CHECK(r.recall == Approx(1.0));
  }
  SECTION("only possible links predicted, S empty") {
    // S = {}, P = {0-1}; A = {0-1, 1-1}: AER = 1 - (0 + 1) / (2 + 0) = 0.5 = 1 - precision; recall 1 (no sure link)
    const auto r = alignment_error_rate({{{0, 1}, {1, 1}}}, {gold({}, {{0, 1}})});
    CHECK(r.aer == Approx(0.5));
    CHECK(r.precision == Approx(0.5));
    CHECK(r.recall == Approx(1.0));
  }
  SECTION("nothing predicted") {
    // A = {}, S = {0-0}: AER = 1 - 0 / (0 + 1) = 1; precision 1 (no wrong link), recall 0
    const auto r = alignment_error_rate({Links{}}, {gold({{0, 0}}, {})});
    CHECK(r.aer == Approx(1.0));
    CHECK(r.precision == Approx(1.0));
    CHECK(r.recall == Approx(0.0));
  }
  SECTION("everything empty") {
    const auto r = alignment_error_rate({Links{}, Links{}}, {GoldLinks{}, GoldLinks{}});
    CHECK(r.aer == Approx(0.0));
    CHECK(r.precision == Approx(1.0));
    CHECK(r.recall == Approx(1.0));
  }
  SECTION("possible links only, nothing predicted: 0 / 0 counts as perfect") {
    const auto r = alignment_error_rate({Links{}}, {gold({}, {{0, 0}})});
    CHECK(r.aer == Approx(0.0));
  }
  SECTION("corpus counts are summed before dividing") {
    // sentence 1 as in the first case; sentence 2: gold empty, A = {0-0} (a wrong link)
    // |A| = 4, |S| = 2, |A∩S| = 1, |A∩P| = 2: AER = 1 - 3/6 = 0.5, precision 2/4, recall 1/2
    const auto r =
        alignment_error_rate({{{0, 0}, {2, 1}, {2, 2}}, {{0, 0}}}, {gold({{0, 0}, {1, 1}}, {{2, 1}}), GoldLinks{}});
    CHECK(r.aer == Approx(0.5));
    CHECK(r.precision == Approx(0.5));
    CHECK(r.recall == Approx(0.5));
    // an empty sentence pair changes nothing
    const auto same =
        alignment_error_rate({{{0, 0}, {2, 1}, {2, 2}}, Links{}}, {gold({{0, 0}, {1, 1}}, {{2, 1}}), GoldLinks{}});
    CHECK(same.aer == Approx(0.4));
  }
  SECTION("different sentence counts") { CHECK_THROWS_AS(alignment_error_rate({Links{}}, {}), InputError); }
}

TEST_CASE("TALP and Pharaoh lines", "[align]") {
  const auto g = parse_talp("1-1 2p3 4-2  3-4 3p4 ", "x");  // trailing spaces as in the shared gold
  CHECK(g.sure == Links{{0, 0}, {3, 1}, {2, 3}});
  CHECK(g.possible == Links{{0, 0}, {1, 2}, {3, 1}, {2, 3}});  // sure and possible twice: sure
  CHECK(parse_talp("", "x").possible.empty());
  CHECK(parse_pharaoh("0-0 2-1 1-2 0-0", "x") == Links{{0, 0}, {1, 2}, {2, 1}});
  CHECK(format_pharaoh(Links{{2, 1}, {0, 0}, {1, 2}}) == "0-0 1-2 2-1");
  CHECK(format_pharaoh(Links{}).empty());

  CHECK_THROWS_WITH(parse_talp("1-1 2x3", "'g.talp' line 7"), Contains("'g.talp' line 7: bad link '2x3'"));
  CHECK_THROWS_WITH(parse_talp("0-1", "'g' line 1"), Contains("index 0 (TALP indices are 1-based)"));
  CHECK_THROWS_WITH(parse_talp("1-", "'g' line 1"), Contains("bad link '1-'"));
  CHECK_THROWS_WITH(parse_talp("-1-2", "'g' line 1"), Contains("bad link"));
  CHECK_THROWS_WITH(parse_pharaoh("0p1", "'a' line 2"), Contains("'a' line 2: bad link '0p1'"));

  const auto dir = std::filesystem::temp_directory_path() / "attnmt_test_align_files";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "g.talp") << "1-1 2-2\n\n1-2 1p1\nbad\n";
  CHECK_THROWS_WITH(read_talp((dir / "g.talp").string()), Contains("g.talp' line 4: bad link 'bad'"));
  std::ofstream(dir / "g.talp") << "1-1 2-2\n\n3-1\n";
  const auto all = read_talp((dir / "g.talp").string());
  REQUIRE(all.size() == 3);
  CHECK(all[1].possible.empty());
  // link outside its sentence
  CHECK_THROWS_WITH(check_gold_links(all, {"a b", "c", "d e"}, {"x y", "z", "w"}, "g.talp"),
                    Contains("'g.talp' line 3: link 3-1 (1-based) but the pair has 2 source and 1 target words"));
  CHECK_NOTHROW(check_gold_links(all, {"a b", "c", "d e f"}, {"x y", "z", "w"}, "g.talp"));
  CHECK_THROWS_WITH(check_gold_links(all, {"a"}, {"b"}, "g.talp"), Contains("have 3 lines but the text has 1"));

  std::ofstream(dir / "bitext") << "Das ist gut . ||| That is good .\nEin Satz ||| A sentence\n";
  const auto text = read_alignment_text((dir / "bitext").string(), "");
  CHECK(text.src == std::vector<std::string>{"Das ist gut .", "Ein Satz"});
  CHECK(text.tgt == std::vector<std::string>{"That is good .", "A sentence"});
  std::ofstream(dir / "bitext") << "Das ist gut . ||| That is good .\nno separator\n";
  CHECK_THROWS_WITH(read_alignment_text((dir / "bitext").string(), ""), Contains("bitext' line 2: no ' ||| '"));
  std::ofstream(dir / "one") << "a\nb\n";
  std::ofstream(dir / "three") << "a\nb\nc\n";
  CHECK_THROWS_WITH(read_alignment_text((dir / "one").string(), (dir / "three").string()),
                    Contains("has 2 lines but") && Contains("has 3"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("words: detokenised text keeps each token's span", "[align]") {
  const auto de = split_words("Wir glauben nicht , daß wir \" Rosinen \" herauspicken sollten .");
  const auto t = join_words(de, /*detokenize=*/true);
  CHECK(t.text == "Wir glauben nicht, daß wir \"Rosinen\" herauspicken sollten.");
  REQUIRE(t.spans.size() == de.size());
  for (size_t i = 0; i < de.size(); ++i) {
    CHECK(t.text.substr(t.spans[i].first, t.spans[i].second - t.spans[i].first) == de[i]);
  }
  CHECK(join_words(split_words("Parliament 's view ( not all ) , 50 % ' Legal drugs ' ?!"), true).text ==
        "Parliament's view (not all), 50% 'Legal drugs'?!");
  CHECK(join_words(split_words("nicht , daß"), false).text == "nicht , daß");
  CHECK(join_words({}, true).text.empty());
}

TEST_CASE("words: pieces map to the words they cover", "[align]") {
  // "nicht, daß": nicht [0,5) "," [5,6) daß [7,11) (ß is two bytes)
  const std::vector<std::pair<size_t, size_t>> words = {{0, 5}, {5, 6}, {7, 11}};
  // ▁nicht | , | ▁da (covers the space) | ß
  CHECK(map_pieces({{0, 5}, {5, 6}, {6, 9}, {9, 11}}, words) == std::vector<std::vector<int>>{{0}, {1}, {2}, {2}});
  // a piece gluing "t," covers both words; a lone "▁" goes to the next word; one at the end to the last
  CHECK(map_pieces({{0, 4}, {4, 6}, {6, 7}, {7, 11}, {11, 11}}, words) ==
        std::vector<std::vector<int>>{{0}, {0, 1}, {2}, {2}, {2}});

  const auto generated =
      words_from_pieces({"\xE2\x96\x81"
                         "Ein",
                         "\xE2\x96\x81"
                         "Hund",
                         "e", ",", "\xE2\x96\x81", "!", "</s>"});
  CHECK(generated.words == std::vector<std::string>{"Ein", "Hunde,", "!"});
  CHECK(generated.piece_to_words == std::vector<std::vector<int>>{{0}, {1}, {1}, {1}, {2}, {2}, {}});
}

TEST_CASE("words: attention merged from pieces, links from it", "[align]") {
  // source pieces p0 -> w0, p1 p2 -> w1, then </s> (no word); target pieces t0 t1 -> w0, t2 -> w1, then </s>
  const std::vector<std::vector<float>> pieces = {
      {0.5f, 0.2f, 0.2f, 0.1f}, {0.1f, 0.3f, 0.3f, 0.3f}, {0.0f, 0.5f, 0.5f, 0.0f}, {0.f, 0.f, 0.f, 1.f}};
  const auto merged = merge_attention(pieces, {{0}, {0}, {1}}, {{0}, {1}, {1}}, 2, 2);
  // t0 -> (0.5, 0.4)/0.9, t1 -> (0.1, 0.6)/0.7; w0 = their mean; t2 -> (0, 1)
  REQUIRE(merged.size() == 2);
  CHECK(merged[0][0] == Approx((5.0 / 9 + 1.0 / 7) / 2));
  CHECK(merged[0][1] == Approx((4.0 / 9 + 6.0 / 7) / 2));
  CHECK(merged[1][0] == Approx(0.0));
  CHECK(merged[1][1] == Approx(1.0));
  CHECK(links_from_attention(merged) == Links{{1, 0}, {1, 1}});
  CHECK(links_from_attention(merged, 0.3) == Links{{0, 0}, {1, 0}, {1, 1}});
  // a target word without pieces gets an empty row and no link
  const auto gap = merge_attention(pieces, {{0}, {0}, {2}}, {{0}, {1}, {1}}, 3, 2);
  CHECK(gap[1] == std::vector<float>{0.f, 0.f});
  CHECK(links_from_attention(gap) == Links{{1, 0}, {1, 2}});
  // ties: the first source word
  CHECK(links_from_attention({{0.5f, 0.5f}}) == Links{{0, 0}});
}

namespace {

CompareReport sample_report(size_t variants, size_t sentences) {
  CompareReport report;
  report.test_src = "test.de";
  report.test_sentences = 10;
  report.gold_text = "gold.txt";
  report.gold_links = "gold.talp";
  for (size_t k = 0; k < sentences; ++k) {
    report.sample_sources.push_back("Ein Hund läuft <schnell> & weit .");
    report.sample_references.push_back("A dog runs fast .");
  }
  for (size_t v = 0; v < variants; ++v) {
    VariantReport r;
    r.row.variant = "variant_" + std::to_string(v);
    r.row.attention = v % 2 ? "bahdanau" : "luong_general";
    r.row.parameters = 1234567 + static_cast<int64_t>(v);
    r.row.bleu = 10.0 + 7 * ((v * 5) % 3);
    r.row.chrf = 40.0 + v;
    r.row.valid_ppl = 9.5 - v;
    r.row.train_tokens_per_sec = 1500;
    r.row.beam_size = 5;
    r.row.decode_sentences_per_sec = 100.0 + v;
    r.row.peak_rss_mib = 400;
    if (v > 0) r.row.aer = 0.3 + 0.1 * v, r.row.precision = 0.6, r.row.recall = 0.7;  // variant 0: no AER
    if (v > 0) r.row.bleu_p = v == 1 ? 0.001 : 0.25, r.row.chrf_p = 0.5;  // against variant 0
    r.row.steps = 3803;
    r.row.train_minutes = 43.1;
    r.curves.emplace_back();
    for (int s = 1; s <= 4; ++s) {
      r.curves.back().push_back({s * 500, s * 5.0 + v, 5.0 * s + v, 40.0 / s + v});
    }
    for (size_t k = 0; k < sentences; ++k) {
      r.heatmaps.push_back({{"Ein", "Hund", "läuft", "<schnell>", "&", "weit", "."},
                            {"A", "dog", "runs", "."},
                            {{0.9f, 0.1f}, {0.f, 1.f}, {0.f, 0.f, 0.8f}, {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 1.f}},
                            ""});
      r.translations.push_back("A dog runs \"fast\" .");
    }
    report.variants.push_back(r);
  }
  return report;
}

}  // namespace

TEST_CASE("report: table, csv, json, html", "[report]") {
  const auto report = sample_report(3, 2);
  const auto md = results_markdown(report);
  CHECK(count(md, "\n") == 2 + 3);
  CHECK_THAT(md, Contains("| variant | attention | parameters | BLEU | chrF | p BLEU | p chrF | valid ppl |"));
  CHECK_THAT(md, Contains("| variant_0 | `luong_general` | 1,234,567 | 10.00 | 40.00 | \xE2\x80\x93 | \xE2\x80\x93 | 9.50 |"));
  CHECK_THAT(md, Contains("| variant_1 | `bahdanau` | 1,234,568 | 24.00 | 41.00 | 0.001* | 0.500 | 8.50 |"));
  CHECK_THAT(md, Contains("| 17.00 | 42.00 | 0.250 | 0.500 |"));
  CHECK_THAT(md, Contains("| 40.0 |"));          // AER %
  CHECK_THAT(md, Contains("| \xE2\x80\x93 |"));  // variant 0 has no AER: "–"
  const auto csv = results_csv(report);
  CHECK(count(csv, "\n") == 1 + 3);
  CHECK_THAT(csv, Contains("variant_2,,luong_general,,1234569,17,42,0.25,0.5,7.5,1500,5,102,"));
  const auto json = nlohmann::json::parse(results_json(report));
  REQUIRE(json["variants"].size() == 3);
  CHECK(json["variants"][0]["aer"].is_null());
  CHECK(json["variants"][0]["bleu_p"].is_null());
  CHECK(json["variants"][1]["bleu_p"].get<double>() == 0.001);
  CHECK(json["variants"][2]["aer"].get<double>() == Approx(0.5));
  CHECK(json["variants"][1]["curve"].size() == 4);
  const auto terminal = results_terminal(report);
  CHECK(count(terminal, "\n") == 2 + 3);

  const auto html = results_html(report);
  CHECK_THAT(html, Contains("<table id=\"results\">"));
  CHECK(count(html, "<tr data-variant=") == 3);
  CHECK(count(html, "class=\"heatmap\"") == 3 * 2);
  CHECK(count(html, "class=\"chart\"") == 4);
  CHECK(count(html, "class=\"aer-bar\"") == 2);
  CHECK_THAT(html, Contains("&lt;schnell&gt; &amp; weit"));  // escaped
  CHECK(html.find("<schnell>") == std::string::npos);
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));  // no link but the SVG namespace
  CHECK(html.find("https://") == std::string::npos);
}

TEST_CASE("heatmap: SVG cells and labels", "[report]") {
  Heatmap map{{"Ein", "Hund"}, {"A", "dog", "<x>"}, {{1.f, 0.f}, {0.25f, 0.75f}}, "t"};
  const auto svg = heatmap_svg(map, "class=\"heatmap\"");
  CHECK(count(svg, "<rect x=") == 2 * 3 + 1);     // cells + frame
  CHECK_THAT(svg, Contains("rgb(8,48,107)"));     // weight 1
  CHECK_THAT(svg, Contains("rgb(255,255,255)"));  // weight 0 (and the missing third row)
  CHECK_THAT(svg, Contains("&lt;x&gt;"));
  CHECK_THAT(svg, Contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK_THROWS_AS(write_heatmap(map, "/tmp/x.jpg"), InputError);
}
