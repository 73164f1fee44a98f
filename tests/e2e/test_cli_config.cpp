// The resolved config on demand (attnmt config), decode settings from a file (translate --config)
// and the progress line (--progress), through the real program.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "program.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

TEST_CASE("attnmt config prints the resolved config, whole or minimal, without reading data", "[e2e][config]") {
  auto dir = temp_dir("config_cmd");
  const std::string variant = std::string(ATTNMT_SOURCE_DIR) + "/configs/multi30k_de_en/local_p.yaml";
  auto full = run("config " + variant + " --set train.max_steps=77 2>/dev/null");
  REQUIRE(full.status == 0);
  CHECK_THAT(full.output, Catch::Contains("type: \"local_p\"") && Catch::Contains("max_steps: 77") &&
                              Catch::Contains("hidden_size: 256") && !Catch::Contains("base:"));
  // Its output is a config: read back, it resolves to itself.
  write(dir / "resolved.yaml", full.output);
  CHECK(run("config " + (dir / "resolved.yaml").string() + " 2>/dev/null").output == full.output);
  auto minimal = run("config " + variant + " --minimal 2>/dev/null");
  REQUIRE(minimal.status == 0);
  CHECK_THAT(minimal.output, Catch::Contains("type: \"local_p\"") && Catch::Contains("save_dir: \"runs/multi30k_de_en/local_p\"") &&
                                 !Catch::Contains("hidden_size") && !Catch::Contains("beam_size"));
  write(dir / "minimal.yaml", minimal.output);
  CHECK(run("config " + (dir / "minimal.yaml").string() + " --set train.max_steps=77 2>/dev/null").output == full.output);
  // Data paths that do not exist are not read.
  write(dir / "nodata.yaml", "base: " + variant + "\ndata:\n  train: {src: /nonexistent.de, tgt: /nonexistent.en}\n");
  CHECK(run("config " + (dir / "nodata.yaml").string()).status == 0);
  write(dir / "a.yaml", "base: b.yaml\n");
  write(dir / "b.yaml", "base: a.yaml\n");
  auto cycle = run("config " + (dir / "a.yaml").string());
  CHECK(cycle.status == 2);
  CHECK_THAT(cycle.output, Catch::Contains("a cycle of configs"));
  fs::remove_all(dir);
}

TEST_CASE("translate --config reads decode keys from a file, --set and flags win over it", "[e2e][config]") {
  auto dir = temp_dir("translate_config");
  write(dir / "c.yaml", tiny_config(dir / "m", 40));
  auto trained = run("train " + (dir / "c.yaml").string());
  INFO(trained.output);
  REQUIRE(trained.status == 0);
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  auto translate = [&](const std::string& flags) {
    const auto out = dir / "out.txt";
    auto r = run("translate --model " + (dir / "m").string() + " --input " + src + " --output " + out.string() +
                 " --n-best 2 --scores " + (dir / "scores.txt").string() + " " + flags);
    INFO(r.output);
    REQUIRE(r.status == 0);
    return attnmt::read_file(out.string()) + attnmt::read_file((dir / "scores.txt").string());
  };
  write(dir / "decode.yaml", "decode:\n  beam_size: 2\n  length_penalty: 0.0\nthreads: 1\n");
  const std::string from_file = translate("--config " + (dir / "decode.yaml").string());
  CHECK(from_file == translate("--set decode.beam_size=2 --length-penalty 0"));
  CHECK(from_file != translate(""));  // the stored beam 3 and length penalty 0.6
  CHECK(translate("--config " + (dir / "decode.yaml").string() + " --beam-size 4") == translate("--beam-size 4 --length-penalty 0"));
  write(dir / "bad.yaml", "decode:\n  beam_sise: 2\n");
  auto r = run("translate --model " + (dir / "m").string() + " --input " + src + " --config " + (dir / "bad.yaml").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("unknown key 'decode.beam_sise'") && Catch::Contains("bad.yaml") &&
                           Catch::Contains("line 2"));
  write(dir / "model.yaml", "model:\n  embedding_size: 32\n");
  r = run("translate --model " + (dir / "m").string() + " --input " + src + " --config " + (dir / "model.yaml").string());
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("model.embedding_size"));

  // The progress line: none when stderr is not a terminal (here, a pipe), drawn with always.
  const std::string decode = "translate --model " + (dir / "m").string() + " --input " + src + " --output " +
                             (dir / "p.txt").string();
  CHECK(run(decode).output.find("\r[translate]") == std::string::npos);
  CHECK_THAT(run("--progress always " + decode).output, Catch::Contains("\r[translate] sentences 30/30 100%"));
  CHECK_THAT(run(decode + " --progress always").output, Catch::Contains("\r[translate] sentences"));
  r = run(decode + " --progress sometimes");
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("--progress must be auto, always or never"));
  fs::remove_all(dir);
}
