// Bad input through the real program, one row per case: every command answers with one line
// "attnmt: error: <what, which file/key/line>" and exit 2 (never a signal, an abort, an uncaught
// exception or a LibTorch backtrace), and writes nothing half. The accepted oddities (CRLF, no
// final newline, empty and overlong translate lines) are rows too, with exit 0.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <random>
#include <string>

#include "program.h"
#include "io/model_file.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

struct Case {
  const char* name;
  std::function<std::string(const fs::path& dir)> setup;  // writes files, returns the arguments
  int exit_code;
  std::vector<std::string> expect;  // substrings of the output
};


std::string config_with(const fs::path& dir, const std::string& train_src, const std::string& train_tgt,
                        int max_steps = 2) {
  std::string c = tiny_config(dir / "m", max_steps);
  const std::string from = "train: {src: " + kData + "/tiny.de, tgt: " + kData + "/tiny.en}";
  c.replace(c.find(from), from.size(), "train: {src: " + train_src + ", tgt: " + train_tgt + "}");
  return c;
}

// A corpus pair: the German side given, the English side the tiny corpus's first N lines.
std::string corpus_case(const fs::path& dir, const std::string& src_text, size_t tgt_lines) {
  std::string tgt;
  auto en = attnmt::read_lines(kData + "/tiny.en");
  for (size_t i = 0; i < tgt_lines; ++i) tgt += en[i % en.size()] + "\n";
  write(dir / "src.txt", src_text);
  write(dir / "tgt.txt", tgt);
  write(dir / "c.yaml", config_with(dir, (dir / "src.txt").string(), (dir / "tgt.txt").string()));
  return "train " + (dir / "c.yaml").string();
}

