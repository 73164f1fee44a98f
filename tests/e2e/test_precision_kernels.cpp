// bf16 on the CPU at hand (util/cpu_kernels.h), through the real program: `train` refuses bf16 at
// start where the CPU has no native bf16 products (unless train.allow_slow_bf16), `translate`
// decodes in fp32 there and says so once, and the training log's start record names the kernels.
// Each check runs twice where the CPU allows: below bf16 through ATTNMT_CPU_ISA (the refusal, as on
// issue 72's AVX2 EPYC; every CPU runs it), and at the CPU's own level where that has native bf16
// products (none; a CPU without them reports that test Skipped).
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

// The two sides of each bf16 check, on one CPU: without native bf16 products (ATTNMT_CPU_ISA at the
// highest level below them: every CPU has one), and with them (this CPU's own flags, where it has
// them; a skip, reported as such, where it does not).
struct Bf16Side {
  std::string env;  // "" or "ATTNMT_CPU_ISA=<level>", for the program's environment
  CpuFlags flags;   // the flags the program then decides by
  bool native;      // has_native_bf16(flags)
};

Bf16Side without_native_bf16() {
  const auto& hardware = this_cpu_hardware_flags();
  CpuIsa below = CpuIsa::kPortable;
  for (CpuIsa isa : cpu_isas()) {
    const auto capped = cap_cpu_flags(hardware, isa);
    if (best_cpu_isa(hardware) >= isa && !has_native_bf16(capped)) below = isa;
  }
  const auto flags = cap_cpu_flags(hardware, below);
  return {std::string("ATTNMT_CPU_ISA=") + cpu_isa_name(below), flags, has_native_bf16(flags)};
}

