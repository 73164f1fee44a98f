// End to end through the real program: train on 30 pairs until it overfits, translate them back
// with beam search, score, resume, and the errors a user sees.
#include <catch2/catch.hpp>

#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "eval/latency.h"
#include "eval/metrics.h"
#include "eval/simuleval_log.h"
#include "program.h"
#include "util/text_io.h"

namespace fs = std::filesystem;
using namespace attnmt::test;

namespace {

// Trains the tiny config with another attention for 20 updates into dir/model.
void train_with_attention(const fs::path& dir, const std::string& attention) {
  auto config = tiny_config(dir / "model", 20);
  config.replace(config.find("type: luong_general"), 19, "type: " + attention);
  write(dir / "config.yaml", config);
  auto train = run("train " + (dir / "config.yaml").string());
  INFO(train.output);
  REQUIRE(train.status == 0);
}

}  // namespace

TEST_CASE("train overfits 30 pairs, translate with beam search reproduces them", "[e2e]") {
  auto dir = temp_dir("overfit");
  write(dir / "config.yaml", tiny_config(dir / "model", 900));
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  const std::string ref = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.en";
  // data.test: translated (beam from decode.*) and scored at the end of training.
  auto train = run("train " + (dir / "config.yaml").string() + " --set data.test.src=" + src +
                   " --set data.test.tgt=" + ref);
  INFO(train.output);
  REQUIRE(train.status == 0);
  REQUIRE(fs::exists(dir / "model" / "best.pt"));
  REQUIRE(fs::exists(dir / "model" / "log.jsonl"));
  REQUIRE(fs::exists(dir / "model" / "config.yaml"));
  REQUIRE(train.output.find("[test]") != std::string::npos);
  {
    auto test_hyps = attnmt::read_lines((dir / "model" / "test.hyp").string());
    const double test_bleu = attnmt::corpus_bleu(test_hyps, attnmt::read_lines(ref)).score;
    REQUIRE(test_bleu > 90.0);
    std::string last_log;
    for (const auto& line : attnmt::read_lines((dir / "model" / "log.jsonl").string())) {
      if (line.find("\"type\":\"test\"") != std::string::npos) last_log = line;
    }
    INFO(last_log);
    REQUIRE(last_log.find("\"beam_size\":3") != std::string::npos);
    std::ostringstream expected;
    expected << "\"test_bleu\":" << test_bleu;
    REQUIRE(last_log.find(expected.str().substr(0, 16)) != std::string::npos);
    // The program runs on the malloc it was built with (CMake option ATTNMT_TCMALLOC), and
    // SentencePiece's module (RTLD_DEEPBIND) works beside it: it tokenized all of the above.
    const auto start = nlohmann::json::parse(attnmt::read_lines((dir / "model" / "log.jsonl").string()).front());
    REQUIRE(start["type"] == "start");
    CHECK(start["malloc"].get<std::string>().rfind(ATTNMT_PROGRAM_MALLOC, 0) == 0);
  }

  auto tr = run("translate --model " + (dir / "model").string() + " --input " + src + " --output " +
                (dir / "hyp.en").string() + " --attention-out " + (dir / "att.jsonl").string());
  INFO(tr.output);
  REQUIRE(tr.status == 0);
  auto hyps = attnmt::read_lines((dir / "hyp.en").string());
  auto refs = attnmt::read_lines(ref);
  REQUIRE(hyps.size() == refs.size());
  const double bleu = attnmt::corpus_bleu(hyps, refs).score;
  INFO("BLEU " << bleu);
  REQUIRE(bleu > 90.0);
  REQUIRE(attnmt::read_lines((dir / "att.jsonl").string()).size() == refs.size());

  // Vocabulary shortlist: refused without a lexicon (naming the command that builds it), then built
  // by `attnmt lexicon` and used.
  {
    const auto with_shortlist = "translate --model " + (dir / "model").string() + " --input " + src + " --output " +
                                (dir / "hyp_sl.en").string() + " --shortlist true";
    auto refused = run(with_shortlist);
    INFO(refused.output);
    CHECK(refused.status == 2);
    CHECK(refused.output.find("attnmt lexicon --model") != std::string::npos);
    auto lexicon = run("lexicon --model " + (dir / "model").string());
    INFO(lexicon.output);
    REQUIRE(lexicon.status == 0);
    REQUIRE(fs::exists(dir / "model" / "lexicon.bin"));
    auto listed = run(with_shortlist);
    INFO(listed.output);
    REQUIRE(listed.status == 0);
    CHECK(attnmt::corpus_bleu(attnmt::read_lines((dir / "hyp_sl.en").string()), refs).score > 90.0);
    // The sizes from the command line: nothing frequent and no translations leaves </s>, <unk> and
    // the rounding's lowest ids (64 of the ~400), and the translations change.
    auto narrow = run(with_shortlist + " --shortlist-first 0 --shortlist-best 0 --stats " + (dir / "sl.json").string());
    INFO(narrow.output);
    REQUIRE(narrow.status == 0);
    CHECK(attnmt::read_file((dir / "sl.json").string()).find("\"shortlist_mean_size\":64.0") != std::string::npos);
    CHECK(attnmt::read_lines((dir / "hyp_sl.en").string()) != hyps);
  }

  // decode.precision int8 (runtime/int8_gemm.h): the sentences come back as in fp32, alone and with
  // the shortlist; `attnmt export --precision int8` writes a file ~4x smaller whose default
  // decoding is int8, and that decodes as the original does in int8 up to the rounding of the
  // stored weights.
  {
    const auto best = dir / "model" / "best.pt";
    const auto int8 = run("translate --model " + best.string() + " --input " + src + " --output " +
                          (dir / "hyp_int8.en").string() + " --precision int8");
    INFO(int8.output);
    REQUIRE(int8.status == 0);
    const double int8_bleu = attnmt::corpus_bleu(attnmt::read_lines((dir / "hyp_int8.en").string()), refs).score;
    // --profile: the translating time split into phases (util/decode_phases.h) that add up to it.
    auto profiled = run("translate --model " + best.string() + " --input " + src + " --output " +
                        (dir / "hyp_prof.en").string() + " --profile --workers 1 --stats " + (dir / "prof.json").string());
    INFO(profiled.output);
    REQUIRE(profiled.status == 0);
    CHECK(attnmt::read_lines((dir / "hyp_prof.en").string()) == hyps);
    CHECK(profiled.output.find("[translate] phases of") != std::string::npos);
    {
      const auto stats = nlohmann::json::parse(attnmt::read_file((dir / "prof.json").string()));
      double sum = 0;
      for (const auto* phase : {"tokenize", "encoder", "attention", "recurrent", "output", "search", "other"}) {
        INFO(phase);
        REQUIRE(stats["phases"].contains(phase));
        CHECK(stats["phases"][phase].get<double>() >= 0);
        sum += stats["phases"][phase].get<double>();
      }
      for (const auto* phase : {"encoder", "attention", "recurrent", "output", "search"}) {
        CHECK(stats["phases"][phase].get<double>() > 0);
      }
      const double seconds = stats["translate_seconds"].get<double>();
      // Not over-counted: the phases and "other" add up to the translating time ("other" is what
      // is left, never negative)...
      CHECK(sum == Approx(seconds).epsilon(0.02));
      // ...nor under-counted: the named phases hold nearly all of it (other: 0-2% here), so a
      // phase that loses time shows as "other" growing.
      CHECK(stats["phases"]["other"].get<double>() <= 0.1 * seconds);
    }
    // ...and what they divide by: greedy, one sentence per batch: an encoder run per sentence, a
    // decoder step per output token, the end of sentence included (target_tokens counts it).
    {
      const auto greedy = run("translate --model " + best.string() + " --input " + src + " --output " +
                              (dir / "hyp_greedy.en").string() + " --profile --workers 1 --batch-size 1 --beam-size 1 " +
                              "--stats " + (dir / "greedy.json").string());
      INFO(greedy.output);
      REQUIRE(greedy.status == 0);
      const auto stats = nlohmann::json::parse(attnmt::read_file((dir / "greedy.json").string()));
      const auto sentences = stats["sentences"].get<int64_t>(), tokens = stats["target_tokens"].get<int64_t>();
      CHECK(stats["encoder_calls"].get<int64_t>() == sentences);
      CHECK(stats["decoder_steps"].get<int64_t>() == tokens);
    }
    // Quantisation moves the logits a little: a word may change in a line or two (one word of 30
    // short lines moves BLEU by ~1-2, by how the fp32 model came out on this CPU's kernels).
    const auto int8_hyps = attnmt::read_lines((dir / "hyp_int8.en").string());
    REQUIRE(int8_hyps.size() == hyps.size());
    size_t as_fp32 = 0;
    for (size_t i = 0; i < hyps.size(); ++i) as_fp32 += int8_hyps[i] == hyps[i];
    INFO(as_fp32 << " of " << hyps.size() << " lines as in fp32; BLEU " << int8_bleu << " against " << bleu);
    CHECK(as_fp32 * 10 >= hyps.size() * 9);
    CHECK(int8_bleu > 90.0);
    CHECK(int8_bleu >= bleu - 3.0);
    auto with_shortlist = run("translate --model " + best.string() + " --input " + src + " --output " +
                              (dir / "hyp_int8_sl.en").string() + " --precision int8 --shortlist true");
    INFO(with_shortlist.output);
    REQUIRE(with_shortlist.status == 0);
    CHECK(attnmt::corpus_bleu(attnmt::read_lines((dir / "hyp_int8_sl.en").string()), refs).score > 90.0);

    const auto exported = dir / "int8.pt";
    auto ex = run("export " + best.string() + " --output " + exported.string() + " --precision int8");
    INFO(ex.output);
    REQUIRE(ex.status == 0);
    const double ratio = static_cast<double>(fs::file_size(best)) / static_cast<double>(fs::file_size(exported));
    INFO("best.pt / int8.pt = " << ratio);
    CHECK(ratio > 2.0);  // 2.3 here: the tiny model's tokenizer and lexicon are a larger share than a real one's (3.8x)
    auto from_export = run("translate --model " + exported.string() + " --input " + src + " --output " +
                           (dir / "hyp_export.en").string() + " --stats " + (dir / "export.json").string());
    INFO(from_export.output);
    REQUIRE(from_export.status == 0);
    // The exported file decodes as the original does in int8 (hyp_int8.en, above): the same
    // products on the same int8 weights and scales; only the embeddings, stored as int8 too, are
    // rounded, which may move a close call in a line or two.
    const auto export_hyps = attnmt::read_lines((dir / "hyp_export.en").string());
    REQUIRE(export_hyps.size() == int8_hyps.size());
    size_t as_int8 = 0;
    for (size_t i = 0; i < export_hyps.size(); ++i) as_int8 += export_hyps[i] == int8_hyps[i];
    INFO(as_int8 << " of " << int8_hyps.size() << " lines as the original's int8 decoding");
    CHECK(as_int8 * 10 >= int8_hyps.size() * 9);
    CHECK(attnmt::corpus_bleu(export_hyps, int8_hyps).score > 90.0);
    CHECK(attnmt::corpus_bleu(export_hyps, refs).score > 90.0);
    CHECK(attnmt::read_file((dir / "export.json").string()).find("\"precision\":\"int8\"") != std::string::npos);
    // Refused before anything is written: another precision; training in int8.
    auto bad = run("export " + best.string() + " --output " + (dir / "bad.pt").string() + " --precision int4");
    CHECK(bad.status == 2);
    CHECK(bad.output.find("--precision: expected int8 or fp32, got 'int4'") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "bad.pt"));
    auto train_int8 = run("train " + (dir / "config.yaml").string() + " --set train.precision=int8");
    CHECK(train_int8.status == 2);
    CHECK(train_int8.output.find("train.precision: int8 is for decoding only") != std::string::npos);
  }

  // The model is built from the save dir's config.yaml while the checkpoint is read
  // (checkpoint.h's load_model), and from the checkpoint's own config when the two differ or
  // config.yaml is gone: the same translations either way.
  {
    const auto config_yaml = dir / "model" / "config.yaml";
    const auto saved = attnmt::read_file(config_yaml.string());
    auto other = saved;
    const auto at = other.find("hidden_size: 64");
    REQUIRE(at != std::string::npos);
    other.replace(at, 15, "hidden_size: 32");
    for (const std::string& text : {other, std::string()}) {
      if (text.empty()) {
        fs::remove(config_yaml);
      } else {
        write(config_yaml, text);
      }
      auto again = run("translate --model " + (dir / "model").string() + " --input " + src + " --output " +
                       (dir / "hyp2.en").string());
      INFO(again.output);
      REQUIRE(again.status == 0);
      CHECK(attnmt::read_lines((dir / "hyp2.en").string()) == hyps);
    }
    write(config_yaml, saved);
  }

  auto score = run("score --ref " + ref + " --hyp " + (dir / "hyp.en").string() + " --json");
  REQUIRE(score.status == 0);
  REQUIRE(score.output.find("\"bleu\"") != std::string::npos);

  // Empty input line -> empty output line; stdin -> stdout.
  write(dir / "in.txt", "\nEin Mann.\n\n");
  auto stdin_run = run("translate --model " + (dir / "model").string() + " < " + (dir / "in.txt").string());
  REQUIRE(stdin_run.status == 0);

  // --resume continues to a later max_steps.
  auto resumed = run("train " + (dir / "config.yaml").string() + " --resume --set train.max_steps=950");
  INFO(resumed.output);
  REQUIRE(resumed.status == 0);
  REQUIRE(resumed.output.find("resumed from") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("translate --hard-decode switches monotonic attention between hard and expected alignment", "[e2e]") {
  auto dir = temp_dir("hard_decode");
  train_with_attention(dir, "monotonic");
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  // Hard: every attention entry is 0 or 1. Expected alignment: some entry lies strictly between.
  for (const bool hard : {true, false}) {
    const auto att = dir / (hard ? "hard.jsonl" : "soft.jsonl");
    auto tr = run("translate --model " + (dir / "model").string() + " --input " + src + " --output " +
                  (dir / "hyp.en").string() + " --attention-out " + att.string() +
                  " --hard-decode " + (hard ? "true" : "false"));
    INFO(tr.output);
    REQUIRE(tr.status == 0);
    bool fractional = false;
    for (const auto& line : attnmt::read_lines(att.string())) {
      const auto record = nlohmann::json::parse(line);  // kept alive: the loop below reads into it
      for (const auto& row : record.at("attention")) {
        for (const auto& w : row) fractional = fractional || (w.get<double>() > 1e-6 && w.get<double>() < 1 - 1e-6);
      }
    }
    CHECK(fractional == !hard);
  }
  fs::remove_all(dir);
}

TEST_CASE("milk: trained with its latency loss, it decodes a stream, and latency_loss elsewhere is refused",
          "[e2e][streaming][milk]") {
  auto dir = temp_dir("milk");
  auto config = tiny_config(dir / "model", 20);
  config.replace(config.find("type: luong_general"), 19, "type: luong_general, latency_loss: 0.5");
  write(dir / "refused.yaml", config);
  auto refused = run("train " + (dir / "refused.yaml").string());
  INFO(refused.output);
  CHECK(refused.status == 2);
  CHECK(refused.output.find("model.attention.latency_loss: 'luong_general' has no monotonic head") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "model"));  // refused before anything was written
  config.replace(config.find("type: luong_general"), 19, "type: milk");
  write(dir / "config.yaml", config);
  auto train = run("train " + (dir / "config.yaml").string());
  INFO(train.output);
  REQUIRE(train.status == 0);
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  const auto model = " --model " + (dir / "model").string() + " --input " + src;
  REQUIRE(run("translate" + model + " --beam-size 1 --output " + (dir / "greedy.en").string()).status == 0);
  // Waiting for the whole sentence is full-sentence greedy decoding; without waiting it streams.
  auto waited = run("translate" + model + " --streaming --lookahead 1000 --output " + (dir / "waited.en").string());
  INFO(waited.output);
  REQUIRE(waited.status == 0);
  CHECK(attnmt::read_lines((dir / "waited.en").string()) == attnmt::read_lines((dir / "greedy.en").string()));
  auto streamed = run("translate" + model + " --streaming --output " + (dir / "streamed.en").string());
  INFO(streamed.output);
  REQUIRE(streamed.status == 0);
  CHECK(streamed.output.find("average lagging") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("translate --streaming: chunkwise attention decodes a stream and reports its lagging", "[e2e][streaming]") {
  auto dir = temp_dir("streaming");
  train_with_attention(dir, "chunkwise");
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  const auto model = " --model " + (dir / "model").string() + " --input " + src;
  auto greedy = run("translate" + model + " --beam-size 1 --output " + (dir / "greedy.en").string());
  INFO(greedy.output);
  REQUIRE(greedy.status == 0);
  // Waiting for the whole sentence (a lookahead longer than any line) is full-sentence greedy decoding.
  auto waited = run("translate" + model + " --streaming --lookahead 1000 --output " + (dir / "waited.en").string());
  INFO(waited.output);
  REQUIRE(waited.status == 0);
  REQUIRE(attnmt::read_lines((dir / "waited.en").string()) == attnmt::read_lines((dir / "greedy.en").string()));
  // So is wait-k with k past every line's length (--hard-decode false: wait-k takes any attention).
  auto wait_all = run("translate" + model + " --streaming --wait-k 1000 --hard-decode false --output " +
                      (dir / "wait_all.en").string());
  INFO(wait_all.output);
  REQUIRE(wait_all.status == 0);
  REQUIRE(wait_all.output.find("wait-1000") != std::string::npos);
  auto greedy_soft = run("translate" + model + " --beam-size 1 --hard-decode false --output " + (dir / "greedy_soft.en").string());
  REQUIRE(greedy_soft.status == 0);
  REQUIRE(attnmt::read_lines((dir / "wait_all.en").string()) == attnmt::read_lines((dir / "greedy_soft.en").string()));
  // decode.wait_k picks the same policy when --wait-k is not given (and --wait-k overrides it).
  auto wait_key = run("translate" + model + " --streaming --set decode.wait_k=1000 --hard-decode false --output " +
                      (dir / "wait_key.en").string());
  INFO(wait_key.output);
  REQUIRE(wait_key.status == 0);
  REQUIRE(wait_key.output.find("wait-1000") != std::string::npos);
  REQUIRE(attnmt::read_lines((dir / "wait_key.en").string()) == attnmt::read_lines((dir / "greedy_soft.en").string()));
  auto wait_flag = run("translate" + model + " --streaming --set decode.wait_k=1000 --wait-k 2 --output " +
                       (dir / "wait_flag.en").string());
  INFO(wait_flag.output);
  REQUIRE(wait_flag.status == 0);
  REQUIRE(wait_flag.output.find("wait-2 (replay),") != std::string::npos);
  const std::string ref = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.en";
  auto streamed = run("translate" + model + " --streaming --output " + (dir / "streamed.en").string() + " --delays " +
                      (dir / "delays.tsv").string() + " --stats " + (dir / "stats.json").string() +
                      " --reference " + ref + " --simuleval-dir " + (dir / "simuleval").string());
  INFO(streamed.output);
  REQUIRE(streamed.status == 0);
  REQUIRE(streamed.output.find("average lagging") != std::string::npos);
  const auto lines = attnmt::read_lines(src);
  const auto delays = attnmt::read_lines((dir / "delays.tsv").string());
  REQUIRE(delays.size() == lines.size());
  REQUIRE(attnmt::read_lines((dir / "streamed.en").string()).size() == lines.size());
  double mean = 0;
  for (const auto& line : delays) {
    std::istringstream in(line);
    double lagging = 0;
    in >> lagging;
    mean += lagging / static_cast<double>(delays.size());
    int64_t previous = 0, d = 0;
    while (in >> d) {  // the source tokens read: never fewer than before
      REQUIRE(d >= std::max<int64_t>(previous, 1));
      previous = d;
    }
  }
  const auto stats = nlohmann::json::parse(attnmt::read_file((dir / "stats.json").string()));
  REQUIRE(stats.at("average_lagging").get<double>() == Approx(mean).margin(1e-3));
  // SimulEval's output directory: a record per line, delays in words (one per output word, within
  // the source's words), and the figures attnmt printed are those of the log it wrote.
  REQUIRE(attnmt::read_file((dir / "simuleval" / "config.yaml").string()) == "source_type: text\ntarget_type: text\n");
  const auto records = attnmt::read_lines((dir / "simuleval" / "instances.log").string());
  REQUIRE(records.size() == lines.size());
  const auto streamed_lines = attnmt::read_lines((dir / "streamed.en").string());
  const auto references = attnmt::read_lines(ref);
  std::vector<attnmt::LatencyInstance> logged;
  for (size_t i = 0; i < records.size(); ++i) {
    const auto r = attnmt::parse_simuleval_line(records[i], "instances.log");
    INFO(records[i]);
    CHECK(r.index == static_cast<int64_t>(i));
    std::istringstream source(lines[i]), output(streamed_lines[i]);
    std::vector<std::string> source_words{std::istream_iterator<std::string>(source), {}};
    std::vector<std::string> output_words{std::istream_iterator<std::string>(output), {}};
    CHECK(r.source_length == static_cast<int64_t>(source_words.size()));
    CHECK(r.prediction_length == static_cast<int64_t>(output_words.size()));
    CHECK(r.delays.size() == output_words.size());
    CHECK(r.elapsed.size() == output_words.size());
    CHECK(r.reference == references[i]);
    int64_t previous = 1;
    for (int64_t d : r.delays) {
      CHECK(d >= previous);
      CHECK(d <= r.source_length);
      previous = d;
    }
    logged.push_back(attnmt::latency_instance(r));
  }
  const auto scored = attnmt::corpus_latency(logged);
  const auto& printed = stats.at("latency").at("words");
  CHECK(printed.at("scored").get<size_t>() == scored.scored);
  for (const auto& [name, value] : attnmt::latency_fields(scored.mean)) {
    INFO(name);
    CHECK(printed.at(name).get<double>() == Approx(value).margin(1e-9));
  }
  CHECK(stats.at("latency").at("subwords").at("scored").get<size_t>() == scored.scored);
  // What streaming cannot do: one line each, exit 2.
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {" --lookahead 2", "only with --streaming"},
           {" --streaming --hard-decode false", "hard_decode: false"},
           {" --streaming --n-best 2", "not with --n-best"},
           {" --streaming --min-length 3", "not with --min-length"},
           {" --reference " + ref, "--reference: only with --streaming"},
           {" --wait-k 2", "--wait-k: only with --streaming"},
           {" --streaming --wait-k 2 --lookahead 1", "not with --wait-k"},
           {" --streaming --set decode.wait_k=2 --lookahead 1", "not with decode.wait_k 2"},
           {" --streaming --set decode.wait_k=-1", "decode.wait_k"},
           {" --streaming --set decode.wait_k=two", "decode.wait_k"},
           {" --reencode", "--reencode: only with --streaming"},
           {" --wait-k-policy prefix", "--wait-k-policy: only with --streaming"},
           {" --streaming --wait-k-policy prefix", "--wait-k-policy: only with wait-k"},
           {" --streaming --wait-k 2 --wait-k-policy later", "--wait-k-policy"},
           {" --streaming --wait-k 2 --set decode.wait_k_policy=pre", "decode.wait_k_policy"},
           {" --streaming --wait-k 2 --wait-k-policy prefix --reencode", "--reencode: not with the wait-k policy prefix"},
           // the tiny model's encoder is bidirectional: every prefix is encoded again
           {" --streaming --wait-k 2 --wait-k-policy prefix", "needs a model that reads its source a token at a time"},
           {" --streaming --simuleval-dir " + (dir / "x").string(), "needs --reference"}}) {
    auto r = run("translate" + model + flags);
    INFO(flags << ": " << r.output);
    REQUIRE(r.status == 2);
    REQUIRE(r.output.find(message) != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("train.wait_k, then translate --streaming --wait-k-policy prefix: a unidirectional model's decoder kept "
          "across reads", "[e2e][streaming]") {
  auto dir = temp_dir("wait_k_prefix");
  write(dir / "config.yaml", tiny_config(dir / "model", 20));
  // Trained prefix-to-prefix (train.wait_k), where the attention allows it.
  auto refused = run("train " + (dir / "config.yaml").string() +
                     " --set model.encoder.bidirectional=false --set train.wait_k=2 --set model.attention.type=local_p");
  INFO(refused.output);
  CHECK(refused.status == 2);
  CHECK(refused.output.find("train.wait_k: needs an attention that weighs every source position") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "model"));  // refused before anything was written
  auto train = run("train " + (dir / "config.yaml").string() +
                   " --set model.encoder.bidirectional=false --set train.wait_k=2");
  INFO(train.output);
  REQUIRE(train.status == 0);
  const std::string src = std::string(ATTNMT_TEST_DATA_DIR) + "/tiny.de";
  const auto model = " --model " + (dir / "model").string() + " --input " + src;
  auto out = [&](const std::string& name) { return attnmt::read_lines((dir / name).string()); };
  REQUIRE(run("translate" + model + " --beam-size 1 --output " + (dir / "greedy.en").string()).status == 0);
  // k past every line: the whole source read first, then greedy search.
  auto all = run("translate" + model + " --streaming --wait-k 1000 --wait-k-policy prefix --output " +
                 (dir / "all.en").string());
  INFO(all.output);
  REQUIRE(all.status == 0);
  CHECK(out("all.en") == out("greedy.en"));
  // wait-2 as a flag and as the config key: the same output; logged and in --stats.
  auto flag = run("translate" + model + " --streaming --wait-k 2 --wait-k-policy prefix --output " +
                  (dir / "flag.en").string() + " --stats " + (dir / "stats.json").string());
  INFO(flag.output);
  REQUIRE(flag.status == 0);
  CHECK(flag.output.find("wait-2 (prefix), source read a token at a time") != std::string::npos);
  const auto stats = nlohmann::json::parse(attnmt::read_lines((dir / "stats.json").string()).at(0));
  CHECK(stats.at("wait_k_policy") == "prefix");
  CHECK(stats.at("wait_k") == 2);
  auto key = run("translate" + model + " --streaming --set decode.wait_k=2 --set decode.wait_k_policy=prefix --output " +
                 (dir / "key.en").string());
  REQUIRE(key.status == 0);
  CHECK(out("key.en") == out("flag.en"));
  // The file's streams decoded in batches (the default) and one at a time: the same words and delays.
  auto one = run("translate" + model + " --streaming --wait-k 2 --wait-k-policy prefix --batch-size 1 --output " +
                 (dir / "one.en").string() + " --delays " + (dir / "one.delays").string());
  auto many = run("translate" + model + " --streaming --wait-k 2 --wait-k-policy prefix --batch-size 7 --output " +
                  (dir / "many.en").string() + " --delays " + (dir / "many.delays").string());
  REQUIRE(one.status == 0);
  REQUIRE(many.status == 0);
  CHECK(out("one.en") == out("flag.en"));
  CHECK(out("many.en") == out("flag.en"));
  CHECK(out("one.delays") == out("many.delays"));
  // Without either: the schedule it was trained with (train.wait_k 2), by the prefix policy (decode.wait_k_policy
  // auto), said once; a policy asked for is taken.
  auto own = run("translate" + model + " --streaming --output " + (dir / "own.en").string());
  INFO(own.output);
  REQUIRE(own.status == 0);
  CHECK(own.output.find("wait-2 (prefix): the schedule the model was trained with") != std::string::npos);
  CHECK(out("own.en") == out("flag.en"));
  auto replay = run("translate" + model + " --streaming --wait-k-policy replay --output " + (dir / "replay.en").string());
  INFO(replay.output);
  REQUIRE(replay.status == 0);
  CHECK(replay.output.find("wait-2 (replay)") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("user errors are one line and exit 2", "[e2e]") {
  auto dir = temp_dir("errors");
  SECTION("unknown config key") {
    write(dir / "c.yaml", "model: {encoder: {hiden_size: 3}}\n");
    auto r = run("train " + (dir / "c.yaml").string());
    REQUIRE(r.status == 2);
    REQUIRE(r.output.find("did you mean 'model.encoder.hidden_size'") != std::string::npos);
  }
  SECTION("unknown attention type lists the valid ones") {
    write(dir / "c.yaml", tiny_config(dir / "m", 10) + "");
    auto r = run("train " + (dir / "c.yaml").string() + " --set model.attention.type=nope");
    REQUIRE(r.status == 2);
    REQUIRE(r.output.find("luong_general") != std::string::npos);
  }
  SECTION("missing model dir") {
    auto r = run("translate --model " + (dir / "absent").string());
    REQUIRE(r.status == 2);
    REQUIRE(r.output.find("does not exist") != std::string::npos);
  }
  SECTION("score with different line counts") {
    write(dir / "a.txt", "a\nb\n");
    write(dir / "b.txt", "a\n");
    auto r = run("score --ref " + (dir / "a.txt").string() + " --hyp " + (dir / "b.txt").string());
    REQUIRE(r.status == 2);
  }
  fs::remove_all(dir);
}
