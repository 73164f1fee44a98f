// attnmt convert against the toolkits themselves: the fixtures in tests/data/convert/ are small
// models trained by OpenNMT-py 2.3, Joey NMT 2.3 and fairseq with their own greedy and beam-5
// n-best outputs and scores for 50 sentences (scripts/convert_fixtures/make_fixtures.sh made them
// from ../shared/peers; scripts/convert_fixtures/fairseq_fixtures.sh the fairseq ones). Each is converted by the real program and translated; the outputs must be the
// toolkit's, line for line, and the scores of equal hypotheses within 1e-4.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "eval/metrics.h"
#include "program.h"

namespace {

using attnmt::test::run;
using attnmt::test::temp_dir;
namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(ATTNMT_TEST_DATA_DIR) / "convert";

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

nlohmann::json json_of(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

struct Hyp {
  std::string text;
  double score = 0;
};

// `attnmt translate --n-best N --scores`: per line its N hypotheses, best first.
std::vector<std::vector<Hyp>> read_nbest(const fs::path& out, const fs::path& scores, size_t lines, int n_best) {
  std::vector<std::vector<Hyp>> hyps(lines);
  const auto text = lines_of(out);
  const auto score = lines_of(scores);
  REQUIRE(text.size() == score.size());
  for (size_t k = 0; k < text.size(); ++k) {
    size_t line = 0;
    std::string hyp = text[k];
    if (n_best > 1) {
      const auto bar = text[k].find(" ||| ");
      line = std::stoul(text[k].substr(0, bar));
      const auto rest = text[k].substr(bar + 5);
      hyp = rest.substr(0, rest.rfind(" ||| "));
    } else {
      line = k;
    }
    const auto tab = score[k].rfind('\t');
    REQUIRE(line < lines);
    hyps[line].push_back({hyp, std::stod(score[k].substr(tab + 1))});
  }
  return hyps;
}

// The toolkit's tokens as attnmt writes them: joined by spaces, or (a SentencePiece model's
// pieces) detokenized as spm_decode does: concatenated, the first piece's leading "▁" dropped and
// the others read as spaces, <unk> written " ⁇ " (Joey NMT fills short n-best lists with <unk>).
std::string expected_text(const nlohmann::json& tokens, bool sentencepiece) {
  const std::string space = "\xe2\x96\x81";            // U+2581
  const std::string unknown = " \xe2\x81\x87 ";         // " U+2047 "
  std::string out;
  for (const auto& t : tokens) {
    const auto token = t.get<std::string>();
    if (!sentencepiece) {
      out += (out.empty() ? "" : " ") + token;
    } else {
      out += token == "<unk>" ? unknown : token;
    }
  }
  if (!sentencepiece) return out;
  if (out.rfind(space, 0) == 0) out.erase(0, space.size());
  for (size_t at = out.find(space); at != std::string::npos; at = out.find(space, at)) out.replace(at, space.size(), " ");
  return out;
}

struct Fixture {
  const char* name;
  const char* from;
  const char* source;  // what convert reads: a file of the fixture ("": the fixture directory)
  const char* spm;     // the model reads raw text through this SentencePiece model ("": pieces)
  bool dictionaries = false;  // fairseq: --data-dir is the fixture directory (its dict.de.txt, dict.en.txt)
  bool vocabs = false;        // Marian: --vocabs the fixture's vocab.de.yml vocab.en.yml
  // Its scores as the toolkit prints them: 6 significant digits (marian-decoder's n-best lists),
  // else in full.
  bool six_digits = false;
};

// How far a score is from the toolkit's beyond the rounding of its printing: 6 significant
// digits are within 5e-6 of the value, relatively.
double score_error(double got, double want, bool six_digits) {
  return std::max(0.0, std::abs(got - want) - (six_digits ? 5e-6 * std::abs(want) : 0.0));
}

// What convert is given besides the source.
std::string convert_extras(const Fixture& f, const fs::path& dir) {
  std::string extras;
  if (f.dictionaries) extras += " --data-dir " + dir.string();
  if (f.vocabs) extras += " --vocabs " + (dir / "vocab.de.yml").string() + " " + (dir / "vocab.en.yml").string();
  return extras;
}

// Every fixture make_fixtures.sh writes.
const Fixture kAll[] = {
    {"onmt_brnn_lstm_general", "opennmt-py", "model.pt", ""},
    {"onmt_rnn_gru_mlp", "opennmt-py", "model.pt", ""},
    {"onmt_brnn_lstm_dot_bridge", "opennmt-py", "model.pt", ""},
    {"onmt3_brnn_lstm_general", "opennmt-py", "model.pt", ""},
    {"onmt3_brnn_lstm_general_safetensors", "opennmt-py", "model.00.safetensors", ""},
    {"joey_lstm_bahdanau_bridge", "joeynmt", "", "spm.model"},
    {"joey_gru_luong_last", "joeynmt", "", ""},
    {"joey_lstm_luong_zero", "joeynmt", "", ""},
    {"fairseq_lstm_bi", "fairseq", "checkpoint.pt", "", true},
    {"fairseq_wiseman", "fairseq", "checkpoint.pt", "", true},
    {"fairseq_luong_shared", "fairseq", "checkpoint.pt", "", true},
    {"marian_s2s", "marian", "model.npz", "", false, true, true},
    {"marian_s2s_deep", "marian", "model.npz", "", false, true, true},
};

// Every hypothesis of every line, as many as the toolkit's: the same text, the score within 1e-4.
void check_full_lists(const std::vector<std::vector<Hyp>>& got, const std::vector<nlohmann::json>& want,
                      bool sentencepiece, const std::string& what, bool six_digits = false) {
  REQUIRE(got.size() == want.size());
  size_t same = 0, total = 0;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(what << ", line " << i);
    CHECK(got[i].size() == want[i].size());
    total += want[i].size();
    for (size_t k = 0; k < want[i].size() && k < got[i].size(); ++k) {
      INFO("hypothesis " << k);
      CHECK(got[i][k].text == expected_text(want[i][k]["tokens"], sentencepiece));
      if (got[i][k].text != expected_text(want[i][k]["tokens"], sentencepiece)) continue;
      ++same;
      worst = std::max(worst, score_error(got[i][k].score, want[i][k]["score"].get<double>(), six_digits));
    }
  }
  WARN(what << ": " << same << "/" << total << " hypotheses equal the toolkit's; largest score difference " << worst);
  CHECK(worst < 1e-4);
}

// Converts a fixture and compares its translations with the toolkit's recorded ones (`expected`,
// made with the model's default settings changed by `decode`; full_lists: also every n-best list
// entry for entry, check_full_lists).
void check_fixture(const Fixture& f, const std::string& expected_file = "expected.jsonl",
                   const std::string& decode = "", bool full_lists = false) {
  const fs::path dir = kFixtures / f.name;
  INFO(f.name << " " << expected_file << " " << decode);
  REQUIRE(fs::exists(dir / expected_file));
  const auto tmp = temp_dir(std::string("convert_") + f.name);
  const fs::path model = tmp / "model.pt";
  const std::string source = *f.source ? (dir / f.source).string() : dir.string();
  const auto converted =
      run("convert --from " + std::string(f.from) + " " + source + " --output " + model.string() + convert_extras(f, dir));
  INFO(converted.output);
  REQUIRE(converted.status == 0);

  const fs::path input = dir / "src.txt";
  const size_t lines = lines_of(input).size();
  std::vector<nlohmann::json> expected;
  for (const auto& line : lines_of(dir / expected_file)) expected.push_back(nlohmann::json::parse(line));
  REQUIRE(expected.size() == lines);
  const bool sentencepiece = *f.spm;  // such a model writes detokenized text

  for (const auto& [search, beam, n_best] : {std::tuple{"greedy", 1, 1}, std::tuple{"beam5", 5, 5}}) {
    const auto out = tmp / (std::string(search) + ".out");
    const auto scores = tmp / (std::string(search) + ".scores");
    const auto r = run("translate --model " + model.string() + " --threads 1 --beam-size " + std::to_string(beam) +
                       " --n-best " + std::to_string(n_best) + " --input " + input.string() + " --output " +
                       out.string() + " --scores " + scores.string() + " " + decode);
    INFO(r.output);
    REQUIRE(r.status == 0);
    const auto got = read_nbest(out, scores, lines, n_best);
    size_t same_best = 0, same_hyps = 0, compared = 0, same_count = 0;
    double worst = 0;
    for (size_t i = 0; i < lines; ++i) {
      const auto& want = std::string(search) == "greedy" ? nlohmann::json::array({expected[i]["greedy"]}) : expected[i]["beam5"];
      REQUIRE(!got[i].empty());
      if (got[i][0].text == expected_text(want[0]["tokens"], sentencepiece)) ++same_best;
      // As many hypotheses as the toolkit wrote (Joey's <unk> padding entries included); one
      // missing or extra counts as a differing hypothesis too.
      INFO("line " << i);
      CHECK(got[i].size() == want.size());
      same_count += got[i].size() == want.size();
      for (size_t k = 0; k < std::max(want.size(), got[i].size()); ++k) {
        ++compared;
        if (k >= want.size() || k >= got[i].size()) continue;
        if (got[i][k].text != expected_text(want[k]["tokens"], sentencepiece)) continue;
        ++same_hyps;
        worst = std::max(worst, score_error(got[i][k].score, want[k]["score"].get<double>(), f.six_digits));
      }
      CHECK(got[i][0].text == expected_text(want[0]["tokens"], sentencepiece));
    }
    WARN(f.name << " " << search << ": " << same_best << "/" << lines << " best outputs and " << same_hyps << "/"
                << compared << " n-best hypotheses equal the toolkit's, " << same_count << "/" << lines
                << " lists as long as its; largest score difference " << worst);
    CHECK(same_count == lines);
    CHECK(same_best == lines);
    CHECK(same_hyps * 100 >= compared * 99);
    CHECK(worst < 1e-4);
    if (full_lists) {
      std::vector<nlohmann::json> want;
      for (const auto& e : expected)
        want.push_back(std::string(search) == "greedy" ? nlohmann::json::array({e["greedy"]}) : e["beam5"]);
      check_full_lists(got, want, sentencepiece, std::string(f.name) + " " + search, f.six_digits);
    }
  }
  // decode.precision int8 on the converted model (runtime/int8_gemm.h): it runs, and most beam
  // outputs stay the toolkit's (the fixtures' models are small and barely trained: their choices
  // are close calls more often than a real model's).
  const auto out = tmp / "int8.out";
  const auto r = run("translate --model " + model.string() + " --threads 1 --beam-size 5 --precision int8 --input " +
                     input.string() + " --output " + out.string() + " " + decode);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto got = lines_of(out);
  REQUIRE(got.size() == lines);
  std::vector<std::string> fp32;
  size_t same = 0;
  for (size_t i = 0; i < lines; ++i) {
    fp32.push_back(expected_text(expected[i]["beam5"][0]["tokens"], sentencepiece));
    same += got[i] == fp32.back();
  }
  const double bleu = attnmt::corpus_bleu(got, fp32).score;
  WARN(f.name << " int8: " << same << "/" << lines << " beam outputs equal the toolkit's fp32 ones, BLEU " << bleu
              << " against them");
  CHECK(bleu > 60.0);
}

}  // namespace