// A small trained model in dir/model (2 updates: enough for every model and translate case).
fs::path trained_model(const fs::path& dir) {
  write(dir / "t.yaml", tiny_config(dir / "model", 2));
  auto r = run("train " + (dir / "t.yaml").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  return dir / "model";
}

std::string de_lines(size_t n) {
  std::string text;
  auto de = attnmt::read_lines(kData + "/tiny.de");
  for (size_t i = 0; i < n; ++i) text += de[i % de.size()] + "\n";
  return text;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> table = {
      // --- config
      {"YAML syntax error", [](const fs::path& d) {
         write(d / "c.yaml", "train:\n  save_dir: x\n   bad: [1\n");
         return "train " + (d / "c.yaml").string(); },
       2, {"YAML syntax error at line 3, column"}},
      {"wrong type", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2) + "model: {encoder: {layers: two}}\n");
         return "train " + (d / "c.yaml").string(); },
       2, {"model"}},
      {"wrong type (nested)", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "train " + (d / "c.yaml").string() + " --set model.encoder.layers=two"; },
       2, {"model.encoder.layers", "two"}},
      {"negative size", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "train " + (d / "c.yaml").string() + " --set model.encoder.hidden_size=-4"; },
       2, {"model.encoder.hidden_size must be > 0, got -4"}},
      {"dropout >= 1", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "train " + (d / "c.yaml").string() + " --set model.decoder.dropout=1"; },
       2, {"model.decoder.dropout must be in [0, 1)"}},
      {"beam 0", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "train " + (d / "c.yaml").string() + " --set decode.beam_size=0"; },
       2, {"decode.beam_size must be >= 1, got 0"}},
      // Keys a variant would ignore are refused before any data is read.
      {"coverage on a variant without a coverage term", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "train " + (d / "c.yaml").string() +
                " --set model.attention.type=local_m --set model.attention.coverage=true"; },
       2, {"model.attention.coverage: 'local_m' has no coverage term", "bahdanau, luong_concat"}},
      {"coverage loss without coverage", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "train " + (d / "c.yaml").string() +
                " --set model.attention.type=bahdanau --set model.attention.coverage_loss=1"; },
       2, {"model.attention.coverage_loss (1.000000) needs model.attention.coverage: true"}},
      {"attention dropout on a variant without heads", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "train " + (d / "c.yaml").string() +
                " --set model.attention.type=luong_general --set model.attention.dropout=0.1"; },
       2, {"model.attention.dropout: 'luong_general' has no heads' weights to drop"}},
      {"attention dropout >= 1", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "train " + (d / "c.yaml").string() +
                " --set model.attention.type=multi_head --set model.attention.dropout=1"; },
       2, {"model.attention.dropout must be in [0, 1)"}},
      {"unknown key, closest suggested", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2) + "decode_: {}\nthread: 2\n");
         return "train " + (d / "c.yaml").string(); },
       2, {"unknown key", "did you mean"}},
      {"missing required key", [](const fs::path& d) {
         write(d / "c.yaml", "train: {save_dir: " + (d / "m").string() + "}\n");
         return "train " + (d / "c.yaml").string(); },
       2, {"missing required key 'data.train.src'"}},
      {"config file missing", [](const fs::path& d) { return "train " + (d / "absent.yaml").string(); },
       2, {"absent.yaml"}},
      {"corpus path missing", [](const fs::path& d) {
         write(d / "c.yaml", config_with(d, (d / "nope.de").string(), kData + "/tiny.en"));
         return "train " + (d / "c.yaml").string(); },
       2, {"nope.de"}},
      {"corpus path is a directory", [](const fs::path& d) {
         write(d / "c.yaml", config_with(d, d.string(), kData + "/tiny.en"));
         return "train " + (d / "c.yaml").string(); },
       2, {"Is a directory"}},
      {"save dir not writable (below a file)", [](const fs::path& d) {
         write(d / "file", "x");
         write(d / "c.yaml", tiny_config(d / "file" / "m", 2));
         return "train " + (d / "c.yaml").string(); },
       2, {"train.save_dir", "file/m"}},
      // --- corpora
      {"different line counts", [](const fs::path& d) { return corpus_case(d, de_lines(30), 29); },
       2, {"src.txt' has 30 lines but", "tgt.txt' has 29"}},
      {"invalid UTF-8", [](const fs::path& d) { return corpus_case(d, de_lines(1) + "Ein \xC3\x28 Mann\n", 2); },
       2, {"src.txt' line 2: invalid UTF-8 at byte 4"}},
      {"NUL byte", [](const fs::path& d) { return corpus_case(d, de_lines(2) + std::string("ab\0cd\n", 6), 3); },
       2, {"src.txt' line 3: NUL byte at byte 2"}},
      {"10 MB line", [](const fs::path& d) { return corpus_case(d, de_lines(1) + std::string(10 << 20, 'a') + "\n", 2); },
       2, {"src.txt' line 2: line is longer than 1048576 bytes"}},
      {"empty file", [](const fs::path& d) { return corpus_case(d, "", 0); }, 2, {"src.txt' is empty"}},
      {"CRLF line ends are accepted", [](const fs::path& d) {
         std::string crlf;
         for (auto& l : attnmt::read_lines(kData + "/tiny.de")) crlf += l + "\r\n";
         return corpus_case(d, crlf, 30); },
       0, {"30 pairs kept"}},
      {"no final newline is accepted", [](const fs::path& d) {
         auto text = de_lines(30);
         text.pop_back();
         return corpus_case(d, text, 30); },
       0, {"30 pairs kept"}},
      // --- models
      {"model dir missing", [](const fs::path& d) { return "translate --model " + (d / "absent").string(); },
       2, {"absent' does not exist (give a model file or a save dir)"}},
      {"no checkpoint", [](const fs::path& d) {
         fs::create_directories(d / "empty");
         return "translate --model " + (d / "empty").string(); },
       2, {"no model in", "expected best.pt or ckpt.<step>.pt"}},
      {"truncated checkpoint", [](const fs::path& d) {
         auto m = trained_model(d);
         auto bytes = attnmt::read_file((m / "best.pt").string());
         write(m / "best.pt", bytes.substr(0, bytes.size() / 2));
         return "translate --model " + m.string() + " --input " + kData + "/tiny.de"; },
       2, {"best.pt' is truncated or corrupted"}},
      {"corrupted checkpoint", [](const fs::path& d) {
         auto m = trained_model(d);
         std::string noise(4096, '\0');
         std::mt19937 gen(7);
         for (auto& c : noise) c = static_cast<char>(gen());
         write(m / "best.pt", noise);
         return "translate --model " + m.string() + " --input " + kData + "/tiny.de"; },
       2, {"best.pt' is truncated or corrupted"}},
      {"checkpoint of an unknown older format version", [](const fs::path& d) {
         auto m = trained_model(d);
         torch::serialize::OutputArchive archive;
         archive.write("format_version", c10::IValue(int64_t{0}));
         archive.save_to((m / "best.pt").string());
         return "translate --model " + m.string() + " --input " + kData + "/tiny.de"; },
       2, {"has format version 0, this attnmt reads versions 1 and 2"}},
      // A file of a newer format names the attnmt that wrote it (stored since format 2).
      {"checkpoint of a newer format", [](const fs::path& d) {
         auto m = trained_model(d);
         torch::serialize::OutputArchive archive;
         archive.write("format_version", c10::IValue(int64_t{99}));
         archive.write("attnmt_version", c10::IValue(std::string("9.1.0")));
         archive.save_to((m / "best.pt").string());
         return "translate --model " + m.string() + " --input " + kData + "/tiny.de"; },
       2, {"best.pt' has model format 99 (written by attnmt 9.1.0), newer than this attnmt " ATTNMT_VERSION
           " reads (formats 1 to 2): upgrade attnmt to load it"}},
      {"checkpoint of a newer format without its writer's version", [](const fs::path& d) {
         auto m = trained_model(d);
         torch::serialize::OutputArchive archive;
         archive.write("format_version", c10::IValue(int64_t{3}));
         archive.save_to((m / "best.pt").string());
         return "translate --model " + m.string() + " --input " + kData + "/tiny.de"; },
       2, {"best.pt' has model format 3, newer than this attnmt"}},
      // A format-1 model (tests/data/model_v1) reads its tokenizer from its directory.
      {"format-1 model: tokenizer model missing", [](const fs::path& d) {
         fs::copy(kData + "/model_v1", d / "m", fs::copy_options::recursive);
         fs::remove(d / "m" / "spm.model");
         return "translate --model " + (d / "m").string() + " --input " + kData + "/tiny.de"; },
       2, {"no tokenizer model in", "spm.model"}},
      {"format-1 model: tokenizer model of another vocabulary", [](const fs::path& d) {
         fs::copy(kData + "/model_v1", d / "m", fs::copy_options::recursive);
         write(d / "o.yaml", tiny_config(d / "other", 1) + "");
         auto r = run("train " + (d / "o.yaml").string() + " --set tokenizer.vocab_size=300");
         REQUIRE(r.status == 0);
         fs::copy_file(d / "other" / "spm.model", d / "m" / "spm.model", fs::copy_options::overwrite_existing);
         fs::remove(d / "m" / "config.yaml");
         return "translate --model " + (d / "m").string() + " --input " + kData + "/tiny.de"; },
       2, {"pieces but the checkpoint was trained with"}},
      // --- translate options: refused with the key named, as the config refuses them
      {"translate: beam size 0", [](const fs::path& d) {
         return "translate --model " + trained_model(d).string() + " --input " + kData + "/tiny.de --beam-size 0"; },
       2, {"decode.beam_size must be >= 1, got 0"}},
      {"translate: negative beam size", [](const fs::path& d) {
         return "translate --model " + trained_model(d).string() + " --input " + kData + "/tiny.de --beam-size -3"; },
       2, {"decode.beam_size must be >= 1, got -3"}},
      {"translate: negative threads", [](const fs::path& d) {
         return "translate --model " + trained_model(d).string() + " --input " + kData + "/tiny.de --threads -2"; },
       2, {"threads must be >= 0"}},
      {"translate: batch size 0", [](const fs::path& d) {
         return "translate --model " + trained_model(d).string() + " --input " + kData + "/tiny.de --batch-size 0"; },
       2, {"decode.batch_size must be >= 1, got 0"}},
      {"translate: n-best over the beam", [](const fs::path& d) {
         return "translate --model " + trained_model(d).string() + " --input " + kData +
                "/tiny.de --beam-size 5 --n-best 6"; },
       2, {"decode.n_best must be in [1, decode.beam_size=5], got 6"}},
      {"translate: infinite length penalty", [](const fs::path& d) {
         return "translate --model " + trained_model(d).string() + " --input " + kData + "/tiny.de --length-penalty inf"; },
       2, {"decode.length_penalty"}},
      {"translate: --set of a model key", [](const fs::path& d) {
         return "translate --model " + trained_model(d).string() + " --input " + kData +
                "/tiny.de --set model.encoder.layers=3"; },
       2, {"model.encoder.layers=3", "takes only decode.*"}},
      {"translate: --set of a model section", [](const fs::path& d) {
         return "translate --model " + trained_model(d).string() + " --input " + kData +
                "/tiny.de --set 'model={encoder: {layers: 3}}'"; },
       2, {"model={encoder: {layers: 3}}", "takes only decode.*, model.attention.hard_decode, threads, gemm and device"}},
      {"translate: --set of an unknown decode key", [](const fs::path& d) {
         return "translate --model " + trained_model(d).string() + " --input " + kData + "/tiny.de --set decode.beam=3"; },
       2, {"decode.beam"}},
      // --- translate input
      {"translate: invalid UTF-8", [](const fs::path& d) {
         auto m = trained_model(d);
         write(d / "in.txt", "Ein Mann.\n\xff\xfe garbage\n");
         return "translate --model " + m.string() + " --input " + (d / "in.txt").string() + " --output " +
                (d / "out.txt").string(); },
       2, {"in.txt' line 2: invalid UTF-8 at byte 0"}},
      {"translate: invalid UTF-8 on stdin", [](const fs::path& d) {
         auto m = trained_model(d);
         write(d / "in.txt", "Ein Mann.\nok\n\xC0\xAF\n");
         return "translate --model " + m.string() + " < " + (d / "in.txt").string(); },
       2, {"'<stdin>' line 3: invalid UTF-8 at byte 0"}},
      {"translate: binary garbage", [](const fs::path& d) {
         auto m = trained_model(d);
         std::string noise(2000, '\0');
         std::mt19937 gen(11);
         for (auto& c : noise) c = static_cast<char>(gen());
         write(d / "in.bin", noise);
         return "translate --model " + m.string() + " --input " + (d / "in.bin").string(); },
       2, {"in.bin' line"}},
      // --- align
      {"align: src and tgt line counts differ", [](const fs::path& d) {
         write(d / "s.txt", "a b\nc d\n");
         write(d / "t.txt", "x\ny\nz\n");
         return "align --model " + (d / "absent").string() + " --src " + (d / "s.txt").string() + " --tgt " +
                (d / "t.txt").string() + " --output " + (d / "out.txt").string(); },
       2, {"s.txt' has 2 lines but", "t.txt' has 3"}},
      {"align: invalid UTF-8", [](const fs::path& d) {
         write(d / "s.txt", "a b\nc \xC3\x28 d\n");
         write(d / "t.txt", "x\ny\n");
         return "align --model " + (d / "absent").string() + " --src " + (d / "s.txt").string() + " --tgt " +
                (d / "t.txt").string() + " --output " + (d / "out.txt").string(); },
       2, {"s.txt' line 2: invalid UTF-8 at byte 2"}},
      {"align: bitext line without |||", [](const fs::path& d) {
         write(d / "b.txt", "a b ||| x y\nc d x y\n");
         return "align --model " + (d / "absent").string() + " --src " + (d / "b.txt").string() + " --output " +
                (d / "out.txt").string(); },
       2, {"b.txt' line 2: no ' ||| '"}},
      {"align: bad gold line", [](const fs::path& d) {
         write(d / "b.txt", "a b ||| x y\nc d ||| z\n");
         write(d / "g.talp", "1-1 2-2\n1-1 2q1\n");
         return "align --model " + (d / "absent").string() + " --src " + (d / "b.txt").string() + " --gold " +
                (d / "g.talp").string() + " --output " + (d / "out.txt").string(); },
       2, {"g.talp' line 2: bad link '2q1'"}},
      {"align: gold link outside the sentence", [](const fs::path& d) {
         write(d / "b.txt", "a b ||| x y\nc d ||| z\n");
         write(d / "g.talp", "1-1 2-2\n1-1 2p2\n");
         return "align --model " + (d / "absent").string() + " --src " + (d / "b.txt").string() + " --gold " +
                (d / "g.talp").string() + " --output " + (d / "out.txt").string(); },
       2, {"g.talp' line 2: link 2-2 (1-based) but the pair has 2 source and 1 target words"}},
      {"align: gold of another length", [](const fs::path& d) {
         write(d / "b.txt", "a b ||| x y\nc d ||| z\n");
         write(d / "g.talp", "1-1\n1-1\n1-1\n");
         return "align --model " + (d / "absent").string() + " --src " + (d / "b.txt").string() + " --gold " +
                (d / "g.talp").string() + " --output " + (d / "out.txt").string(); },
       2, {"g.talp' have 3 lines but the text has 2"}},
      {"align: model dir without a model", [](const fs::path& d) {
         fs::create_directories(d / "empty");
         write(d / "b.txt", "a b ||| x y\n");
         return "align --model " + (d / "empty").string() + " --src " + (d / "b.txt").string() + " --output " +
                (d / "out.txt").string(); },
       2, {"no model in", "expected best.pt or ckpt.<step>.pt"}},
      // --- plot
      {"plot: unknown image type", [](const fs::path& d) {
         auto m = trained_model(d);
         return "plot --model " + m.string() + " --src 'Ein Mann .' --output " + (d / "out.jpg").string(); },
       2, {"out.jpg': the extension must be .svg or .png"}},
      {"plot: empty sentence", [](const fs::path& d) {
         return "plot --model " + (d / "absent").string() + " --src ' ' --output " + (d / "out.svg").string(); },
       2, {"--src is empty"}},
      // --- compare
      {"compare: model dir without a model", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "compare " + (d / "c.yaml").string() + " --test-src " + kData + "/tiny.de --test-tgt " + kData +
                "/tiny.en --report " + (d / "r").string(); },
       2, {"c.yaml': no trained model in", "--train-missing"}},
      {"compare: no test set", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         return "compare " + (d / "c.yaml").string(); },
       2, {"c.yaml' has no data.test: give the test set with --test-src and --test-tgt"}},
      {"compare: test files of different lengths", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         write(d / "t.en", "one line\n");
         return "compare " + (d / "c.yaml").string() + " --test-src " + kData + "/tiny.de --test-tgt " +
                (d / "t.en").string(); },
       2, {"tiny.de' has 30 lines but", "t.en' has 1"}},
      {"compare: config missing", [](const fs::path& d) { return "compare " + (d / "absent.yaml").string(); },
       2, {"absent.yaml"}},
      {"compare: report dir below a file", [](const fs::path& d) {
         write(d / "c.yaml", tiny_config(d / "m", 2));
         write(d / "file", "x");
         return "compare " + (d / "c.yaml").string() + " --test-src " + kData + "/tiny.de --test-tgt " + kData +
                "/tiny.en --report " + (d / "file" / "r").string(); },
       2, {"--report: cannot create", "file/r"}},
      // --- score
      {"score: different line counts", [](const fs::path& d) {
         write(d / "hyp.txt", "a\nb\nc\n");
         return "score --ref " + kData + "/tiny.en --hyp " + (d / "hyp.txt").string(); },
       2, {"hyp.txt' has 3 lines but", "tiny.en' has 30"}},
      {"score: invalid UTF-8", [](const fs::path& d) {
         write(d / "hyp.txt", "a\n\xE2\x82\n");
         return "score --ref " + (d / "hyp.txt").string() + " --hyp " + (d / "hyp.txt").string(); },
       2, {"hyp.txt' line 2: invalid UTF-8 at byte 0"}},
      {"score: a paired test of one system", [](const fs::path&) {
         return "score --ref " + kData + "/tiny.en --hyp " + kData + "/tiny.en --paired-bs"; },
       2, {"--paired-bs/--paired-ar: give the baseline and at least one system"}},
      {"score: two systems without a paired test", [](const fs::path&) {
         return "score --ref " + kData + "/tiny.en --hyp " + kData + "/tiny.en --hyp " + kData + "/tiny.en"; },
       2, {"--hyp given 2 times", "--paired-bs or --paired-ar"}},
      {"score: a paired system of another length", [](const fs::path& d) {
         write(d / "hyp.txt", "a\nb\nc\n");
         return "score --ref " + kData + "/tiny.en --hyp " + kData + "/tiny.en --hyp " + (d / "hyp.txt").string() +
                " --paired-ar"; },
       2, {"hyp.txt' has 3 lines but", "tiny.en' has 30"}},
      {"score: both paired tests", [](const fs::path&) {
         return "score --ref " + kData + "/tiny.en --hyp " + kData + "/tiny.en --hyp " + kData +
                "/tiny.en --paired-ar --paired-bs"; },
       2, {"--paired-"}},
  };
  return table;
}

