// attnmt convert against the toolkits themselves: the fixtures in tests/data/convert/ are small
// models trained by OpenNMT-py 2.3 and Joey NMT 2.3 with their own greedy and beam-5 n-best
// outputs and scores for 50 sentences (scripts/convert_fixtures/make_fixtures.sh made them from
// ../shared/peers). Each is converted by the real program and translated; the outputs must be the
// toolkit's, line for line, and the scores of equal hypotheses within 1e-4.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "data/tokenizer.h"
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

// The toolkit's tokens as attnmt writes them: joined by spaces, or detokenized by `spm`.
std::string expected_text(const nlohmann::json& tokens, const attnmt::Tokenizer* spm,
                          const std::map<std::string, int>& spm_ids) {
  std::vector<std::string> pieces;
  for (const auto& t : tokens) pieces.push_back(t.get<std::string>());
  if (!spm) {
    std::string out;
    for (const auto& p : pieces) out += (out.empty() ? "" : " ") + p;
    return out;
  }
  std::vector<int> ids;
  for (const auto& p : pieces) {
    auto it = spm_ids.find(p);
    ids.push_back(it == spm_ids.end() ? attnmt::Tokenizer::kUnk : it->second);
  }
  return spm->decode(ids);
}

struct Fixture {
  const char* name;
  const char* from;
  const char* spm;  // the model reads raw text through this SentencePiece model ("": pieces)
};

// Every fixture make_fixtures.sh writes.
const Fixture kAll[] = {
    {"onmt_brnn_lstm_general", "opennmt-py", ""},    {"onmt_rnn_gru_mlp", "opennmt-py", ""},
    {"onmt_brnn_lstm_dot_bridge", "opennmt-py", ""}, {"onmt3_brnn_lstm_general", "opennmt-py", ""},
    {"joey_lstm_bahdanau_bridge", "joeynmt", "spm.model"}, {"joey_gru_luong_last", "joeynmt", ""},
    {"joey_lstm_luong_zero", "joeynmt", ""},
};

// Converts a fixture and compares its translations with the toolkit's recorded ones.
void check_fixture(const Fixture& f) {
  const fs::path dir = kFixtures / f.name;
  INFO(f.name);
  REQUIRE(fs::exists(dir / "settings.json"));
  const auto settings = json_of(dir / "settings.json");
  const auto tmp = temp_dir(std::string("convert_") + f.name);
  const fs::path model = tmp / "model.pt";
  const std::string source = std::string(f.from) == "joeynmt" ? dir.string() : (dir / settings["checkpoint"].get<std::string>()).string();
  const auto converted = run("convert --from " + std::string(f.from) + " " + source + " --output " + model.string());
  INFO(converted.output);
  REQUIRE(converted.status == 0);

  const fs::path input = dir / "src.txt";
  const size_t lines = lines_of(input).size();
  std::vector<nlohmann::json> expected;
  for (const auto& line : lines_of(dir / "expected.jsonl")) expected.push_back(nlohmann::json::parse(line));
  REQUIRE(expected.size() == lines);
  // A model that tokenizes with SentencePiece writes detokenized text.
  std::unique_ptr<attnmt::Tokenizer> spm;
  std::map<std::string, int> spm_ids;
  if (*f.spm) {
    spm = std::make_unique<attnmt::Tokenizer>((dir / f.spm).string());
    for (int i = 0; i < spm->vocab_size(); ++i) spm_ids.emplace(spm->piece(i), i);
  }

  for (const auto& [search, beam, n_best] : {std::tuple{"greedy", 1, 1}, std::tuple{"beam5", 5, 5}}) {
    const auto out = tmp / (std::string(search) + ".out");
    const auto scores = tmp / (std::string(search) + ".scores");
    const auto r = run("translate --model " + model.string() + " --threads 1 --beam-size " + std::to_string(beam) +
                       " --n-best " + std::to_string(n_best) + " --input " + input.string() + " --output " +
                       out.string() + " --scores " + scores.string());
    INFO(r.output);
    REQUIRE(r.status == 0);
    const auto got = read_nbest(out, scores, lines, n_best);
    size_t same_best = 0, same_hyps = 0, compared = 0;
    double worst = 0;
    for (size_t i = 0; i < lines; ++i) {
      const auto& want = std::string(search) == "greedy" ? nlohmann::json::array({expected[i]["greedy"]}) : expected[i]["beam5"];
      REQUIRE(!got[i].empty());
      if (got[i][0].text == expected_text(want[0]["tokens"], spm.get(), spm_ids)) ++same_best;
      for (size_t k = 0; k < want.size() && k < got[i].size(); ++k) {
        ++compared;
        if (got[i][k].text != expected_text(want[k]["tokens"], spm.get(), spm_ids)) continue;
        ++same_hyps;
        worst = std::max(worst, std::abs(got[i][k].score - want[k]["score"].get<double>()));
      }
      CHECK(got[i][0].text == expected_text(want[0]["tokens"], spm.get(), spm_ids));
    }
    WARN(f.name << " " << search << ": " << same_best << "/" << lines << " best outputs and " << same_hyps << "/"
                << compared << " n-best hypotheses equal the toolkit's; largest score difference " << worst);
    CHECK(same_best == lines);
    CHECK(same_hyps * 100 >= compared * 99);
    CHECK(worst < 1e-4);
  }
}

}  // namespace

TEST_CASE("convert: OpenNMT-py 2.x models translate as OpenNMT-py does", "[e2e][convert]") {
  for (const auto& f : kAll) {
    if (std::string(f.name).rfind("onmt_", 0) == 0) check_fixture(f);
  }
}

TEST_CASE("convert: an OpenNMT-py 3.x checkpoint (vocabularies as lists) translates as its 2.x twin", "[e2e][convert]") {
  check_fixture(kAll[3]);
}

TEST_CASE("convert: Joey NMT models translate as Joey NMT does", "[e2e][convert]") {
  for (const auto& f : kAll) {
    if (std::string(f.name).rfind("joey_", 0) == 0) check_fixture(f);
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
  refused("--from marian " + onmt.string(), "--from: 'marian'");
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
  attnmt::Tokenizer spm(spm_path.string());
  std::map<std::string, int> ids;
  for (int i = 0; i < spm.vocab_size(); ++i) ids.emplace(spm.piece(i), i);
  const auto piece_lines = lines_of(tmp / "a.txt");
  const auto raw_lines = lines_of(tmp / "b.txt");
  REQUIRE(piece_lines.size() == raw_lines.size());
  for (size_t i = 0; i < raw_lines.size(); ++i) {
    nlohmann::json tokens = nlohmann::json::array();
    std::istringstream in(piece_lines[i]);
    for (std::string t; in >> t;) tokens.push_back(t);
    CHECK(raw_lines[i] == expected_text(tokens, &spm, ids));
  }
  fs::remove_all(tmp);
}