TEST_CASE("convert: OpenNMT-py 2.x models translate as OpenNMT-py does", "[e2e][convert]") {
  for (const auto& f : kAll) {
    if (std::string(f.name).rfind("onmt_", 0) == 0) check_fixture(f);
  }
}

// A converted 3.x model translates with OpenNMT-py 3.5.1's translate.py defaults and search rules
// (decode.search_rules opennmt3): with no decoding option it gives what 3.5.1 gives with all its
// defaults (expected_v351_defaults.jsonl: beam 5, length_penalty avg, alpha 1, max_length 250,
// max_length_ratio 1.25; n_best 1, and n_best 5, which ends the beam later in 3.x). Scores are
// 3.x's: log P / (tokens + eos + bos).
void check_v351_defaults(const Fixture& f) {
  const fs::path dir = kFixtures / f.name;
  INFO(f.name);
  std::vector<nlohmann::json> expected;
  for (const auto& line : lines_of(dir / "expected_v351_defaults.jsonl"))
    expected.push_back(nlohmann::json::parse(line));
  const auto tmp = temp_dir(std::string("convert_defaults_") + f.name);
  const fs::path model = tmp / "model.pt";
  const auto converted =
      run("convert --from " + std::string(f.from) + " " + (dir / f.source).string() + " --output " + model.string());
  INFO(converted.output);
  REQUIRE(converted.status == 0);
  const fs::path input = dir / "src.txt";
  REQUIRE(expected.size() == lines_of(input).size());
  for (const int n_best : {1, 5}) {
    const auto out = tmp / "out.txt", scores = tmp / "scores.txt";
    const auto r = run("translate --model " + model.string() + " --threads 1 --n-best " + std::to_string(n_best) +
                       " --input " + input.string() + " --output " + out.string() + " --scores " + scores.string());
    INFO(r.output);
    REQUIRE(r.status == 0);
    std::vector<nlohmann::json> want;
    for (const auto& e : expected) want.push_back(e["nbest" + std::to_string(n_best)]);
    check_full_lists(read_nbest(out, scores, expected.size(), n_best), want, false,
                     std::string(f.name) + " 3.5.1 defaults, n_best " + std::to_string(n_best));
  }
  fs::remove_all(tmp);
}