bool looks_like_a_crash(const std::string& output) {
  for (const char* marker : {"terminate called", "Exception raised from", "Aborted", "Segmentation fault",
                             "core dumped", "frame #"}) {
    if (output.find(marker) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("bad input: one clear line and exit 2, never a crash", "[reliability][e2e]") {
  for (const auto& c : cases()) {
    DYNAMIC_SECTION(c.name) {
      auto dir = temp_dir("bad_input");
      const std::string args = c.setup(dir);
      auto r = run(args);
      INFO(c.name << "\n$ attnmt " << args << "\n" << r.output);
      CHECK(r.status == c.exit_code);
      CHECK_FALSE(looks_like_a_crash(r.output));
      for (const auto& e : c.expect) CHECK(r.output.find(e) != std::string::npos);
      if (c.exit_code == 2) {
        // exactly one error line, and it is the last line
        const auto at = r.output.find("attnmt: error: ");
        CHECK(at != std::string::npos);
        CHECK(r.output.find("attnmt: error: ", at + 1) == std::string::npos);
        CHECK(r.output.find('\n', at) == r.output.size() - 1);
        CHECK_FALSE(fs::exists(dir / "out.txt"));  // nothing written half
      }
      fs::remove_all(dir);
    }
  }
}

TEST_CASE("translate: empty lines stay, overlong lines are cropped and bounded", "[reliability][e2e]") {
  auto dir = temp_dir("translate_odd");
  auto m = trained_model(dir);
  // 3 lines: empty, a 30,000-word line, empty; attention output kept line for line.
  std::string huge;
  for (int i = 0; i < 30000; ++i) huge += "Mann ";
  write(dir / "in.txt", "\n" + huge + "\n\n");
  auto r = run("translate --model " + m.string() + " --input " + (dir / "in.txt").string() + " --output " +
               (dir / "out.txt").string() + " --attention-out " + (dir / "att.jsonl").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("longer than 1024 subwords were truncated") != std::string::npos);
  const auto out = attnmt::read_lines((dir / "out.txt").string());
  REQUIRE(out.size() == 3);
  CHECK(out[0].empty());
  CHECK(out[2].empty());
  // at most max_length_ratio (2) x 1024 + 5 target pieces; each piece is at most a few bytes
  CHECK(out[1].size() < 2 * 1024 * 64);
  const auto attention = attnmt::read_file((dir / "att.jsonl").string());
  CHECK(std::count(attention.begin(), attention.end(), '\n') == 3);
  fs::remove_all(dir);
}
