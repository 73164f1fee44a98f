// Decoding features through the real program: checkpoint averaging, ensembles, a target prefix,
// length rules, sampling, scores, and tokenizer.type none (text already tokenized).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoints.h"
#include "program.h"
#include "eval/metrics.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

const std::string kTgt = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.en";

// Trains the tiny config into dir/name (60 updates, a checkpoint every 20, 3 kept).
fs::path train_tiny(const fs::path& dir, const std::string& name, const std::string& sets = "") {
  write(dir / (name + ".yaml"), tiny_config(dir / name, 60));
  auto r = run("train " + (dir / (name + ".yaml")).string() +
               " --set train.valid_every=20 --set train.keep_checkpoints=3 " + sets);
  INFO(r.output);
  REQUIRE(r.status == 0);
  return dir / name;
}

// Translates tiny.de; fails the test on an error.
std::string translate(const std::string& flags, const fs::path& out) {
  auto r = run("translate --input " + kSrc + " --output " + out.string() + " --threads 1 " + flags);
  INFO(r.output);
  REQUIRE(r.status == 0);
  return attnmt::read_file(out.string());
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("average: the mean of the checkpoints' weights, as one model file", "[e2e][decoding]") {
  auto dir = temp_dir("average");
  const auto m = train_tiny(dir, "m");
  const auto avg = dir / "avg.pt";
  auto r = run("average --last 2 " + m.string() + " --output " + avg.string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto a = checkpoint_tensors(m / "ckpt.40.pt"), b = checkpoint_tensors(m / "ckpt.60.pt"),
             mean = checkpoint_tensors(avg);
  REQUIRE(mean.size() == a.size());
  for (const auto& [name, t] : mean) {
    INFO(name);
    CHECK(torch::allclose(t, (a.at(name).to(torch::kDouble) + b.at(name).to(torch::kDouble)).div(2).to(t.scalar_type()),
                          0, 1e-6));
  }
  // The files named one by one give the same model; it translates like any model file.
  const auto listed = dir / "listed.pt";
  REQUIRE(run("average " + (m / "ckpt.60.pt").string() + " " + (m / "ckpt.40.pt").string() + " -o " + listed.string())
              .status == 0);
  CHECK(translate("--model " + avg.string(), dir / "a.txt") == translate("--model " + listed.string(), dir / "b.txt"));

  // Refused, nothing written: another architecture (named), too few checkpoints, a dir without --last.
  const auto other = train_tiny(dir, "other", "--set model.embedding_size=32 --set train.max_steps=20");
  r = run("average " + (m / "ckpt.60.pt").string() + " " + (other / "ckpt.20.pt").string() + " -o " +
          (dir / "x.pt").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("another architecture") && Catch::Contains("embedding_size: 32"));
  r = run("average --last 5 " + m.string() + " -o " + (dir / "x.pt").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("has 3 step checkpoint(s)"));
  r = run("average " + m.string() + " -o " + (dir / "x.pt").string());
  CHECK(r.status == 2);
  CHECK_FALSE(fs::exists(dir / "x.pt"));
  fs::remove_all(dir);
}

TEST_CASE("ensemble: a model twice is that model, members and weights are checked", "[e2e][decoding]") {
  auto dir = temp_dir("ensemble");
  const auto m = train_tiny(dir, "m");
  const auto other = train_tiny(dir, "seed2", "--set train.seed=2 --set model.attention.type=bahdanau");
  for (const std::string flags : {"--beam-size 3", "--beam-size 1"}) {
    CHECK(translate("--model " + m.string() + " " + flags, dir / "alone.txt") ==
          translate("--model " + m.string() + " --model " + m.string() + " " + flags, dir / "twice.txt"));
  }
  // Two different models (architectures too), weighted, 2-best with attention: one list per line.
  const auto both = translate("--model " + m.string() + " --model " + other.string() +
                                  " --weights 0.3,0.7 --n-best 2 --beam-size 3 --attention-out " +
                                  (dir / "att.jsonl").string(),
                              dir / "both.txt");
  CHECK(split_lines(both).size() == 60);
  CHECK(split_lines(attnmt::read_file((dir / "att.jsonl").string())).size() == 30);

  const std::string two = "translate --input " + kSrc + " --model " + m.string() + " --model " + other.string();
  auto r = run(two + " --weights 1");
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--weights: 1 weight(s) for 2 model(s)"));
  r = run(two + " --weights -1,2");
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--weights"));
  const auto small_vocab = train_tiny(dir, "v300", "--set tokenizer.vocab_size=300 --set train.max_steps=20");
  r = run("translate --input " + kSrc + " --model " + m.string() + " --model " + small_vocab.string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("vocabulary") && Catch::Contains("v300"));
  fs::remove_all(dir);
}

TEST_CASE("translate: prefix, length rules, sampling and scores", "[e2e][decoding]") {
  auto dir = temp_dir("decode_options");
  const auto m = train_tiny(dir, "m");
  const std::string model = "--model " + m.string();

  // A prefix per line (the first word of the reference, none on the second line): outputs start with it.
  const auto refs = split_lines(attnmt::read_file(kTgt));
  std::string prefixes;
  for (size_t i = 0; i < refs.size(); ++i) prefixes += (i == 1 ? "" : refs[i].substr(0, refs[i].find(' '))) + "\n";
  write(dir / "prefix.txt", prefixes);
  const auto with_prefix = split_lines(translate(model + " --prefix " + (dir / "prefix.txt").string(), dir / "p.txt"));
  const auto without = split_lines(translate(model, dir / "plain.txt"));
  REQUIRE(with_prefix.size() == refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    INFO(i << ": " << with_prefix[i]);
    if (i != 1) CHECK(with_prefix[i].rfind(refs[i].substr(0, refs[i].find(' ')), 0) == 0);
  }
  CHECK(with_prefix[1] == without[1]);
  write(dir / "short.txt", "Two\n");
  auto r = run("translate --input " + kSrc + " " + model + " --prefix " + (dir / "short.txt").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--prefix") && Catch::Contains("1 lines, the input has 30"));

  // min/max length: every output has 12 to 14 target tokens (eos not counted).
  translate(model + " --min-length 12 --max-length 14 --attention-out " + (dir / "len.jsonl").string(), dir / "len.txt");
  for (const auto& line : split_lines(attnmt::read_file((dir / "len.jsonl").string()))) {
    const auto j = nlohmann::json::parse(line);
    auto tokens = j["tgt"].size();
    if (j["tgt"].back() == "</s>") --tokens;
    CHECK(tokens >= 12);
    CHECK(tokens <= 14);
  }

  // Sampling: the same seed gives the same samples, whatever the batch; another seed others. Their
  // scores agree up to rounding: a batch of another size may sum the products in another order
  // (LibTorch's own products do, on a GPU too).
  const std::string sample = model + " --sampling true --n-best 3 --top-k 20 --temperature 0.8 --seed 5";
  const auto s1 = translate(sample, dir / "s1.txt");
  const auto batched = split_lines(s1), one_by_one = split_lines(translate(sample + " --batch-size 1", dir / "s2.txt"));
  REQUIRE(batched.size() == 90);
  REQUIRE(one_by_one.size() == 90);
  for (size_t i = 0; i < 90; ++i) {
    const auto &a = batched[i], &b = one_by_one[i];
    const auto cut_a = a.rfind(" ||| "), cut_b = b.rfind(" ||| ");
    INFO(a << " | " << b);
    REQUIRE(cut_a != std::string::npos);
    CHECK(a.substr(0, cut_a) == b.substr(0, cut_b));
    CHECK(std::stod(a.substr(cut_a + 5)) == Approx(std::stod(b.substr(cut_b + 5))).margin(1e-3));
  }
  CHECK(translate(model + " --sampling true --n-best 3 --top-k 20 --temperature 0.8 --seed 6", dir / "s3.txt") != s1);

  // Scores: one per output; with length penalty 0 the score is the log-probability.
  translate(model + " --length-penalty 0 --n-best 2 --scores " + (dir / "scores.tsv").string(), dir / "n.txt");
  const auto scores = split_lines(attnmt::read_file((dir / "scores.tsv").string()));
  REQUIRE(scores.size() == 60);
  for (const auto& line : scores) {
    std::istringstream in(line);
    size_t index;
    double log_prob, score;
    in >> index >> log_prob >> score;
    CHECK(index < 30);
    CHECK(log_prob <= 0);
    CHECK(score == Approx(log_prob));
  }

  for (const std::string bad : {"--top-p 0", "--top-p 1.5", "--temperature 0", "--top-k -1", "--min-length 5 --max-length 3"}) {
    r = run("translate --input " + kSrc + " " + model + " " + bad);
    INFO(bad << ": " << r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("decode."));
  }
  fs::remove_all(dir);
}

TEST_CASE("tokenizer.type none: text already tokenized, a vocabulary of its words", "[e2e][decoding]") {
  auto dir = temp_dir("pretokenized");
  const auto m = train_tiny(dir, "m", "--set tokenizer.type=none");
  const auto vocab = attnmt::read_file((m / "spm.model").string());
  REQUIRE(vocab.rfind("attnmt-word-vocab 1\n<pad>\n<unk>\n<s>\n</s>\n", 0) == 0);
  std::set<std::string> words;
  std::istringstream vocab_lines(vocab);
  for (std::string w; vocab_lines >> w;) words.insert(w);
  // Every output token is a vocabulary word, written with single spaces.
  const auto out = translate("--model " + m.string(), dir / "out.txt");
  std::istringstream tokens(out);
  int count = 0;
  for (std::string t; tokens >> t; ++count) CHECK(words.count(t) == 1);
  CHECK(count > 30);
  CHECK(out.find("  ") == std::string::npos);
  // A save dir whose model is a word vocabulary: training there as SentencePiece is refused.
  fs::create_directories(dir / "n");
  fs::copy_file(m / "spm.model", dir / "n" / "spm.model");
  auto r = run("train " + (dir / "m.yaml").string() + " --set train.save_dir=" + (dir / "n").string() +
               " --set tokenizer.type=sentencepiece");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("tokenizer.type none"));
  fs::remove_all(dir);
}

TEST_CASE("translate: every output holds its constraints, lines without any decode as before", "[e2e][decoding]") {
  auto dir = temp_dir("constraints");
  const auto m = train_tiny(dir, "m");
  const std::string model = "--model " + m.string() + " --beam-size 4";
  // Line i's constraints: two words of its reference (tab-separated); none on line 1.
  const auto refs = split_lines(attnmt::read_file(kTgt));
  std::vector<std::pair<std::string, std::string>> phrases;
  std::string file;
  for (size_t i = 0; i < refs.size(); ++i) {
    std::istringstream words(refs[i]);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    phrases.emplace_back(w.at(1), w.at(w.size() / 2));
    file += i == 1 ? "\n" : phrases.back().first + "\t" + phrases.back().second + "\n";
  }
  write(dir / "constraints.txt", file);
  const auto constrained = split_lines(translate(model + " --constraints " + (dir / "constraints.txt").string(), dir / "c.txt"));
  const auto plain = split_lines(translate(model, dir / "plain.txt"));
  REQUIRE(constrained.size() == refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    INFO(i << ": " << constrained[i] << " | " << phrases[i].first << " / " << phrases[i].second);
    if (i == 1) {
      CHECK(constrained[i] == plain[i]);
    } else {
      CHECK(constrained[i].find(phrases[i].first) != std::string::npos);
      CHECK(constrained[i].find(phrases[i].second) != std::string::npos);
    }
  }

  write(dir / "short.txt", "Two\n");
  auto r = run("translate --input " + kSrc + " " + model + " --constraints " + (dir / "short.txt").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--constraints") && Catch::Contains("1 lines, the input has 30"));
  std::string too_long = "\n";
  for (int i = 0; i < 60; ++i) too_long += "dog ";
  too_long += "\n";
  for (size_t i = 2; i < refs.size(); ++i) too_long += "\n";
  write(dir / "long.txt", too_long);
  r = run("translate --input " + kSrc + " " + model + " --output " + (dir / "never.txt").string() + " --constraints " +
          (dir / "long.txt").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--constraints: line 2:") && Catch::Contains("maximum output length"));
  CHECK_FALSE(fs::exists(dir / "never.txt"));
  r = run("translate --input " + kSrc + " " + model + " --sampling true --constraints " + (dir / "constraints.txt").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--constraints: not with decode.sampling"));
  fs::remove_all(dir);
}

TEST_CASE("translate --mbr: the beam's hypotheses reordered by expected BLEU, bad settings refused", "[e2e][decoding]") {
  auto dir = temp_dir("mbr");
  const auto m = train_tiny(dir, "m");
  const std::string model = "--model " + m.string() + " --beam-size 4";
  // The beam's four hypotheses with their log-probabilities ("i ||| text ||| score" and
  // "i<TAB>log P<TAB>score", line for line).
  const auto beam = split_lines(translate(model + " --n-best 4 --scores " + (dir / "beam.tsv").string(), dir / "beam.txt"));
  const auto beam_scores = split_lines(attnmt::read_file((dir / "beam.tsv").string()));
  REQUIRE(beam.size() == 120);
  REQUIRE(beam_scores.size() == 120);
  struct Hyp {
    std::string text;
    double log_prob;
  };
  std::vector<std::vector<Hyp>> lists(30);
  for (size_t k = 0; k < beam.size(); ++k) {
    const size_t a = beam[k].find(" ||| "), b = beam[k].rfind(" ||| ");
    const size_t line = std::stoul(beam[k].substr(0, a));
    std::istringstream in(beam_scores[k]);
    size_t index;
    double log_prob;
    in >> index >> log_prob;
    REQUIRE(index == line);
    lists.at(line).push_back({beam[k].substr(a + 5, b - a - 5), log_prob});
  }
  // MBR's order and scores, computed here from the beam: E(h) = sum_j P_j BLEU(h, y_j) / sum_j P_j.
  const auto mbr = split_lines(translate(model + " --mbr bleu --n-best 4 --scores " + (dir / "mbr.tsv").string(), dir / "mbr.txt"));
  const auto mbr_scores = split_lines(attnmt::read_file((dir / "mbr.tsv").string()));
  const auto one_best = split_lines(translate(model + " --mbr bleu", dir / "mbr1.txt"));
  REQUIRE(mbr.size() == 120);
  REQUIRE(one_best.size() == 30);
  for (size_t line = 0; line < 30; ++line) {
    const auto& list = lists[line];
    double top = list.front().log_prob, total = 0;
    for (const auto& h : list) top = std::max(top, h.log_prob);
    for (const auto& h : list) total += std::exp(h.log_prob - top);
    std::vector<double> expected;
    for (const auto& h : list) {
      double e = 0;
      for (const auto& y : list) e += std::exp(y.log_prob - top) * attnmt::corpus_bleu({h.text}, {y.text}).score;
      expected.push_back(e / total);
    }
    double previous = 1e9;
    for (size_t k = 0; k < 4; ++k) {
      const auto& row = mbr[line * 4 + k];
      const std::string text = row.substr(row.find(" ||| ") + 5, row.rfind(" ||| ") - row.find(" ||| ") - 5);
      std::istringstream in(mbr_scores[line * 4 + k]);
      size_t index;
      double log_prob, score;
      in >> index >> log_prob >> score;
      INFO("line " << line << ", rank " << k << ": " << text);
      CHECK(index == line);
      CHECK(score <= previous + 1e-9);
      previous = score;
      // The hypothesis is one of the beam's, with its log-probability and E as its score.
      bool found = false;
      for (size_t j = 0; j < list.size(); ++j) {
        if (list[j].text == text && std::abs(list[j].log_prob - log_prob) < 1e-6) {
          found = true;
          CHECK(score == Approx(expected[j]).epsilon(1e-6));
        }
      }
      CHECK(found);
      if (k == 0) CHECK(one_best[line] == text);
    }
  }

  // chrF and samples run; bad settings are refused with the key.
  CHECK(split_lines(translate(model + " --mbr chrf", dir / "chrf.txt")).size() == 30);
  CHECK(split_lines(translate("--model " + m.string() + " --sampling true --mbr chrf --mbr-candidates 6 --n-best 2",
                           dir / "s.txt")).size() == 60);
  for (const std::string bad : {"--mbr ter", "--mbr bleu --mbr-candidates 5", "--mbr bleu --mbr-candidates -1",
                                "--mbr bleu --mbr-candidates 2 --n-best 3", "--sampling true --mbr bleu"}) {
    auto r = run("translate --input " + kSrc + " " + model + " " + bad);
    INFO(bad << ": " << r.output);
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("decode."));
  }
  fs::remove_all(dir);
}