// 3.5.1's own outputs with 2.3's settings (expected_v351.jsonl: -length_penalty none -alpha 0
// -max_length 100, its default max_length_ratio 1.25 left as it is) differ from 2.3's in one
// 5th-best (its beam ends by another rule); the converted model must give 3.5.1's, every entry.
TEST_CASE("convert: OpenNMT-py 3.x checkpoints (vocabularies as lists, weights in the .pt or in safetensors)",
          "[e2e][convert]") {
  for (const auto& f : kAll) {
    if (std::string(f.name).rfind("onmt3_", 0) != 0) continue;
    check_fixture(f, "expected_v351.jsonl", "--length-penalty 0 --max-length 100", /*full_lists=*/true);
    check_v351_defaults(f);
  }
}

TEST_CASE("convert: Joey NMT models translate as Joey NMT does", "[e2e][convert]") {
  for (const auto& f : kAll) {
    if (std::string(f.name).rfind("joey_", 0) == 0) check_fixture(f);
  }
}

// fairseq-generate's own outputs (expected.jsonl: --beam 1, and --beam 5 --nbest 5, its defaults
// otherwise: lenpen 1, min_len 1, max_len_b 200) with the converted model's defaults (decode.
// search_rules fairseq, stored by convert): every n-best entry, as many, scores within 1e-4.
TEST_CASE("convert: fairseq LSTM models translate as fairseq-generate does", "[e2e][convert]") {
  for (const auto& f : kAll) {
    if (std::string(f.name).rfind("fairseq_", 0) == 0) check_fixture(f, "expected.jsonl", "", /*full_lists=*/true);
  }
  // fairseq-generate --lenpen 0.6 --unkpen 1 --min-len 3 --max-len-a 0.5 --max-len-b 5 (short
  // limits: many hypotheses end at int(0.5 x source tokens with </s> + 5)), as attnmt's options.
  for (const auto& f : kAll) {
    if (std::string(f.name) != "fairseq_wiseman") continue;
    check_fixture(f, "expected_options.jsonl",
                  "--length-penalty 0.6 --unk-penalty 1 --min-length 3 --max-length-ratio 0.5 --max-length 5",
                  /*full_lists=*/true);
  }
}

