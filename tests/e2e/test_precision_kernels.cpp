// bf16 on the CPU at hand (util/cpu_kernels.h), through the real program: `train` refuses bf16 at
// start where the CPU has no native bf16 products (unless train.allow_slow_bf16), `translate`
// decodes in fp32 there and says so once, and the training log's start record names the kernels.
// Each test checks what this machine's flags call for: the refusal on a CPU without AVX512-BF16 or
// AMX (issue 72's AVX2 EPYC), none on one with them.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>

#include "program.h"
#include "util/cpu_kernels.h"
#include "util/text_io.h"

using namespace attnmt;
using namespace attnmt::test;

namespace {

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Every file below `dir`, as paths relative to it.
std::vector<std::string> files_below(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) files.push_back(fs::relative(e.path(), dir).string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("train.precision bf16 is refused at start where the CPU has no native bf16 products", "[cpu_kernels][e2e]") {
  const auto& flags = this_cpu_flags();
  const bool native = has_native_bf16(flags);
  INFO("this CPU: " << kernel_flags(flags) << "; bf16 products: " << bf16_kernel_name(bf16_kernel(flags)));
  const auto dir = temp_dir("bf16_refusal");
  write(dir / "c.yaml", tiny_config(dir / "model", 1));
  const std::string config = (dir / "c.yaml").string();
  const std::string no_kernel = "train.precision: bf16: this CPU has no native bf16 matrix products";

  SECTION("bf16: refused before any work, in one line, or trained where the CPU has the kernels") {
    const auto r = run("train " + config + " --set train.precision=bf16");
    INFO(r.output);
    if (!native) {
      CHECK(r.status == 2);  // as a config error
      CHECK(r.output == "attnmt: error: " + no_kernel + " (no avx512_bf16, no amx_bf16): they would run emulated, " +
                            emulated_bf16_cost(flags) +
                            "; use --set train.precision=fp32 (or train.allow_slow_bf16: true to insist)\n");
      // No tokenizer trained, no cache written, no save dir made.
      CHECK(files_below(dir) == std::vector<std::string>{"c.yaml"});
    } else {
      CHECK(r.status == 0);
      CHECK(r.output.find("attnmt: error") == std::string::npos);
      CHECK(fs::exists(dir / "model" / "best.pt"));
    }
  }
  SECTION("--nproc: refused by the launcher before a rank starts") {
    if (native) return;  // (it would train two ranks: the refusal is what this section is about)
    const auto r = run("train " + config + " --set train.precision=bf16 --nproc 2");
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(count_of(r.output, "attnmt: error: " + no_kernel) == 1);
    CHECK(files_below(dir) == std::vector<std::string>{"c.yaml"});
  }
  SECTION("train.allow_slow_bf16: true insists: it trains, and the start record names the kernels") {
    const auto r = run("train " + config + " --set train.precision=bf16 --set train.allow_slow_bf16=true");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.output.find("attnmt: error") == std::string::npos);
    // Where the products are emulated, it says so once.
    CHECK(count_of(r.output, no_kernel + " (no avx512_bf16, no amx_bf16): they run emulated") == (native ? 0 : 1));
    const auto start = nlohmann::json::parse(read_lines((dir / "model" / "log.jsonl").string()).front());
    REQUIRE(start["type"] == "start");
    CHECK(start["precision"] == "bf16");
    CHECK(start["bf16_kernel"] == bf16_kernel_name(bf16_kernel(flags)));
    CHECK(start["cpu_flags"] == kernel_flags(flags));
    CHECK_FALSE(start["gemm"].get<std::string>().empty());
    CHECK_THAT(r.output, Catch::Contains(std::string("bf16 products: ") + bf16_kernel_name(bf16_kernel(flags))));
  }
  SECTION("fp32 is not refused, and allow_slow_bf16 changes nothing there") {
    const auto r = run("train " + config + " --set train.allow_slow_bf16=true");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.output.find("emulated") == std::string::npos);
    CHECK(r.output.find("bf16 products") == std::string::npos);  // the start line names fp32's alone
    const auto start = nlohmann::json::parse(read_lines((dir / "model" / "log.jsonl").string()).front());
    CHECK(start["precision"] == "fp32");
    CHECK(start["bf16_kernel"] == bf16_kernel_name(bf16_kernel(flags)));  // what bf16 would run on
  }
  fs::remove_all(dir);
}

TEST_CASE("translate --precision bf16 decodes in fp32 where the CPU has no native bf16 products, and says so once",
          "[cpu_kernels][e2e]") {
  const auto& flags = this_cpu_flags();
  const bool native = has_native_bf16(flags);
  const auto dir = temp_dir("bf16_decode");
  write(dir / "c.yaml", tiny_config(dir / "model", 20));
  REQUIRE(run("train " + (dir / "c.yaml").string()).status == 0);
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  auto translate = [&](const std::string& precision, const std::string& out, const std::string& more = "") {
    return run("translate --model " + (dir / "model").string() + " --input " + src + " --output " +
               (dir / out).string() + " --precision " + precision + more);
  };
  const std::string warning =
      "[decode] decode.precision: bf16: this CPU has no native bf16 matrix products (no avx512_bf16, no amx_bf16): "
      "decoding in fp32 products instead";
  for (const std::string more : {"", " --packed-weights false", " --workers 2 --batch-size 4"}) {
    DYNAMIC_SECTION("translate" << more) {
      const auto fp32 = translate("fp32", "fp32.hyp", more);
      const auto bf16 = translate("bf16", "bf16.hyp", more);
      INFO(bf16.output);
      REQUIRE(fp32.status == 0);
      REQUIRE(bf16.status == 0);
      CHECK(fp32.output.find("decode.precision") == std::string::npos);
      if (!native) {
        CHECK(count_of(bf16.output, warning) == 1);
        CHECK(read_file((dir / "bf16.hyp").string()) == read_file((dir / "fp32.hyp").string()));
      } else {
        CHECK(bf16.output.find("decode.precision") == std::string::npos);
      }
    }
  }
  fs::remove_all(dir);
}
