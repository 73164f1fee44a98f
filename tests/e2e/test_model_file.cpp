// Model files (io/model_file.h): one checkpoint holds everything translation needs (format 2),
// and a format-1 checkpoint (tests/data/model_v1, written by attnmt before format 2) still loads
// and translates as it did.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "program.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {


// Translates tiny.de with `model` (a file or a dir); returns the output, fails the test on an error.
std::string translate_model(const std::string& model, const fs::path& out, const std::string& flags = "") {
  auto r = run("translate --model " + model + " --input " + kSrc + " --output " + out.string() + " --threads 1 " + flags);
  INFO(r.output);
  REQUIRE(r.status == 0);
  return attnmt::read_file(out.string());
}

}  // namespace

TEST_CASE("a model is one file: best.pt copied alone translates as its save dir does", "[e2e][model_file]") {
  auto dir = temp_dir("one_file");
  // decode.shortlist: the lexicon goes into the model file too.
  write(dir / "config.yaml", tiny_config(dir / "model", 60));
  auto train = run("train " + (dir / "config.yaml").string() + " --set decode.shortlist=true --set decode.shortlist_first=50");
  INFO(train.output);
  REQUIRE(train.status == 0);

  const auto in_dir = translate_model((dir / "model").string(), dir / "a.en");
  REQUIRE(!in_dir.empty());
  fs::create_directories(dir / "alone");
  fs::copy_file(dir / "model" / "best.pt", dir / "alone" / "my_model.pt");
  CHECK(translate_model((dir / "alone" / "my_model.pt").string(), dir / "b.en") == in_dir);
  // A directory holding only the file: its best.pt.
  fs::create_directories(dir / "only");
  fs::copy_file(dir / "model" / "best.pt", dir / "only" / "best.pt");
  CHECK(translate_model((dir / "only").string(), dir / "c.en") == in_dir);
  // Without the shortlist, and greedy: the same model, other settings.
  CHECK(translate_model((dir / "alone" / "my_model.pt").string(), dir / "d.en", "--shortlist false --beam-size 1") ==
        translate_model((dir / "model").string(), dir / "e.en", "--shortlist false --beam-size 1"));

  // The other commands that read a model take the file too.
  auto plot = run("plot --model " + (dir / "alone" / "my_model.pt").string() + " --src 'Zwei Männer' --output " +
                  (dir / "map.svg").string() + " --threads 1");
  INFO(plot.output);
  CHECK(plot.status == 0);
  CHECK(fs::exists(dir / "map.svg"));
  auto align = run("align --model " + (dir / "alone" / "my_model.pt").string() + " --src " + kSrc + " --tgt " +
                   std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.en --output " + (dir / "links.txt").string() +
                   " --threads 1");
  INFO(align.output);
  CHECK(align.status == 0);

  // No model there: one line naming the path.
  auto missing = run("translate --model " + (dir / "nothing.pt").string() + " --input " + kSrc);
  CHECK(missing.status == 2);
  CHECK_THAT(missing.output, Catch::Contains("nothing.pt") && Catch::Contains("does not exist"));
  fs::remove_all(dir);
}

TEST_CASE("a model file without a lexicon refuses a shortlist, naming what to do", "[e2e][model_file]") {
  auto dir = temp_dir("no_lexicon");
  write(dir / "config.yaml", tiny_config(dir / "model", 20));
  REQUIRE(run("train " + (dir / "config.yaml").string()).status == 0);
  auto r = run("translate --model " + (dir / "model" / "best.pt").string() + " --input " + kSrc + " --shortlist true");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("no lexicon") && Catch::Contains("attnmt lexicon"));
  fs::remove_all(dir);
}

TEST_CASE("a format-1 checkpoint still loads, with its tokenizer from its directory", "[e2e][model_file]") {
  auto dir = temp_dir("format1");
  fs::copy(std::string(ATTNMT_TEST_DATA_DIR) + "/model_v1", dir / "model", fs::copy_options::recursive);
  const auto expected_beam = attnmt::read_file(std::string(ATTNMT_TEST_DATA_DIR) + "/model_v1/tiny.beam3.en");
  const auto expected_greedy = attnmt::read_file(std::string(ATTNMT_TEST_DATA_DIR) + "/model_v1/tiny.greedy.en");
  // The translations of the attnmt that wrote it, byte for byte.
  CHECK(translate_model((dir / "model").string(), dir / "beam.en") == expected_beam);
  CHECK(translate_model((dir / "model" / "best.pt").string(), dir / "greedy.en", "--beam-size 1") == expected_greedy);
  // Without config.yaml beside it (the model is built from the checkpoint's own config).
  fs::remove(dir / "model" / "config.yaml");
  CHECK(translate_model((dir / "model" / "best.pt").string(), dir / "beam2.en") == expected_beam);
  // Copied alone, a format-1 file has no tokenizer: the error says where it looked.
  fs::create_directories(dir / "alone");
  fs::copy_file(dir / "model" / "best.pt", dir / "alone" / "best.pt");
  auto r = run("translate --model " + (dir / "alone" / "best.pt").string() + " --input " + kSrc);
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("spm.model"));
  fs::remove_all(dir);
}