// marian-decoder's own outputs (expected.jsonl: --beam-size 1, and --beam-size 5 --n-best, its
// defaults otherwise: normalize 0, word-penalty 0, max-length-factor 3, no --allow-unk) with the
// converted model's defaults (decode.search_rules marian, stored by convert): every n-best entry,
// as many, scores within 1e-4 beyond the rounding of Marian's 6 printed digits.
TEST_CASE("convert: Marian s2s models translate as marian-decoder does", "[e2e][convert]") {
  for (const auto& f : kAll) {
    if (std::string(f.name).rfind("marian_", 0) == 0) check_fixture(f, "expected.jsonl", "", /*full_lists=*/true);
  }
  // marian-decoder --normalize 0.6 --word-penalty 0.5 --max-length-factor 1 (the limit cuts many
  // hypotheses of this barely trained model), as attnmt's options.
  for (const auto& f : kAll) {
    if (std::string(f.name) != "marian_s2s") continue;
    check_fixture(f, "expected_options.jsonl", "--length-penalty 0.6 --word-penalty 0.5 --max-length-ratio 1",
                  /*full_lists=*/true);
  }
}

// A converted fairseq or Marian model is an ordinary model file: ensembles, bf16, int8, align and
// plot run on it.
TEST_CASE("convert: a converted fairseq or Marian model runs in ensembles, bf16, align and plot", "[e2e][convert]") {
  for (const auto& f : kAll) {
    if (std::string(f.name) != "fairseq_wiseman" && std::string(f.name) != "marian_s2s") continue;
    INFO(f.name);
    const auto dir = kFixtures / f.name;
    const auto tmp = temp_dir(std::string("convert_uses_") + f.name);
    const auto model = tmp / "model.pt";
    REQUIRE(run("convert --from " + std::string(f.from) + " " + (dir / f.source).string() + convert_extras(f, dir) +
                " --output " + model.string()).status == 0);
    const auto input = (dir / "src.txt").string();
    const size_t lines = lines_of(dir / "src.txt").size();
    for (const std::string& extra :
         std::vector<std::string>{"--model " + model.string(), "--precision bf16", "--precision int8"}) {
      const auto out = tmp / "out.txt";
      const auto r = run("translate --model " + model.string() + " " + extra + " --threads 1 --input " + input +
                         " --output " + out.string());
      INFO(extra << "\n" << r.output);
      REQUIRE(r.status == 0);
      CHECK(lines_of(out).size() == lines);
    }
    // The references: the toolkit's own greedy outputs.
    {
      std::ofstream ref(tmp / "ref.txt");
      for (const auto& line : lines_of(dir / "expected.jsonl")) {
        ref << expected_text(nlohmann::json::parse(line)["greedy"]["tokens"], false) << "\n";
      }
    }
    const auto aligned = run("align --model " + model.string() + " --src " + input + " --tgt " + (tmp / "ref.txt").string() +
                             " --output " + (tmp / "align.txt").string());
    INFO(aligned.output);
    REQUIRE(aligned.status == 0);
    CHECK(lines_of(tmp / "align.txt").size() == lines);
    const auto first = lines_of(dir / "src.txt").front();
    const auto plotted = run("plot --model " + model.string() + " --src '" + first + "' --output " + (tmp / "a.svg").string());
    INFO(plotted.output);
    REQUIRE(plotted.status == 0);
    CHECK(fs::file_size(tmp / "a.svg") > 0);
    fs::remove_all(tmp);
  }
}