// The refusal where the CPU has no native bf16 products, none where it has.
void check_bf16_training(const Bf16Side& side, const std::string& name) {
  const auto& flags = side.flags;
  const bool native = side.native;
  INFO("flags: " << kernel_flags(flags) << " (" << side.env << "); bf16 products: " << bf16_kernel_name(bf16_kernel(flags)));
  const auto dir = temp_dir("bf16_refusal_" + name);
  write(dir / "c.yaml", tiny_config(dir / "model", 1));
  const std::string config = (dir / "c.yaml").string();
  const std::string no_kernel = "train.precision: bf16: this CPU has no native bf16 matrix products";

  SECTION("bf16: refused before any work, in one line, or trained where the CPU has the kernels") {
    const auto r = run("train " + config + " --set train.precision=bf16", side.env);
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
    const auto r = run("train " + config + " --set train.precision=bf16 --nproc 2", side.env);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(count_of(r.output, "attnmt: error: " + no_kernel) == 1);
    CHECK(files_below(dir) == std::vector<std::string>{"c.yaml"});
  }
  SECTION("train.allow_slow_bf16: true insists: it trains, and the start record names the kernels") {
    const auto r = run("train " + config + " --set train.precision=bf16 --set train.allow_slow_bf16=true", side.env);
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
    const auto r = run("train " + config + " --set train.allow_slow_bf16=true", side.env);
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

// fp32 products and one warning where the CPU has no native bf16 products; bf16 where it has.
void check_bf16_decoding(const Bf16Side& side, const std::string& name) {
  const bool native = side.native;
  const auto dir = temp_dir("bf16_decode_" + name);
  write(dir / "c.yaml", tiny_config(dir / "model", 20));
  REQUIRE(run("train " + (dir / "c.yaml").string()).status == 0);
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  auto translate = [&](const std::string& precision, const std::string& out, const std::string& more = "") {
    return run("translate --model " + (dir / "model").string() + " --input " + src + " --output " +
                   (dir / out).string() + " --precision " + precision + more,
               side.env);
  };
  const std::string warning =
      "[decode] decode.precision: bf16: this CPU has no native bf16 matrix products (no avx512_bf16, no amx_bf16): "
      "decoding in fp32 products instead";
  for (const std::string more : {"", " --packed-weights false", " --workers 2 --batch-size 4"}) {
    DYNAMIC_SECTION("translate" << more) {
      const auto fp32 = translate("fp32", "fp32.hyp", more);
      const auto bf16 = translate("bf16", "bf16.hyp", more);
      INFO(side.env << ": " << bf16.output);
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

}  // namespace

TEST_CASE("train.precision bf16 is refused at start where the CPU has no native bf16 products (ATTNMT_CPU_ISA below them)",
          "[cpu_kernels][e2e]") {
  const auto side = without_native_bf16();
  REQUIRE_FALSE(side.native);
  check_bf16_training(side, "capped");  // (names the temp dir: not a word the checks look for)
}

TEST_CASE("train.precision bf16 trains where the CPU has native bf16 products", "[cpu_kernels][e2e]") {
  const Bf16Side side{"", this_cpu_flags(), has_native_bf16(this_cpu_flags())};
  if (!side.native) {
    ATTNMT_CPU_LACKS("this CPU has no native bf16 products (" << kernel_flags(side.flags) << "): not checked");
    return;
  }
  check_bf16_training(side, "native");
}

TEST_CASE("translate --precision bf16 decodes in fp32 where the CPU has no native bf16 products, and says so once",
          "[cpu_kernels][e2e]") {
  const auto side = without_native_bf16();
  REQUIRE_FALSE(side.native);
  check_bf16_decoding(side, "capped");
}

TEST_CASE("translate --precision bf16 decodes in bf16 where the CPU has native bf16 products", "[cpu_kernels][e2e]") {
  const Bf16Side side{"", this_cpu_flags(), has_native_bf16(this_cpu_flags())};
  if (!side.native) {
    ATTNMT_CPU_LACKS("this CPU has no native bf16 products (" << kernel_flags(side.flags) << "): not checked");
    return;
  }
  check_bf16_decoding(side, "native");
}

TEST_CASE("ATTNMT_CPU_ISA: every level this CPU has decodes int8 to the same bytes, and --stats names the kernel",
          "[cpu_kernels][isa][e2e]") {
  const auto& hardware = this_cpu_hardware_flags();
  const auto dir = temp_dir("cpu_isa");
  write(dir / "c.yaml", tiny_config(dir / "model", 20));
  REQUIRE(run("train " + (dir / "c.yaml").string()).status == 0);
  auto translate = [&](const std::string& isa, const std::string& precision, const std::string& name) {
    return run("translate --model " + (dir / "model").string() + " --input " + kSrc + " --output " +
                   (dir / (name + ".hyp")).string() + " --stats " + (dir / (name + ".json")).string() +
                   " --beam-size 3 --precision " + precision,
               isa.empty() ? "" : "ATTNMT_CPU_ISA=" + isa);
  };
  const auto best = translate("", "int8", "best");
  INFO(best.output);
  REQUIRE(best.status == 0);
  const auto expected = read_file((dir / "best.hyp").string());
  std::string levels;
  for (CpuIsa isa : cpu_isas()) {
    const std::string name = cpu_isa_name(isa);
    bool has = true;
    for (const auto& flag : cpu_isa_flags(isa)) has = has && hardware.count(flag) > 0;
    {  // (no sections: Catch would train the model again for each)
      const auto r = translate(name, "int8", name);
      INFO("ATTNMT_CPU_ISA=" << name << ": " << r.output);
      if (!has) {
        // One line naming the first flag the CPU lacks; nothing written.
        std::string missing;
        for (const auto& flag : cpu_isa_flags(isa)) {
          if (missing.empty() && !hardware.count(flag)) missing = flag;
        }
        CHECK(r.status == 2);
        CHECK(r.output == "attnmt: error: ATTNMT_CPU_ISA=" + name + ": this CPU has no " + missing + "\n");
        CHECK_FALSE(fs::exists(dir / (name + ".hyp")));
        continue;
      }
      REQUIRE(r.status == 0);
      const auto kernel = int8_kernel(cap_cpu_flags(hardware, isa));
      CHECK(read_file((dir / (name + ".hyp")).string()) == expected);  // exact sums: the same bytes
      const auto stats = nlohmann::json::parse(read_file((dir / (name + ".json")).string()));
      CHECK(stats["kernel"] == int8_kernel_name(kernel));
      CHECK(stats["cpu_isa"] == name);
      if (kernel != Int8Kernel::kPortable) {
        CHECK_THAT(r.output, Catch::Contains(std::string("int8 products: ") + int8_kernel_name(kernel) + " kernel"));
      }
    }
    if (has) levels += (levels.empty() ? "" : " ") + name;
  }
  WARN("ATTNMT_CPU_ISA levels run on this CPU: " << levels);
  {  // a value that is no level: one line listing the levels
    const auto r = translate("avx9", "int8", "bad");
    CHECK(r.status == 2);
    CHECK(r.output == "attnmt: error: ATTNMT_CPU_ISA=avx9: not an instruction-set level (" + cpu_isa_names() + ")\n");
  }
  {  // --precision auto picks what docs/performance.md's table says for the level
    for (CpuIsa isa : cpu_isas()) {
      bool has = true;
      for (const auto& flag : cpu_isa_flags(isa)) has = has && hardware.count(flag) > 0;
      if (!has) continue;
      const std::string name = cpu_isa_name(isa);
      const auto r = translate(name, "auto", "auto_" + name);
      INFO(r.output);
      REQUIRE(r.status == 0);
      // The table: int8 wherever int8 has a kernel of its own (AVX2 and up), else fp32 (no CPU
      // without AVX2 has native bf16).
      const auto flags = cap_cpu_flags(hardware, isa);
      const std::string want = int8_kernel(flags) != Int8Kernel::kPortable ? "int8" : has_native_bf16(flags) ? "bf16" : "fp32";
      const auto stats = nlohmann::json::parse(read_file((dir / ("auto_" + name + ".json")).string()));
      CHECK(stats["precision"] == want);
      CHECK_THAT(r.output, Catch::Contains("[decode] decode.precision: auto: " + want + " on this CPU"));
      if (want == "int8") CHECK(read_file((dir / ("auto_" + name + ".hyp")).string()) == expected);
    }
  }
  fs::remove_all(dir);
}
