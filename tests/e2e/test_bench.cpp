// The benchmark's analytic FLOPs (bench/flops.h) against a count by hand, and `attnmt bench` end
// to end on a tiny config.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "bench/flops.h"
#include "eval/metrics.h"
#include "program.h"
#include "util/cpu_kernels.h"
#include "util/error.h"
#include "util/text_io.h"

using namespace attnmt;
namespace fs = std::filesystem;

TEST_CASE("model_arithmetic counts every matrix product of a step", "[bench]") {
  ModelConfig m;
  m.embedding_size = 4;
  m.encoder.hidden_size = 3;  // bi-LSTM, 1 layer: memory 6 wide, 12 gates
  m.encoder.layers = 1;
  m.decoder.hidden_size = 5;  // 2-layer input-feeding LSTM: 20 gates
  m.decoder.layers = 2;
  m.attention.type = "luong_general";
  // B = 2 sentences, 3 source and 4 target tokens each, V = 7. By hand (2 m k n per product):
  //   encoder input 2 dirs x 2*6*4*12 = 1152; recurrent 2 dirs x 3 steps x 2*2*3*12 = 864
  //   keys 2*6*6*5 = 360; scores 4 steps x 2 x 2*5*3 = 240; context 4 x 2 x 2*3*6 = 288
  //   decoder embeddings 2*8*4*20 = 1280; feeding 4 x 2*2*5*20 = 1600; recurrent 2 layers x 1600
  //   = 3200; layer 2 input 1600; combine 4 x 2*2*11*5 = 880; output 2*8*5*7 = 560
  const double forward = 1152 + 864 + 360 + 240 + 288 + 1280 + 1600 + 3200 + 1600 + 880 + 560;
  const auto a = model_arithmetic(m, 7, 2, 3.0, 4.0);
  CHECK(a.forward_flops_per_batch == Approx(forward));
  CHECK(a.train_flops_per_target_token == Approx(3 * forward / 8));
  // Dot scores drop the key projection; unknown arithmetic is an error, not a guess.
  m.attention.type = "luong_dot";
  CHECK(model_arithmetic(m, 7, 2, 3.0, 4.0).forward_flops_per_batch == Approx(forward - 360 - 240 + 4 * 2 * 2 * 6 * 3));
  m.attention.type = "local_p";
  CHECK_THROWS_AS(model_arithmetic(m, 7, 2, 3.0, 4.0), InputError);
}

TEST_CASE("attnmt bench measures a tiny config end to end", "[bench][e2e]") {
  const auto dir = test::temp_dir("bench");
  const std::string config = (dir / "tiny.yaml").string(), data = ATTNMT_TEST_DATA_DIR;
  test::write(config, test::tiny_config(dir / "model", 30));
  REQUIRE(test::run("train " + config).status == 0);  // the decoding model
  // The ceilings per level: portable (a child, whatever this CPU is) and this process's own.
  const std::string own = cpu_isa_name(this_cpu_isa());
  const auto r = test::run("bench " + config + " --threads 1 --repeats 2 --window-steps 2 --no-baseline --test-src " +
                           data + "/tiny.de --test-tgt " + data + "/tiny.en --output " + (dir / "bench.json").string() +
                           " --work-dir " + (dir / "work").string() + " --isa-levels " + own + ",portable");
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::ifstream in(dir / "bench.json");
  const auto j = nlohmann::json::parse(in);
  const auto& run = j["runs"][0];
  CHECK(run["train"]["windows"].size() == 2);
  CHECK(run["train"]["tgt_tokens_per_sec"]["median"].get<double>() > 0);
  CHECK(run["train"]["peak_rss_mib"].get<double>() > 50);
  CHECK(run["ceiling"]["fp32"]["gflops"].get<double>() > 0);
  CHECK(run["train"]["utilisation"].get<double>() > 0);
  CHECK(run["decode"]["greedy"]["sentences_per_sec_process"]["median"].get<double>() > 0);
  CHECK(run["decode"]["beam"]["beam_size"] == 3);
  // The BLEU bench reports is the one of the model's own translations: `attnmt translate` with the
  // same beam and precision, scored here against the references.
  auto bleu_of = [&](const std::string& name, int beam, const std::string& precision) {
    const auto hyp = dir / (name + ".hyp");
    const auto t = test::run("translate --model " + (dir / "model").string() + " --input " + data + "/tiny.de --output " +
                             hyp.string() + " --threads 1 --beam-size " + std::to_string(beam) + " --precision " + precision);
    INFO(t.output);
    REQUIRE(t.status == 0);
    return corpus_bleu(read_lines(hyp.string()), read_lines(data + "/tiny.en")).score;
  };
  CHECK(run["decode"]["greedy"]["bleu"].get<double>() == Approx(bleu_of("greedy", 1, "fp32")).margin(1e-9));
  CHECK(run["decode"]["beam"]["bleu"].get<double>() == Approx(bleu_of("beam", 3, "fp32")).margin(1e-9));
  CHECK(run["decode"]["beam"]["cpu_allocator"].get<std::string>().rfind("LibTorch's", 0) == 0);
  // int8 beside fp32 (runtime/int8_gemm.h), and decoding's achieved GFLOP/s against its own ceiling.
  CHECK(run["decode"]["beam_int8"]["precision"] == "int8");
  CHECK(run["decode"]["beam_int8"]["sentences_per_sec_process"]["median"].get<double>() > 0);
  CHECK(run["decode"]["beam_int8"]["bleu"].get<double>() == Approx(bleu_of("beam_int8", 3, "int8")).margin(1e-9));
  CHECK(run["decode_ceiling"]["fp32"]["gflops"].get<double>() > 0);
  CHECK(run["decode_ceiling"]["int8"]["gflops"].get<double>() > 0);
  CHECK(run["decode"]["beam"]["achieved_gflops"].get<double>() > 0);
  CHECK(run["decode"]["beam"]["utilisation_of"] == "fp32");
  CHECK(run["decode"]["beam_int8"]["utilisation_of"] == "int8");
  CHECK(run["decode"]["beam_int8"]["utilisation"].get<double>() > 0);
  CHECK(r.output.find("| config | threads |") != std::string::npos);
  // The machine's record names the kernels (util/cpu_kernels.h), and so does the table.
  const auto& flags = this_cpu_flags();
  CHECK(j["machine"]["bf16_kernel"] == bf16_kernel_name(bf16_kernel(flags)));
  CHECK(j["machine"]["bf16"] == has_native_bf16(flags));
  CHECK(j["machine"]["cpu_flags"] == kernel_flags(flags));
  CHECK(run["gemm"].get<std::string>().find("sgemm") != std::string::npos);
  CHECK_THAT(r.output, Catch::Contains(std::string("bf16 products: ") + bf16_kernel_name(bf16_kernel(flags))));
  // Per level, lowest first: this process's own is the ceiling above; portable ran in a child capped
  // there (its int8 kernel is the portable loop, it has no native bf16).
  const auto& levels = run["decode_ceiling_per_isa"];
  REQUIRE(levels.size() == (own == "portable" ? 1u : 2u));
  const auto& portable = levels[0];
  const auto& mine = levels[levels.size() - 1];
  CHECK(portable["level"] == "portable");
  CHECK(mine["level"] == own);
  CHECK(mine["fp32"].get<double>() == run["decode_ceiling"]["fp32"]["gflops"].get<double>());
  CHECK(mine["int8_kernel"] == int8_kernel_name(int8_kernel(flags)));
  CHECK(mine.contains("bf16") == has_native_bf16(flags));
  CHECK(portable["cpu_isa"] == "portable");
  CHECK(portable["int8_kernel"] == "portable");
  CHECK_FALSE(portable.contains("bf16"));
  CHECK(portable["fp32"].get<double>() > 0);
  CHECK(portable["int8"].get<double>() > 0);
  CHECK_THAT(r.output, Catch::Contains("| tiny | portable | "));
  fs::remove_all(dir);
}