TEST_CASE("convert: what attnmt cannot compute, or cannot read, is refused in one line and nothing is written",
          "[e2e][convert][bad_input]") {
  const auto tmp = temp_dir("convert_refused");
  const auto out = tmp / "out.pt";
  auto refused = [&](const std::string& args, const std::string& says) {
    const auto r = run("convert " + args + " --output " + out.string());
    INFO(args << "\n" << r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("attnmt: error: ") && Catch::Contains(says));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);  // one line
    CHECK(!fs::exists(out));
  };
  const auto refused_dir = kFixtures / "refused";
  // OpenNMT-py options attnmt does not compute (scripts/convert_fixtures/make_refused.py)
  refused("--from opennmt-py " + (refused_dir / "transformer.pt").string(), "Transformer");
  refused("--from opennmt-py " + (refused_dir / "transformer.pt").string(), "CTranslate2");
  refused("--from opennmt-py " + (refused_dir / "copy_attn.pt").string(), "copy attention");
  refused("--from opennmt-py " + (refused_dir / "sparsemax.pt").string(), "sparsemax");
  refused("--from opennmt-py " + (refused_dir / "context_gate.pt").string(), "context gate");
  refused("--from opennmt-py " + (refused_dir / "sru.pt").string(), "SRU");
  // files that are not checkpoints, or not whole ones
  const auto onmt = kFixtures / "onmt_brnn_lstm_general" / "model.pt";
  attnmt::test::write(tmp / "text.pt", "not a checkpoint\n");
  refused("--from opennmt-py " + (tmp / "text.pt").string(), (tmp / "text.pt").string());
  {
    std::ifstream in(onmt, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream cut(tmp / "cut.pt", std::ios::binary);
    cut.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  refused("--from opennmt-py " + (tmp / "cut.pt").string(), (tmp / "cut.pt").string());
  refused("--from opennmt-py " + (tmp / "missing.pt").string(), "missing.pt");
  refused("--from joeynmt " + onmt.string(), "config.yaml");
  refused("--from opennmt-py " + (kFixtures / "joey_lstm_bahdanau_bridge" / "best.ckpt").string(), "--from joeynmt");
  refused("--from sockeye " + onmt.string(), "--from: 'sockeye'");
  // fairseq: what its lstm family has that attnmt does not compute, and missing dictionaries
  // (scripts/convert_fixtures/fairseq_refused.py: the fixture's checkpoint with another option)
  const auto fairseq = kFixtures / "fairseq_wiseman";
  const auto dicts = " --data-dir " + fairseq.string();
  refused("--from fairseq " + (refused_dir / "fairseq_transformer.pt").string() + dicts, "'transformer' model (arch)");
  refused("--from fairseq " + (refused_dir / "fairseq_adaptive_softmax.pt").string() + dicts, "adaptive softmax");
  refused("--from fairseq " + (refused_dir / "fairseq_no_attention.pt").string() + dicts, "decoder_attention 0");
  refused("--from fairseq " + (fairseq / "checkpoint.pt").string(), "--data-dir: required");
  refused("--from fairseq " + (fairseq / "checkpoint.pt").string() + " --data-dir " + tmp.string(), "dict.de.txt");
  refused("--from fairseq " + (fairseq / "checkpoint.pt").string() + " --data-dir " +
              (kFixtures / "fairseq_luong_shared").string(), "not the dictionaries it was trained with");
  refused("--from fairseq " + onmt.string() + dicts, "--from opennmt-py");
  refused("--from opennmt-py " + onmt.string() + dicts, "--data-dir: only with --from fairseq");
  // Marian: options attnmt does not compute (scripts/convert_fixtures/marian_refused.py: the
  // fixture's options with one changed), vocabularies missing or not the model's
  const auto marian = kFixtures / "marian_s2s";
  const auto vocabs = " --vocabs " + (marian / "vocab.de.yml").string() + " " + (marian / "vocab.en.yml").string();
  refused("--from marian " + (refused_dir / "marian_transformer.npz").string() + vocabs, "'transformer' model (type)");
  refused("--from marian " + (refused_dir / "marian_layer_norm.npz").string() + vocabs, "layer-normalization");
  refused("--from marian " + (refused_dir / "marian_lstm.npz").string() + vocabs, "dec-cell lstm");
  refused("--from marian " + (marian / "model.npz").string(), "--vocabs: required");
  refused("--from marian " + onmt.string() + vocabs, "not a .npz file");
  refused("--from marian " + (marian / "model.npz").string() + " --vocabs " + (marian / "vocab.en.yml").string() + " " +
              (marian / "vocab.de.yml").string(),
          "not the vocabularies it was trained with");
  refused("--from fairseq " + (fairseq / "checkpoint.pt").string() + dicts + vocabs, "--vocabs: only with --from marian");
  // a SentencePiece model that is not the one the vocabulary was built with
  refused("--from opennmt-py " + onmt.string() + " --spm " + (fs::path(ATTNMT_TEST_DATA_DIR) / "model_v1" / "spm.model").string(),
          "not the SentencePiece model");
  // a Joey NMT model directory without its target vocabulary
  const auto joey = tmp / "joey";
  fs::copy(kFixtures / "joey_lstm_bahdanau_bridge", joey, fs::copy_options::recursive);
  fs::remove(joey / "trg_vocab.txt");
  refused("--from joeynmt " + joey.string(), "trg_vocab.txt");
  fs::remove_all(tmp);
}

TEST_CASE("convert: a model converted with its SentencePiece model reads raw text and writes what the toolkit wrote",
          "[e2e][convert]") {
  const auto dir = kFixtures / "onmt_brnn_lstm_general";
  const auto tmp = temp_dir("convert_spm");
  const auto pieces = tmp / "pieces.pt", raw = tmp / "raw.pt";
  REQUIRE(run("convert --from opennmt-py " + (dir / "model.pt").string() + " --output " + pieces.string()).status == 0);
  const auto spm_path = kFixtures / "spm500.model";
  REQUIRE(run("convert --from opennmt-py " + (dir / "model.pt").string() + " --spm " + spm_path.string() + " --output " +
              raw.string()).status == 0);
  const auto a = run("translate --model " + pieces.string() + " --threads 1 --input " + (dir / "src.txt").string() +
                     " --output " + (tmp / "a.txt").string());
  const auto b = run("translate --model " + raw.string() + " --threads 1 --input " + (dir / "src.raw.txt").string() +
                     " --output " + (tmp / "b.txt").string());
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  const auto piece_lines = lines_of(tmp / "a.txt");
  const auto raw_lines = lines_of(tmp / "b.txt");
  REQUIRE(piece_lines.size() == raw_lines.size());
  for (size_t i = 0; i < raw_lines.size(); ++i) {
    nlohmann::json tokens = nlohmann::json::array();
    std::istringstream in(piece_lines[i]);
    for (std::string t; in >> t;) tokens.push_back(t);
    CHECK(raw_lines[i] == expected_text(tokens, true));
  }
  fs::remove_all(tmp);
}