TEST_CASE("attnmt bench: --isa-levels names a level this CPU has", "[bench]") {
  const auto r = test::run("bench no.yaml --isa-levels avx3");
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("bench: --isa-levels: 'avx3' is not a level (all, none, portable|avx2"));
  if (!this_cpu_hardware_flags().count("amx_tile")) {
    const auto amx = test::run("bench no.yaml --isa-levels portable,amx");
    CHECK(amx.status == 2);
    CHECK_THAT(amx.output, Catch::Contains("bench: --isa-levels: amx: this CPU has no amx_"));
  }
}

TEST_CASE("attnmt bench: mean lengths come from every training corpus, weighted by its share", "[bench]") {
  const auto dir = test::temp_dir("bench_corpora");
  const std::string data = ATTNMT_TEST_DATA_DIR;
  // A second corpus whose sentences are the first's twice over: other mean lengths.
  for (const std::string side : {"de", "en"}) {
    std::ifstream in(data + "/tiny." + side);
    std::ofstream out(dir / ("twice." + side));
    for (std::string line; std::getline(in, line);) out << line << " " << line << "\n";
  }
  const std::string model = (dir / "model").string();
  const std::string base = test::tiny_config(model, 2);
  test::write(dir / "one.yaml", base);
  REQUIRE(test::run("train " + (dir / "one.yaml").string()).status == 0);  // its tokenizer for every config
  const std::string tiny = "{src: " + data + "/tiny.de, tgt: " + data + "/tiny.en}";
  const std::string twice = "{src: " + (dir / "twice.de").string() + ", tgt: " + (dir / "twice.en").string() + "}";
  auto with_train = [&](const std::string& train) {
    std::string c = base;
    const std::string line = "  train: " + tiny + "\n";
    c.replace(c.find(line), line.size(), "  train: " + train + "\n");
    return c;
  };
  test::write(dir / "twice.yaml", with_train(twice));
  test::write(dir / "both.yaml", with_train("[" + tiny + ", {src: " + (dir / "twice.de").string() + ", tgt: " +
                                            (dir / "twice.en").string() + ", weight: 3}]"));
  std::string configs, models;
  for (const char* name : {"one", "twice", "both"}) {
    configs += " " + (dir / (std::string(name) + ".yaml")).string();
    models += " --model " + model;
  }
  const auto r = test::run("bench" + configs + models + " --threads 1 --no-train --no-decode --no-gemm --no-baseline" +
                           " --output " + (dir / "bench.json").string() + " --work-dir " + (dir / "work").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::ifstream in(dir / "bench.json");
  const auto runs = nlohmann::json::parse(in)["runs"];
  REQUIRE(runs.size() == 3);
  for (const char* key : {"mean_src_tokens", "mean_tgt_tokens"}) {
    const double one = runs[0]["flops"][key], two = runs[1]["flops"][key], both = runs[2]["flops"][key];
    CHECK(two > one * 1.5);
    CHECK(both == Approx((one + 3 * two) / 4));
  }
  fs::remove_all(dir);
}
