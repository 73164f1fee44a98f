// Config loader: defaults < YAML < overrides, strict keys and types, validation, round trip.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "config/loader.h"
#include "util/error.h"

using attnmt::Config;
using attnmt::InputError;
using attnmt::parse_config;
// The choice keys' enums and names (util/choices.h).
using attnmt::choice_named;
using attnmt::config_to_yaml;
using attnmt::DecodePrecision;
using attnmt::DecoderInit;
using attnmt::DecoderStyle;
using attnmt::DistBackend;
using attnmt::find_key_info;
using attnmt::GemmBackend;
using attnmt::LrSchedule;
using attnmt::name_of;
using attnmt::Optimizer;
using attnmt::parse_choice;
using attnmt::RnnType;
using attnmt::SearchRules;
using attnmt::SubwordModel;
using attnmt::TokenizerType;
using attnmt::ValidMetric;
using attnmt::WaitKPolicy;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;

namespace fs = std::filesystem;

namespace {

// The message of the InputError that `f` throws ("" if it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string parse_error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return error_of([&] { parse_config(yaml, "cfg.yaml", overrides); });
}

std::string validate_error(const Config& config) {
  return error_of([&] { attnmt::validate_config(config); });
}

// A fresh, empty directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("attnmt_test_config_" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name, const std::string& content) const {
    std::ofstream(path / name) << content;
    return (path / name).string();
  }
};

const char* const kFullYaml = R"(# every section, non-default values
data:
  train: {src: train.de, tgt: train.en}
  valid:
    src: valid.de
    tgt: valid.en
  test:
    src: "test 2016.de"
    tgt: 'test 2016.en'
  max_length: 80
tokenizer:
  type: sentencepiece
  model_type: unigram
  vocab_size: 16000
  shared: false
  character_coverage: 0.9995
model:
  embedding_size: 512
  encoder:
    rnn: gru
    bidirectional: no
    layers: 3
    hidden_size: 384
    dropout: 0.25
  decoder:
    rnn: gru
    style: bahdanau
    layers: 1
    hidden_size: 768
    input_feeding: off
    dropout: 0.1
  attention:
    type: local_p
    hidden_size: 128
    window: 7
    score: concat
    hard_decode: false
    heads: 8
    max_area: 5
    coverage: true
    coverage_loss: 0.5
  tie_embeddings: yes
train:
  save_dir: runs/exp1
  batch_size: 32
  batch_tokens: 4096
  max_steps: 20000
  max_epochs: 15
  optimizer: sgd
  learning_rate: 3e-4
  clip_norm: 1.0
  label_smoothing: 0.0
  lr_schedule: constant
  lr_decay: 0.7
  lr_patience: 3
  min_learning_rate: 1.0e-6
  valid_every: 500
  valid_metric: ppl
  valid_beam_size: 4
  patience: 5
  keep_checkpoints: 2
  report_every: 50
  seed: 18446744073709551615
decode:
  beam_size: 10
  length_penalty: 1.0
  coverage_penalty: 0.2
  max_length_ratio: 1.5
  batch_size: 16
  n_best: 3
  packed_weights: false
threads: 4
device: cuda:1
)";

}  // namespace

TEST_CASE("config: struct defaults are valid and survive an empty-ish YAML", "[config]") {
  const Config defaults;
  CHECK(validate_error(defaults).empty());

  const Config c = parse_config("model: {}\n", "cfg.yaml");
  CHECK(c.data.max_length == 100);
  CHECK(c.data.train.src.empty());
  CHECK(c.tokenizer.type == TokenizerType::sentencepiece);
  CHECK(c.tokenizer.model_type == SubwordModel::bpe);
  CHECK(c.tokenizer.vocab_size == 8000);
  CHECK(c.tokenizer.shared);
  CHECK(c.model.embedding_size == 256);
  CHECK(c.model.encoder.rnn == RnnType::lstm);
  CHECK(c.model.encoder.bidirectional);
  CHECK(c.model.encoder.layers == 2);
  CHECK(c.model.encoder.dropout == 0.3);
  CHECK(c.model.decoder.style == DecoderStyle::luong);
  CHECK(c.model.decoder.input_feeding);
  CHECK(c.model.attention.type == "luong_general");
  CHECK(c.model.attention.window == 10);
  CHECK_FALSE(c.model.tie_embeddings);
  CHECK(c.train.save_dir.empty());
  CHECK(c.train.batch_size == 64);
  CHECK(c.train.learning_rate == 1e-3);
  CHECK(c.train.label_smoothing == 0.1);
  CHECK(c.train.valid_metric == ValidMetric::bleu);
  CHECK(c.train.seed == 1234u);
  CHECK(c.decode.beam_size == 5);
  CHECK(c.decode.length_penalty == 0.6);
  CHECK(c.decode.n_best == 1);
  CHECK(c.decode.packed_weights);
  CHECK(c.threads == 0);
  CHECK(c.device == "cpu");
  CHECK(attnmt::config_to_yaml(c) == attnmt::config_to_yaml(defaults));
}

TEST_CASE("config: a full YAML is parsed to the exact values", "[config]") {
  const Config c = parse_config(kFullYaml, "full.yaml");
  CHECK(c.data.train.src == "train.de");
  CHECK(c.data.train.tgt == "train.en");
  CHECK(c.data.valid.src == "valid.de");
  CHECK(c.data.valid.tgt == "valid.en");
  CHECK(c.data.test.src == "test 2016.de");
  CHECK(c.data.test.tgt == "test 2016.en");
  CHECK(c.data.max_length == 80);
  CHECK(c.tokenizer.model_type == SubwordModel::unigram);
  CHECK(c.tokenizer.vocab_size == 16000);
  CHECK_FALSE(c.tokenizer.shared);
  CHECK(c.tokenizer.character_coverage == 0.9995);
  CHECK(c.model.embedding_size == 512);
  CHECK(c.model.encoder.rnn == RnnType::gru);
  CHECK_FALSE(c.model.encoder.bidirectional);
  CHECK(c.model.encoder.layers == 3);
  CHECK(c.model.encoder.hidden_size == 384);
  CHECK(c.model.encoder.dropout == 0.25);
  CHECK(c.model.decoder.rnn == RnnType::gru);
  CHECK(c.model.decoder.style == DecoderStyle::bahdanau);
  CHECK(c.model.decoder.layers == 1);
  CHECK(c.model.decoder.hidden_size == 768);
  CHECK_FALSE(c.model.decoder.input_feeding);
  CHECK(c.model.decoder.dropout == 0.1);
  CHECK(c.model.attention.type == "local_p");
  CHECK(c.model.attention.hidden_size == 128);
  CHECK(c.model.attention.window == 7);
  CHECK(c.model.attention.score == "concat");
  CHECK_FALSE(c.model.attention.hard_decode);
  CHECK(c.model.attention.heads == 8);
  CHECK(c.model.attention.max_area == 5);
  CHECK(c.model.attention.coverage);
  CHECK(c.model.attention.coverage_loss == 0.5);
  CHECK(c.model.tie_embeddings);
  CHECK(c.train.save_dir == "runs/exp1");
  CHECK(c.train.batch_size == 32);
  CHECK(c.train.batch_tokens == 4096);
  CHECK(c.train.max_steps == 20000);
  CHECK(c.train.max_epochs == 15);
  CHECK(c.train.optimizer == Optimizer::sgd);
  CHECK(c.train.learning_rate == 3e-4);
  CHECK(c.train.clip_norm == 1.0);
  CHECK(c.train.label_smoothing == 0.0);
  CHECK(c.train.lr_schedule == LrSchedule::constant);
  CHECK(c.train.lr_decay == 0.7);
  CHECK(c.train.lr_patience == 3);
  CHECK(c.train.min_learning_rate == 1e-6);
  CHECK(c.train.valid_every == 500);
  CHECK(c.train.valid_metric == ValidMetric::ppl);
  CHECK(c.train.valid_beam_size == 4);
  CHECK(c.train.patience == 5);
  CHECK(c.train.keep_checkpoints == 2);
  CHECK(c.train.report_every == 50);
  CHECK(c.train.seed == 18446744073709551615ull);
  CHECK(c.decode.beam_size == 10);
  CHECK(c.decode.length_penalty == 1.0);
  CHECK(c.decode.coverage_penalty == 0.2);
  CHECK(c.decode.max_length_ratio == 1.5);
  CHECK(c.decode.batch_size == 16);
  CHECK(c.decode.n_best == 3);
  CHECK_FALSE(c.decode.packed_weights);
  CHECK(c.threads == 4);
  CHECK(c.device == "cuda:1");
}

TEST_CASE("config: overrides beat the YAML, later overrides beat earlier ones", "[config]") {
  const Config c =
      parse_config(kFullYaml, "full.yaml",
                   {"train.max_steps=100", "model.encoder.bidirectional=true",
                    "data.train.src=foo.de", "decode.beam_size=2", "decode.n_best=1",
                    "train.learning_rate=0.5", "model.decoder={layers: 4, style: luong}",
                    " threads = 2 ", "threads=3", "data.test.src=", "data.test.tgt="});
  CHECK(c.train.max_steps == 100);
  CHECK(c.model.encoder.bidirectional);
  CHECK(c.data.train.src == "foo.de");
  CHECK(c.data.train.tgt == "train.en");  // untouched
  CHECK(c.decode.beam_size == 2);
  CHECK(c.train.learning_rate == 0.5);
  CHECK(c.model.decoder.layers == 4);
  CHECK(c.model.decoder.style == DecoderStyle::luong);
  CHECK(c.model.decoder.hidden_size == 768);  // a map override sets only its keys
  CHECK(c.threads == 3);
  CHECK(c.data.test.src.empty());
  CHECK(c.data.test.tgt.empty());
}

TEST_CASE("config: bad overrides", "[config]") {
  CHECK_THAT(parse_error("threads: 1\n", {"train.max_steps"}),
             Contains("malformed override 'train.max_steps'"));
  CHECK_THAT(parse_error("threads: 1\n", {"=3"}), Contains("malformed override '=3'"));
  CHECK_THAT(parse_error("threads: 1\n", {"train.max_stepz=3"}),
             Equals("unknown key 'train.max_stepz' in override 'train.max_stepz=3' "
                    "(did you mean 'train.max_steps'?)"));
  CHECK_THAT(parse_error("threads: 1\n", {"train.max_steps=abc"}),
             Equals("override 'train.max_steps=abc': train.max_steps: expected an integer, "
                    "got 'abc'"));
  CHECK_THAT(parse_error("threads: 1\n", {"data.train.src=[a"}),
             Contains("override 'data.train.src=[a': YAML syntax error"));
  CHECK_THAT(parse_error("threads: 1\n", {"model.encoder=3"}),
             Contains("model.encoder: expected a map of keys, got '3'"));
}

TEST_CASE("config: unknown keys are rejected with the closest valid key", "[config]") {
  SECTION("typo in a nested leaf") {
    CHECK_THAT(parse_error("model:\n  encoder:\n    hiden_size: 3\n"),
               Contains("unknown key 'model.encoder.hiden_size' in 'cfg.yaml'") &&
                   Contains("(did you mean 'model.encoder.hidden_size'?)") && Contains("line 3"));
  }
  SECTION("typo at the top level") {
    CHECK_THAT(parse_error("modle:\n  embedding_size: 3\n"),
               Contains("unknown key 'modle'") && Contains("did you mean 'model'?"));
  }
  SECTION("typo in a section name") {
    CHECK_THAT(parse_error("model:\n  encodr:\n    layers: 3\n"),
               Contains("unknown key 'model.encodr'") && Contains("did you mean 'model.encoder'?"));
  }
  SECTION("right leaf, wrong section") {
    CHECK_THAT(parse_error("model:\n  hidden_size: 3\n"),
               Contains("unknown key 'model.hidden_size'") &&
                   Contains("did you mean 'model.encoder.hidden_size'?"));
    CHECK_THAT(parse_error("train:\n  beam_size: 3\n"),
               Contains("did you mean 'decode.beam_size'?"));
  }
  SECTION("a short leaf gets no far-fetched suggestion") {
    CHECK_THAT(parse_error("train:\n  lr: 0.1\n"), !Contains("did you mean"));
  }
  SECTION("forgotten section") {
    CHECK_THAT(parse_error("encoder:\n  layers: 2\n"), Contains("did you mean 'model.encoder'?"));
    CHECK_THAT(parse_error("beam_size: 2\n"), Contains("did you mean 'decode.beam_size'?"));
  }
  SECTION("nothing close: no suggestion") {
    const std::string message = parse_error("model:\n  encoder:\n    frobnicate: 1\n");
    CHECK_THAT(message, Contains("unknown key 'model.encoder.frobnicate'"));
    CHECK_THAT(message, !Contains("did you mean"));
  }
  SECTION("unknown key nested below a leaf's level") {
    CHECK_THAT(parse_error("data:\n  train:\n    src: a\n    tgt: b\n    lang: de\n"),
               Contains("unknown key 'data.train.lang'"));
  }
  SECTION("dotted keys are not nested maps") {
    CHECK_THAT(parse_error("model.encoder.layers: 3\n"),
               Contains("unknown key 'model.encoder.layers'") && Contains("nested maps"));
  }
  SECTION("duplicate keys") {
    CHECK_THAT(parse_error("threads: 1\nthreads: 2\n"), Contains("duplicate key 'threads'"));
  }
}

TEST_CASE("config: config_keys lists every leaf once", "[config]") {
  const auto keys = attnmt::config_keys();
  CHECK(keys.size() == 125);  // one per field of config.h
  CHECK(keys.front() == "data.train.src");
  CHECK(keys.back() == "device");
  CHECK(std::find(keys.begin(), keys.end(), "model.encoder.hidden_size") != keys.end());
  CHECK(std::find(keys.begin(), keys.end(), "model.encoder") == keys.end());  // not a section
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
}

TEST_CASE("config: the key table says when each key may change", "[config]") {
  using attnmt::KeyScope;
  const auto& table = attnmt::config_key_table();
  REQUIRE(table.size() == attnmt::config_keys().size());
  for (const auto& k : table) {
    INFO(k.key);
    CHECK(!k.help.empty());
    const bool decode = k.key.rfind("decode.", 0) == 0;
    const bool runtime = k.key == "threads" || k.key == "gemm" || k.key == "device" || k.key == "model.attention.hard_decode";
    CHECK((k.scope == KeyScope::train) == !(decode || runtime));
  }
  // What the Python module's translate() takes per call: the search and batching, not what builds
  // the step model (precision, packed weights, the shortlist) or the workers.
  CHECK(attnmt::keys_that_may_change(KeyScope::call) ==
        std::vector<std::string>{"decode.beam_size", "decode.length_penalty", "decode.coverage_penalty",
                                 "decode.max_length_ratio", "decode.batch_size", "decode.n_best", "decode.min_length",
                                 "decode.max_length", "decode.no_repeat_ngram_size", "decode.sampling",
                                 "decode.temperature", "decode.top_k", "decode.top_p", "decode.epsilon", "decode.seed",
                                 "decode.mbr", "decode.mbr_candidates", "decode.search_rules", "decode.ban_unk",
                                 "decode.unk_penalty", "decode.word_penalty"});
  CHECK(attnmt::describe_keys(attnmt::keys_that_may_change(KeyScope::load)) ==
        "decode.*, model.attention.hard_decode, threads, gemm and device");
  CHECK(attnmt::may_change("decode.beam_size", KeyScope::load));
  CHECK_FALSE(attnmt::may_change("decode.precision", KeyScope::call));
  CHECK_FALSE(attnmt::may_change("model.encoder.layers", KeyScope::load));
  CHECK_FALSE(attnmt::may_change("decode.beem_size", KeyScope::load));
  // A section: when every key in it may.
  CHECK(attnmt::may_change("decode", KeyScope::load));
  CHECK_FALSE(attnmt::may_change("decode", KeyScope::call));
  CHECK_FALSE(attnmt::may_change("model.attention", KeyScope::load));
  CHECK_FALSE(attnmt::may_change("dec", KeyScope::load));
  CHECK(attnmt::is_key_or_section("model.attention"));
  CHECK_FALSE(attnmt::is_key_or_section("model.atention"));
  // Types and defaults come from config.h's members.
  const auto* seed = attnmt::find_key_info("train.seed");
  REQUIRE(seed);
  CHECK(seed->type == "uint64");
  CHECK(seed->default_value == "1234");
  const auto* dropout = attnmt::find_key_info("model.encoder.dropout");
  REQUIRE(dropout);
  CHECK(dropout->type == "float");
  CHECK(dropout->default_value == "0.3");
  CHECK(dropout->allowed == "in [0, 1)");
  CHECK(attnmt::find_key_info("train.optimizer")->allowed == "`adam`, `sgd`");
  CHECK(attnmt::find_key_info("data.train.src")->default_value.empty());
  CHECK(attnmt::find_key_info("model.attention.hard_decode")->default_value == "true");
}

// docs/config.md's tables: | `key` | type | default | allowed | decode | meaning |.
TEST_CASE("config: docs/config.md shows the key table", "[config]") {
  std::ifstream in(fs::path(ATTNMT_SOURCE_DIR) / "docs" / "config.md");
  REQUIRE(in);
  std::map<std::string, std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        const size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
        cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    if (cells.size() != 6) continue;  // the environment variables' table
    const std::string key = cells[0].substr(1, cells[0].size() - 2);
    INFO(line);
    CHECK(rows.emplace(key, cells).second);  // each key once
  }
  static const char* const scopes[] = {"—", "load", "call"};
  for (const auto& k : attnmt::config_key_table()) {
    const auto row = rows.find(k.key);
    if (row == rows.end()) {
      FAIL_CHECK("docs/config.md has no row for " + k.key);
      continue;
    }
    const auto& cells = row->second;
    const std::string expected = "| `" + k.key + "` | " + k.type + " | " +
                                 (k.default_value.empty() ? "*(none)*" : "`" + k.default_value + "`") + " | " +
                                 k.allowed + " | " + scopes[static_cast<int>(k.scope)] + " | " + k.help + "...";
    INFO("expected: " << expected);
    CHECK(cells[1] == k.type);
    CHECK(cells[2] == (k.default_value.empty() ? "*(none)*" : "`" + k.default_value + "`"));
    CHECK(cells[3] == k.allowed);
    CHECK(cells[4] == scopes[static_cast<int>(k.scope)]);
    CHECK_THAT(cells[5], StartsWith(k.help));
    rows.erase(row);
  }
  for (const auto& [key, cells] : rows) FAIL_CHECK("docs/config.md: " + key + " is not a config key");
}

TEST_CASE("config: YAML syntax errors name the line and column", "[config]") {
  CHECK_THAT(parse_error("threads: 1\ndevice: cpu\n  bad: indent\n"),
             StartsWith("'cfg.yaml': YAML syntax error at line 3, column 6: "));
  CHECK_THAT(parse_error("model:\n  encoder:\n    layers: [3\n  decoder: {}\n"),
             StartsWith("'cfg.yaml': YAML syntax error at line 4,") &&
                 Contains("end of sequence flow not found"));
}

TEST_CASE("config: empty files and non-map documents are rejected", "[config]") {
  CHECK_THAT(parse_error(""), Contains("'cfg.yaml': the config is empty"));
  CHECK_THAT(parse_error("# only a comment\n"), Contains("'cfg.yaml': the config is empty"));
  CHECK_THAT(parse_error("- a\n- b\n"),
             Contains("'cfg.yaml': the top level must be a map") && Contains("got a list"));
  CHECK_THAT(parse_error("just text\n"),
             Contains("the top level must be a map") && Contains("got 'just text'"));
  CHECK_THAT(parse_error("threads: 1\n---\nthreads: 2\n"),
             Contains("expected one YAML document, found more"));
  CHECK_THAT(parse_error("model: 3\n"),
             Contains("'cfg.yaml': model: expected a map of keys, got '3'"));
  CHECK_THAT(parse_error("[a]: 3\n"), Contains("keys in the top level must be names"));
  // A section with nothing under it is fine.
  CHECK(parse_config("data:\n  test:\nmodel:\n", "cfg.yaml").data.max_length == 100);
}

TEST_CASE("config: values of the wrong type", "[config]") {
  CHECK_THAT(parse_error("model:\n  encoder:\n    layers: abc\n"),
             StartsWith("'cfg.yaml': model.encoder.layers: expected an integer, got 'abc'"));
  CHECK_THAT(parse_error("model:\n  encoder:\n    layers: 2.5\n"),
             Contains("model.encoder.layers: expected an integer, got '2.5'"));
  CHECK_THAT(parse_error("model: {encoder: {layers: 1e3}}\n"),
             Contains("expected an integer, got '1e3'"));
  CHECK_THAT(parse_error("model: {encoder: {layers: 0x10}}\n"),
             Contains("expected an integer, got '0x10'"));
  CHECK_THAT(parse_error("train: {max_steps: 99999999999}\n"),
             Contains("train.max_steps: expected an integer, got '99999999999'"));
  CHECK_THAT(parse_error("train: {seed: -1}\n"),
             Contains("train.seed: expected a non-negative integer, got '-1'"));
  CHECK_THAT(parse_error("model: {encoder: {bidirectional: maybe}}\n"),
             Contains("model.encoder.bidirectional: expected a boolean (true/false), got 'maybe'"));
  CHECK_THAT(parse_error("model: {encoder: {dropout: high}}\n"),
             Contains("model.encoder.dropout: expected a number, got 'high'"));
  CHECK_THAT(parse_error("model: {encoder: {dropout: inf}}\n"),
             Contains("model.encoder.dropout: expected a number, got 'inf'"));
  CHECK_THAT(parse_error("model: {encoder: {dropout: }}\n"),
             Contains("model.encoder.dropout: expected a number, got an empty value"));
  CHECK_THAT(parse_error("model:\n  encoder:\n    rnn: {a: 1}\n"),
             Contains("model.encoder.rnn: expected one of {lstm, gru}, got a map") && Contains("(line 3)"));
  CHECK_THAT(parse_error("model: {encoder: {layers: [1, 2]}}\n"),
             Contains("model.encoder.layers: expected an integer, got a list"));
  CHECK_THAT(parse_error("data: {train: {src: [a.de]}}\n"),
             Contains("data.train.src: expected a string, got a list"));
}

TEST_CASE("config: lenient where YAML is", "[config]") {
  // yaml-cpp's booleans, signed numbers, integers for floats, plain scalars as strings.
  const Config c = parse_config(
      "model: {encoder: {bidirectional: No, layers: +3, dropout: 0}, tie_embeddings: ON}\n"
      "train: {learning_rate: 2, save_dir: 2024}\n"
      "decode: {length_penalty: .5}\n",
      "cfg.yaml");
  CHECK_FALSE(c.model.encoder.bidirectional);
  CHECK(c.model.tie_embeddings);
  CHECK(c.model.encoder.layers == 3);
  CHECK(c.model.encoder.dropout == 0.0);
  CHECK(c.train.learning_rate == 2.0);
  CHECK(c.train.save_dir == "2024");
  CHECK(c.decode.length_penalty == 0.5);
}

namespace {

// Each case: settings applied to the defaults, and validate_config's message (exactly).
struct InvalidCase {
  std::vector<std::string> settings;
  const char* message;
};

const InvalidCase kInvalid[] = {
    // Ranges of one key.
    {{"model.encoder.hidden_size=-4"}, "model.encoder.hidden_size must be > 0, got -4"},
    {{"model.decoder.layers=0"}, "model.decoder.layers must be > 0, got 0"},
    {{"model.encoder.dropout=1.5"}, "model.encoder.dropout must be in [0, 1), got 1.5"},
    {{"model.encoder.dropout=1.0"}, "model.encoder.dropout must be in [0, 1), got 1.0"},
    {{"model.decoder.dropout=-0.1"}, "model.decoder.dropout must be in [0, 1), got -0.1"},
    {{"train.label_smoothing=.nan"}, "train.label_smoothing must be in [0, 1), got .nan"},
    {{"train.learning_rate=.inf"}, "train.learning_rate must be > 0, got .inf"},
    {{"decode.beam_size=0"}, "decode.beam_size must be >= 1, got 0"},
    {{"model.attention.window=0"}, "model.attention.window must be >= 1, got 0"},
    {{"model.attention.heads=0"}, "model.attention.heads must be >= 1, got 0"},
    {{"model.attention.max_area=0"}, "model.attention.max_area must be >= 1, got 0"},
    {{"model.attention.chunk_size=0"}, "model.attention.chunk_size must be >= 1, got 0"},
    {{"model.attention.max_positions=0"}, "model.attention.max_positions must be >= 1, got 0"},
    {{"model.attention.score_bias_init=21"}, "model.attention.score_bias_init must be in [-20, 20], got 21.0"},
    {{"train.warmup_steps=-1"}, "train.warmup_steps must be >= 0 (0 = none), got -1"},
    {{"train.weight_decay=1.5"}, "train.weight_decay must be in [0, 1), got 1.5"},
    {{"train.ema_decay=1"}, "train.ema_decay must be in [0, 1), got 1.0"},
    {{"model.encoder.word_dropout=1"}, "model.encoder.word_dropout must be in [0, 1), got 1.0"},
    {{"model.decoder.word_dropout=-0.1"}, "model.decoder.word_dropout must be in [0, 1), got -0.1"},
    {{"tokenizer.vocab_size=4"}, "tokenizer.vocab_size must be >= 8, got 4"},
    {{"tokenizer.character_coverage=0"}, "tokenizer.character_coverage must be in (0, 1], got 0.0"},
    {{"train.batch_size=0"}, "train.batch_size must be > 0, got 0"},
    {{"train.batch_tokens=-1"}, "train.batch_tokens must be >= 0 (0 = batch by sentences), got -1"},
    {{"train.max_steps=-1"}, "train.max_steps must be >= 0 (0 = no limit), got -1"},
    {{"train.max_minutes=-0.5"}, "train.max_minutes must be >= 0 (0 = no limit), got -0.5"},
    {{"train.learning_rate=0"}, "train.learning_rate must be > 0, got 0.0"},
    {{"train.lr_decay=1.5"}, "train.lr_decay must be in (0, 1], got 1.5"},
    {{"train.label_smoothing=1"}, "train.label_smoothing must be in [0, 1), got 1.0"},
    {{"train.valid_every=0"}, "train.valid_every must be > 0, got 0"},
    {{"train.keep_checkpoints=0"}, "train.keep_checkpoints must be >= 1, got 0"},
    {{"decode.length_penalty=-1"}, "decode.length_penalty must be >= 0, got -1.0"},
    {{"decode.max_length_ratio=0"},
     "decode.max_length_ratio must be > 0 with decode.search_rules: attnmt (0 only with fairseq), got 0.0"},
    {{"decode.max_length_ratio=-1"}, "decode.max_length_ratio must be >= 0, got -1.0"},
    {{"decode.unk_penalty=1"}, "decode.unk_penalty must be 0 with decode.search_rules: attnmt (a rule of fairseq), got 1.0"},
    {{"decode.batch_size=0"}, "decode.batch_size must be >= 1, got 0"},
    {{"decode.top_p=0"}, "decode.top_p must be in (0, 1], got 0.0"},
    {{"decode.epsilon=1"}, "decode.epsilon must be in [0, 1) (0 = off), got 1.0"},
    {{"distributed.timeout=0"}, "distributed.timeout must be > 0 (seconds), got 0.0"},
    {{"distributed.bucket_mb=-1"}, "distributed.bucket_mb must be > 0, got -1.0"},
    {{"threads=-1"}, "threads must be >= 0 (0 = number of cores), got -1"},
    // Not choices (the YAML reader refuses an unknown choice at once: "config: a choice ..." below).
    {{"device=gpu"}, "device must be cpu, cuda or cuda:N, got 'gpu'"},
    {{"device=\"cuda:\""}, "device must be cpu, cuda or cuda:N, got 'cuda:'"},
    {{"device=cuda:-1"}, "device must be cpu, cuda or cuda:N, got 'cuda:-1'"},
    {{"device=CPU"}, "device must be cpu, cuda or cuda:N, got 'CPU'"},
    {{"model.attention.type="}, "model.attention.type must be set (an attention name), got ''"},
    // Rules between keys.
    {{"decode.n_best=6"}, "decode.n_best must be in [1, decode.beam_size=5], got 6"},
    {{"train.lr_schedule=inverse_sqrt"},
     "train.warmup_steps must be > 0 with train.lr_schedule: inverse_sqrt (lr * sqrt(warmup / step)), got 0"},
    {{"train.lr_schedule=cosine"},
     "train.max_steps must be > 0 with train.lr_schedule: cosine (the cosine ends at it), got 0"},
    {{"train.lr_schedule=cosine", "train.max_steps=1000", "train.min_learning_rate=1"},
     "train.min_learning_rate must be <= train.learning_rate with train.lr_schedule: cosine, got 1.0"},
    {{"decode.max_length=3", "decode.min_length=4"}, "decode.min_length must be <= decode.max_length=3, got 4"},
    {{"decode.mbr=bleu", "decode.mbr_candidates=6"},
     "decode.mbr_candidates must be in [0, decode.beam_size=5] (0 = the whole beam), got 6"},
    {{"decode.ban_unk=true"},
     "decode.ban_unk must be false with decode.search_rules: attnmt (a rule of opennmt, opennmt3, joeynmt and marian), got "
     "true"},
    {{"decode.search_rules=opennmt"},
     "decode.max_length must be > 0 with decode.search_rules: opennmt (the toolkit's max_length, its only length "
     "limit), got 0"},
    {{"decode.search_rules=opennmt3"},
     "decode.max_length must be > 0 with decode.search_rules: opennmt3 (the toolkit's max_length), got 0"},
    {{"tokenizer.type=none", "tokenizer.user_defined_symbols=<x>"},
     "tokenizer.user_defined_symbols must be empty with tokenizer.type none (it is a SentencePiece option), got '<x>'"},
    {{"tokenizer.model_type=unigram", "data.src_bpe_dropout=0.1"},
     "data.src_bpe_dropout must be 0 unless tokenizer.type is sentencepiece and tokenizer.model_type bpe (it drops BPE "
     "merges), got 0.1"},
    {{"tokenizer.type=none", "data.tgt_bpe_dropout=0.2"},
     "data.tgt_bpe_dropout must be 0 unless tokenizer.type is sentencepiece and tokenizer.model_type bpe (it drops BPE "
     "merges), got 0.2"},
    {{"model.decoder.init=encoder", "model.encoder.layers=2", "model.decoder.layers=1"},
     "model.decoder.init must be not 'encoder' unless the encoder has the decoder's layers (1), cell (lstm) and output "
     "size (256), got encoder"},
    {{"model.decoder.init=encoder_relu_bridge", "model.decoder.rnn=gru"},
     "model.decoder.init must be not 'encoder_relu_bridge' unless the encoder has the decoder's layers (2), cell (gru) "
     "and output size (256), got encoder_relu_bridge"},
    {{"model.decoder.init=last", "model.decoder.hidden_size=7"},
     "model.decoder.init must be not 'last' unless the encoder's output size (512) is the decoder's hidden size or twice "
     "it, got last"},
    {{"model.decoder.transitions=1"},
     "model.decoder.transitions must be 0 unless model.decoder.style is conditional (they follow its second cell), got 1"},
    {{"model.encoder.bidirectional=false", "model.encoder.separate_directions=true"},
     "model.encoder.separate_directions must be false unless model.encoder.bidirectional is true, got true"},
    {{"decode.mbr=bleu", "decode.sampling=true", "decode.mbr_candidates=1"},
     "decode.mbr_candidates must be >= 2 (the samples compared) with decode.sampling, got 1"},
    {{"decode.mbr=bleu", "decode.mbr_candidates=2", "decode.n_best=3"},
     "decode.n_best must be <= the hypotheses MBR compares (2, decode.mbr_candidates), got 3"},
    {{"decode.search_rules=fairseq", "decode.ban_unk=true"},
     "decode.ban_unk must be false with decode.search_rules: fairseq (its --unkpen is decode.unk_penalty), got true"},
    {{"decode.search_rules=fairseq", "decode.max_length_ratio=0"},
     "decode.max_length must be > 0, or decode.max_length_ratio > 0, with decode.search_rules: fairseq (its --max-len-b "
     "and --max-len-a), got 0"},
    {{"decode.search_rules=joeynmt", "decode.sampling=true"},
     "decode.sampling must be false with decode.search_rules: joeynmt (attnmt's rules only), got true"},
    {{"decode.search_rules=joeynmt", "decode.shortlist=true"},
     "decode.shortlist must be false with decode.search_rules: joeynmt (attnmt's rules only), got true"},
    {{"decode.search_rules=joeynmt", "decode.coverage_penalty=0.2"},
     "decode.coverage_penalty must be 0 with decode.search_rules: joeynmt (attnmt's rules only), got 0.2"},
    {{"decode.search_rules=joeynmt", "decode.no_repeat_ngram_size=2"},
     "decode.no_repeat_ngram_size must be 0 with decode.search_rules: joeynmt (attnmt's rules only), got 2"},
    {{"decode.search_rules=joeynmt", "decode.mbr=bleu"},
     "decode.mbr must be none with decode.search_rules: joeynmt (attnmt's rules only), got 'bleu'"},
    {{"model.share_embeddings=true", "tokenizer.shared=false"},
     "model.share_embeddings must be false unless tokenizer.shared is true (one vocabulary for both sides), got true"},
    {{"model.encoder.self_attention.layers=1", "model.encoder.self_attention.heads=3"},
     "model.encoder.self_attention.heads must be a divisor of the encoder's output size 512 (hidden_size x "
     "directions), got 3"},
};

}  // namespace

TEST_CASE("config: validation names the key and the value", "[config]") {
  for (const InvalidCase& c : kInvalid) {
    std::string settings;
    for (const auto& s : c.settings) settings += (settings.empty() ? "" : " ") + s;
    DYNAMIC_SECTION(settings) {
      CHECK_THAT(parse_error("threads: 0\n", c.settings), Equals(std::string("'cfg.yaml': ") + c.message));
    }
  }
  SECTION("valid values at the edges") {
    for (const std::vector<std::string>& ok :
         {std::vector<std::string>{"model.encoder.dropout=0"}, {"model.attention.score_bias_init=-20"},
          {"train.lr_decay=1"}, {"decode.top_p=1"}, {"tokenizer.vocab_size=8"}, {"device=cuda:12"},
          {"device=cuda"}, {"decode.n_best=5"}, {"model.attention.type=my_new_attention"}}) {
      CHECK(parse_error("threads: 0\n", ok).empty());
    }
  }
}

TEST_CASE("config: a choice is read into its enum, and an unknown name is refused where it is written", "[config]") {
  // The names come from util/choices.h, through the key table's rule.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"model.encoder.rnn=rnm", "model.encoder.rnn must be one of {lstm, gru}, got 'rnm'"},
      {"model.decoder.style=bahdanu", "model.decoder.style must be one of {luong, bahdanau, conditional}, got 'bahdanu'"},
      {"model.decoder.init=brige",
       "model.decoder.init must be one of {bridge, encoder, encoder_relu_bridge, encoder_linear, tanh_bridge, last, "
       "zero, mean_bridge}, got 'brige'"},
      {"tokenizer.type=bpe", "tokenizer.type must be one of {sentencepiece, none}, got 'bpe'"},
      {"tokenizer.model_type=char", "tokenizer.model_type must be one of {bpe, unigram}, got 'char'"},
      {"train.optimizer=adagrad", "train.optimizer must be one of {adam, sgd}, got 'adagrad'"},
      {"train.lr_schedule=linear", "train.lr_schedule must be one of {plateau, constant, inverse_sqrt, cosine}, got 'linear'"},
      {"train.valid_metric=chrf", "train.valid_metric must be one of {bleu, ppl}, got 'chrf'"},
      {"decode.precision=fp16", "decode.precision must be one of {fp32, bf16, int8, auto}, got 'fp16'"},
      {"decode.mbr=ter", "decode.mbr must be one of {none, bleu, chrf}, got 'ter'"},
      {"decode.search_rules=sockeye", "decode.search_rules must be one of {attnmt, opennmt, opennmt3, joeynmt, fairseq, marian}, got 'sockeye'"},
      {"decode.wait_k_policy=pre", "decode.wait_k_policy must be one of {replay, prefix, auto}, got 'pre'"},
      {"distributed.backend=mpi", "distributed.backend must be one of {auto, gloo, nccl}, got 'mpi'"},
      {"distributed.compress=int8", "distributed.compress must be one of {none, fp16}, got 'int8'"},
      {"gemm=mkl", "gemm must be one of {auto, onednn, blas}, got 'mkl'"},
      {"model.encoder.rnn=", "model.encoder.rnn must be one of {lstm, gru}, got ''"},
      {"train.precision=int8",
       "train.precision: int8 is for decoding only (decode.precision: int8, or translate --precision int8); training "
       "takes fp32 or bf16"},
  };
  for (const auto& [setting, message] : refused) {
    DYNAMIC_SECTION(setting) {
      CHECK_THAT(parse_error("threads: 0\n", {setting}), Equals("override '" + setting + "': " + message));
    }
  }
  SECTION("in a file: its line") {
    CHECK_THAT(parse_error("threads: 0\nmodel:\n  decoder:\n    init: brige\n"),
               Equals("'cfg.yaml': model.decoder.init must be one of {bridge, encoder, encoder_relu_bridge, "
                      "encoder_linear, tanh_bridge, last, zero, mean_bridge}, got 'brige' (line 4)"));
    CHECK_THAT(parse_error("decode:\n  precision: [int8]\n"),
               Contains("decode.precision: expected one of {fp32, bf16, int8, auto}"));
  }
  SECTION("each name read, written back and listed as the key table's allowed values") {
    const auto c = parse_config("decode:\n  precision: auto\n  search_rules: fairseq\n  max_length: 9\n"
                                "model:\n  decoder:\n    init: encoder_linear\ndistributed:\n  backend: gloo\n",
                                "cfg.yaml");
    CHECK(c.decode.precision == DecodePrecision::automatic);
    CHECK(c.decode.search_rules == SearchRules::fairseq);
    CHECK(c.model.decoder.init == DecoderInit::encoder_linear);
    CHECK(c.distributed.backend == DistBackend::gloo);
    const std::string yaml = config_to_yaml(c);
    CHECK_THAT(yaml, Contains("precision: \"auto\""));
    CHECK_THAT(yaml, Contains("init: \"encoder_linear\""));
    CHECK(config_to_yaml(parse_config(yaml, "again.yaml")) == yaml);
    CHECK(find_key_info("model.decoder.init")->allowed ==
          "`bridge`, `encoder`, `encoder_relu_bridge`, `encoder_linear`, `tanh_bridge`, `last`, `zero`, `mean_bridge`");
    CHECK(find_key_info("decode.precision")->type == "string");
  }
  SECTION("a flag's value outside a config file") {
    CHECK(parse_choice<WaitKPolicy>("--wait-k-policy", "prefix") == WaitKPolicy::prefix);
    CHECK_THAT(error_of([] { parse_choice<WaitKPolicy>("--wait-k-policy", "pre"); }),
               Equals("--wait-k-policy must be one of {replay, prefix, auto}, got 'pre'"));
    CHECK(name_of(DecodePrecision::automatic) == "auto");
    CHECK_FALSE(choice_named<GemmBackend>("automatic"));
  }
}

TEST_CASE("config: parse_config validates, naming the source", "[config]") {
  CHECK_THAT(parse_error("model:\n  encoder:\n    dropout: 1.5\n"),
             Equals("'cfg.yaml': model.encoder.dropout must be in [0, 1), got 1.5"));
  CHECK_THAT(parse_error("threads: 1\n", {"decode.n_best=9"}),
             Contains("decode.n_best must be in [1, decode.beam_size=5], got 9"));
}

TEST_CASE("config: check_training_inputs", "[config]") {
  TempDir dir("inputs");
  Config c;
  c.train.save_dir = (dir.path / "run").string();
  c.data.train.src = dir.file("train.de", "hallo\n");
  c.data.train.tgt = dir.file("train.en", "hello\n");
  c.data.valid.src = dir.file("valid.de", "hallo\n");
  c.data.valid.tgt = dir.file("valid.en", "hello\n");
  CHECK_NOTHROW(attnmt::check_training_inputs(c, "cfg.yaml"));

  SECTION("missing required keys") {
    Config missing = c;
    missing.data.train.src.clear();
    CHECK_THAT(error_of([&] { attnmt::check_training_inputs(missing, "cfg.yaml"); }),
               Equals("'cfg.yaml': missing required key 'data.train.src'"));
    missing = c;
    missing.train.save_dir.clear();
    CHECK_THAT(error_of([&] { attnmt::check_training_inputs(missing, "cfg.yaml"); }),
               Equals("'cfg.yaml': missing required key 'train.save_dir'"));
    missing = c;
    missing.data.valid.tgt.clear();
    CHECK_THAT(error_of([&] { attnmt::check_training_inputs(missing, "cfg.yaml"); }),
               Equals("'cfg.yaml': missing required key 'data.valid.tgt'"));
    missing = c;
    missing.data.test.src = c.data.valid.src;
    CHECK_THAT(error_of([&] { attnmt::check_training_inputs(missing, "cfg.yaml"); }),
               Contains("missing required key 'data.test.tgt'"));
  }
  SECTION("missing files") {
    Config bad = c;
    const std::string nowhere = (dir.path / "nowhere.de").string();
    bad.data.train.src = nowhere;
    CHECK_THAT(error_of([&] { attnmt::check_training_inputs(bad, "cfg.yaml"); }),
               Equals("data.train.src: cannot read '" + nowhere + "': No such file or directory"));
    bad = c;
    bad.data.test.src = c.data.valid.src;
    bad.data.test.tgt = nowhere;
    CHECK_THAT(error_of([&] { attnmt::check_training_inputs(bad, "cfg.yaml"); }),
               Contains("data.test.tgt: cannot read"));
    bad = c;
    bad.data.valid.src = dir.path.string();
    CHECK_THAT(error_of([&] { attnmt::check_training_inputs(bad, "cfg.yaml"); }),
               Contains("data.valid.src: cannot read") && Contains("Is a directory"));
  }
  SECTION("validate_config does not need the data") { CHECK(validate_error(Config()).empty()); }
}

TEST_CASE("config: config_to_yaml round-trips exactly", "[config]") {
  Config c = parse_config(kFullYaml, "full.yaml");
  c.model.encoder.dropout = 0.1;
  c.model.decoder.dropout = 0.3 - 0.2;  // not 0.1: needs all 17 digits
  c.train.learning_rate = 3e-4;
  c.train.min_learning_rate = 1e-7 / 3;
  c.tokenizer.character_coverage = 1.0;
  c.decode.length_penalty = 0.0;
  c.train.save_dir = "runs/\"quoted\" #not a comment: yes";
  c.data.train.src = "true";
  c.data.train.tgt = "123";
  c.data.valid.src = "~";
  c.data.valid.tgt = "tab\tand\nnewline and unicode ü";
  c.data.test.src = "";
  c.data.test.tgt = "";
  c.model.attention.type = "null";

  const std::string yaml = attnmt::config_to_yaml(c);
  INFO(yaml);
  const Config back = parse_config(yaml, "roundtrip.yaml");
  CHECK(back.model.encoder.dropout == c.model.encoder.dropout);
  CHECK(back.model.decoder.dropout == c.model.decoder.dropout);
  CHECK(back.train.learning_rate == c.train.learning_rate);
  CHECK(back.train.min_learning_rate == c.train.min_learning_rate);
  CHECK(back.tokenizer.character_coverage == 1.0);
  CHECK(back.decode.length_penalty == 0.0);
  CHECK(back.train.save_dir == c.train.save_dir);
  CHECK(back.data.train.src == "true");
  CHECK(back.data.train.tgt == "123");
  CHECK(back.data.valid.src == "~");
  CHECK(back.data.valid.tgt == c.data.valid.tgt);
  CHECK(back.data.test.src.empty());
  CHECK(back.model.attention.type == "null");
  CHECK(back.train.seed == c.train.seed);
  CHECK(back.device == "cuda:1");
  // Doubles are written exactly, so equal text means equal values everywhere.
  CHECK(attnmt::config_to_yaml(back) == yaml);

  // Every key is written, in config.h's order, nested.
  for (const auto& key : attnmt::config_keys()) {
    const std::string leaf = key.substr(key.rfind('.') + 1);
    CHECK_THAT(yaml, Contains(leaf + ":"));
  }
  CHECK_THAT(yaml, Contains("model:\n  embedding_size: 512\n  encoder:\n    rnn: \"gru\""));
  CHECK_THAT(yaml, Contains("learning_rate: 0.0003\n"));
  CHECK_THAT(yaml, Contains("character_coverage: 1.0"));
  CHECK(yaml.find("data:") < yaml.find("tokenizer:"));
  CHECK(yaml.find("decode:") < yaml.find("device:"));

  // The defaults round-trip too.
  CHECK(attnmt::config_to_yaml(parse_config(attnmt::config_to_yaml(Config()), "d.yaml")) ==
        attnmt::config_to_yaml(Config()));
}

TEST_CASE("config: load_config_file", "[config]") {
  TempDir dir("load");
  SECTION("missing file") {
    const std::string path = (dir.path / "missing.yaml").string();
    CHECK_THAT(error_of([&] { attnmt::load_config_file(path); }),
               Equals("cannot read config '" + path + "': No such file or directory"));
  }
  SECTION("a directory") {
    CHECK_THAT(error_of([&] { attnmt::load_config_file(dir.path.string()); }),
               Contains("Is a directory"));
  }
  SECTION("a file, with overrides; errors name the path") {
    const std::string path = dir.file("cfg.yaml", "model:\n  encoder:\n    layers: 3\n");
    const Config c = attnmt::load_config_file(path, {"model.decoder.layers=1"});
    CHECK(c.model.encoder.layers == 3);
    CHECK(c.model.decoder.layers == 1);
    const std::string bad = dir.file("bad.yaml", "model:\n  encoder:\n    layer: 3\n");
    CHECK_THAT(error_of([&] { attnmt::load_config_file(bad); }),
               Contains("unknown key 'model.encoder.layer' in '" + bad + "'") &&
                   Contains("did you mean 'model.encoder.layers'?"));
  }
  SECTION("the committed example configs load") {
    const fs::path configs = fs::path(ATTNMT_SOURCE_DIR) / "configs";
    if (fs::is_directory(configs)) {
      for (const auto& entry : fs::recursive_directory_iterator(configs)) {
        if (entry.path().extension() != ".yaml") continue;
        INFO(entry.path());
        CHECK_NOTHROW(attnmt::load_config_file(entry.path().string()));
      }
    }
  }
}

TEST_CASE("config: doubles are written short and exact", "[config]") {
  const double values[] = {0.0,       1.0,    0.1,  0.3 - 0.2, 3e-4,   1e-5,  1e-3 / 7,
                           12345.678, 2.5e17, -0.5, 1e300,     5e-324, 0.9995};
  for (double v : values) {
    Config c;
    c.model.attention.coverage_loss = std::abs(v);
    const Config back = parse_config(attnmt::config_to_yaml(c), "x.yaml");
    CHECK(back.model.attention.coverage_loss == std::abs(v));
  }
  Config c;
  c.train.min_learning_rate = 1e-5;
  c.train.learning_rate = 3e-4;
  c.model.attention.coverage_loss = 2.5e17;
  const std::string yaml = attnmt::config_to_yaml(c);
  CHECK_THAT(yaml, Contains("min_learning_rate: 1e-05\n"));
  CHECK_THAT(yaml, Contains(" learning_rate: 0.0003\n"));
  CHECK_THAT(yaml, Contains("coverage_loss: 2.5e+17\n"));
}

TEST_CASE("config: inputs that made yaml-cpp loop forever are errors", "[config]") {
  // ",#++" and ",\xFA" made yaml-cpp 0.7's LoadAll loop forever (found by tools/fuzz/fuzz_config).
  CHECK_THAT(parse_error(",#++"), Contains("'cfg.yaml'"));
  CHECK_THAT(parse_error(","), Contains("'cfg.yaml'"));
}

TEST_CASE("config: invalid UTF-8 and NUL bytes are errors naming line and byte", "[config]") {
  CHECK_THAT(parse_error(",\xFA"), Equals("'cfg.yaml' line 1: invalid UTF-8 at byte 1"));
  CHECK_THAT(parse_error("threads: 1\ndevice: c\xC3pu\n"), Equals("'cfg.yaml' line 2: invalid UTF-8 at byte 9"));
  CHECK_THAT(parse_error(std::string("threads: 1\n\0", 12)), Equals("'cfg.yaml' line 2: NUL byte at byte 0"));
  std::string message;
  try {
    attnmt::parse_config("threads: 1\n", "cfg.yaml", {"device=\xFA"});
  } catch (const attnmt::InputError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Contains("invalid UTF-8"));
}

TEST_CASE("config: base: a config builds on another, relative to its own file", "[config]") {
  TempDir dir("base");
  fs::create_directories(dir.path / "sub");
  dir.file("grand.yaml", "model:\n  embedding_size: 64\n  encoder:\n    layers: 3\ntrain:\n  max_steps: 5\n");
  dir.file("parent.yaml", "base: grand.yaml\ntrain:\n  max_steps: 6\n  seed: 7\n");
  const std::string child = dir.file("sub/child.yaml", "base: ../parent.yaml\nmodel:\n  encoder:\n    layers: 1\n");
  SECTION("a chain: the nearer file wins, then --set") {
    const Config c = attnmt::load_config_file(child, {"train.seed=9"});
    CHECK(c.model.embedding_size == 64);  // from grand
    CHECK(c.model.encoder.layers == 1);   // child over grand
    CHECK(c.train.max_steps == 6);        // parent over grand
    CHECK(c.train.seed == 9);             // --set over all
    CHECK(c.model.decoder.layers == Config().model.decoder.layers);  // the defaults below everything
  }
  SECTION("a cycle is refused, naming the chain") {
    const std::string a = dir.file("a.yaml", "base: b.yaml\n");
    dir.file("b.yaml", "base: a.yaml\ntrain:\n  seed: 1\n");
    const auto message = error_of([&] { attnmt::load_config_file(a); });
    CHECK_THAT(message, Contains("a cycle of configs") && Contains("a.yaml -> ") && Contains("b.yaml -> "));
    const std::string self = dir.file("self.yaml", "base: self.yaml\n");
    CHECK_THAT(error_of([&] { attnmt::load_config_file(self); }), Contains("a cycle of configs"));
  }
  SECTION("a missing base, a base that is not a path, a bad key in the base") {
    const std::string missing = dir.file("missing.yaml", "base: nowhere.yaml\n");
    CHECK_THAT(error_of([&] { attnmt::load_config_file(missing); }),
               Contains("cannot read config '" + (dir.path / "nowhere.yaml").string() + "'"));
    const std::string list = dir.file("list.yaml", "train:\n  seed: 1\nbase: [a.yaml]\n");
    CHECK_THAT(error_of([&] { attnmt::load_config_file(list); }),
               Contains("base: expected the path of a config file, got a list") && Contains("line 3"));
    dir.file("badbase.yaml", "train:\n  sed: 1\n");
    const std::string user = dir.file("user.yaml", "base: badbase.yaml\n");
    CHECK_THAT(error_of([&] { attnmt::load_config_file(user); }),
               Contains("unknown key 'train.sed' in '" + (dir.path / "badbase.yaml").string() + "'"));
  }
}

TEST_CASE("config: every shipped config resolves to what its full copy resolved to", "[config]") {
  // tests/data/resolved_configs/<dir>/<name>.yaml: config_to_yaml of configs/<dir>/<name>.yaml
  // when every config was a full copy; the configs now build on default.yaml (or rnn256.yaml) with
  // base:. The recipe's best*.yaml are here too: they build on each other, and docs/recipe.md's
  // runs name them, so a change to one must not move another unnoticed. A deliberate change to a
  // config: regenerate its file with `attnmt config CONFIG > FILE`.
  const fs::path resolved = fs::path(ATTNMT_TEST_DATA_DIR) / "resolved_configs";
  int count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(resolved)) {
    if (entry.path().extension() != ".yaml") continue;
    const fs::path config =
        fs::path(ATTNMT_SOURCE_DIR) / "configs" / entry.path().parent_path().filename() / entry.path().filename();
    INFO(config.string());
    REQUIRE(fs::exists(config));
    std::ifstream in(entry.path());
    const std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(attnmt::config_to_yaml(attnmt::load_config_file(config.string())) == expected);
    ++count;
  }
  CHECK(count == 30);
}

TEST_CASE("config: the minimal YAML has only what differs from the defaults, and gives the same config",
          "[config]") {
  const Config c = parse_config("model:\n  encoder:\n    layers: 3\ndecode:\n  beam_size: 7\n", "cfg.yaml");
  const std::string minimal = attnmt::config_to_yaml(c, /*only_changed=*/true);
  CHECK_THAT(minimal, Contains("layers: 3") && Contains("beam_size: 7"));
  CHECK_THAT(minimal, !Contains("hidden_size") && !Contains("max_steps"));
  CHECK(attnmt::config_to_yaml(parse_config(minimal, "minimal.yaml")) == attnmt::config_to_yaml(c));
  CHECK_THAT(attnmt::config_to_yaml(Config(), true), !Contains("model"));
}

TEST_CASE("config: a settings file gives its keys as settings, in file order", "[config]") {
  TempDir dir("settings");
  const std::string ok = dir.file("decode.yaml", "decode:\n  beam_size: 3\n  length_penalty: 1.0\nthreads: 1\n");
  CHECK(attnmt::settings_file(ok) ==
        std::vector<std::string>{"decode.beam_size=3", "decode.length_penalty=1.0", "threads=1"});
  const std::string bad = dir.file("bad.yaml", "decode:\n  beam: 3\n");
  CHECK_THAT(error_of([&] { attnmt::settings_file(bad); }),
             Contains("unknown key 'decode.beam' in '" + bad + "' at line 2"));
  const std::string based = dir.file("based.yaml", "base: decode.yaml\n");
  CHECK_THAT(error_of([&] { attnmt::settings_file(based); }), Contains("base: not in a settings file"));
  const std::string nested = dir.file("nested.yaml", "decode:\n  beam_size: [1, 2]\n");
  CHECK_THAT(error_of([&] { attnmt::settings_file(nested); }), Contains("decode.beam_size: expected a value, got a list"));
}

TEST_CASE("config: the commented default config shows every key", "[config]") {
  // configs/multi30k_de_en/default.yaml: each key set, or commented out ("# key: value") where it
  // keeps its default. Paths are followed by indentation; flow maps ({src: ..., tgt: ...}) count.
  std::ifstream in(fs::path(ATTNMT_SOURCE_DIR) / "configs" / "multi30k_de_en" / "default.yaml");
  std::set<std::string> shown;
  std::vector<std::pair<size_t, std::string>> open;  // (indent, section) of the maps we are in
  for (std::string line; std::getline(in, line);) {
    const size_t hash = line.find_first_not_of(' ');
    if (hash != std::string::npos && line[hash] == '#') line.erase(hash, line[hash + 1] == ' ' ? 2 : 1);
    const size_t indent = line.find_first_not_of(' ');
    const size_t colon = line.find(':');
    if (indent == std::string::npos || colon == std::string::npos || line[indent] == '#') continue;
    const std::string name = line.substr(indent, colon - indent);
    if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) continue;  // prose
    while (!open.empty() && open.back().first >= indent) open.pop_back();
    std::string path;
    for (const auto& o : open) path += o.second + ".";
    std::string value = line.substr(colon + 1);
    value = value.substr(0, value.find(" #"));
    if (value.find_first_not_of(' ') == std::string::npos) {
      open.emplace_back(indent, name);
    } else if (const size_t brace = value.find('{'); brace != std::string::npos) {
      // a flow map: its keys, each before a ':'
      std::stringstream items(value.substr(brace + 1, value.find('}') - brace - 1));
      for (std::string item; std::getline(items, item, ',');) {
        const size_t begin = item.find_first_not_of(' ');
        shown.insert(path + name + "." + item.substr(begin, item.find(':') - begin));
      }
    } else {
      shown.insert(path + name);
    }
  }
  for (const auto& key : attnmt::config_keys()) {
    INFO(key);
    CHECK(shown.count(key) == 1);
  }
}

TEST_CASE("config: data.train as a list of weighted corpora", "[config]") {
  const std::string yaml =
      "data:\n  train:\n    - {src: a.de, tgt: a.en, weight: 3}\n    - src: b.de\n      tgt: b.en\n  batch_window: 5000\n";
  const Config c = parse_config(yaml, "cfg.yaml");
  CHECK(c.data.train.src == "a.de");
  CHECK(c.data.train.weight == 3.0);
  REQUIRE(c.data.more_train.size() == 1);
  CHECK(c.data.more_train[0].tgt == "b.en");
  CHECK(c.data.more_train[0].weight == 1.0);
  CHECK(attnmt::training_corpora(c.data).size() == 2);
  CHECK(c.data.batch_window == 5000);
  // Written back as a list, read back the same.
  const std::string out = attnmt::config_to_yaml(c);
  INFO(out);
  CHECK_THAT(out, Contains("train:\n    - {src: \"a.de\", tgt: \"a.en\", weight: 3.0}"));
  const Config back = parse_config(out, "back.yaml");
  CHECK(attnmt::config_to_yaml(back) == out);
  CHECK(back.data.more_train.size() == 1);
  CHECK(attnmt::config_to_yaml(back, true) == attnmt::config_to_yaml(parse_config(attnmt::config_to_yaml(back, true), "m.yaml"), true));
  // One corpus keeps the map form; an override may give the list.
  CHECK_THAT(attnmt::config_to_yaml(Config()), Contains("train:\n    src: \"\"\n    tgt: \"\""));
  const Config o = parse_config("threads: 1\n", "cfg.yaml", {"data.train=[{src: x.de, tgt: x.en}, {src: y.de, tgt: y.en, weight: 0.5}]"});
  CHECK(o.data.more_train.at(0).weight == 0.5);
  CHECK(o.data.train.src == "x.de");

  CHECK_THAT(parse_error("data:\n  train: []\n"), Contains("data.train: the list of corpora is empty"));
  CHECK_THAT(parse_error("data:\n  train:\n    - {src: a.de}\n"), Equals("'cfg.yaml': data.train item 1: missing tgt (line 3)"));
  CHECK_THAT(parse_error("data:\n  train:\n    - {src: a.de, tgt: a.en}\n    - {src: b, tgt: c, weight: 0}\n"),
             Contains("data.train item 2: weight must be a number > 0, got '0' (line 4)"));
  CHECK_THAT(parse_error("data:\n  train:\n    - {src: a.de, tgt: a.en, wieght: 2}\n"),
             Contains("data.train item 1: unknown key 'wieght' (a corpus has src, tgt and weight)"));
  CHECK_THAT(parse_error("data:\n  train:\n    - a.de\n"), Contains("data.train item 1: expected a map {src, tgt, weight}, got 'a.de'"));
  CHECK_THAT(parse_error("data:\n  train:\n    src: a\n    weight: 2\n"), Contains("unknown key 'data.train.weight'"));
  CHECK_THAT(parse_error("data:\n  batch_window: -1\n"), Contains("data.batch_window must be >= 0"));
  CHECK_THAT(parse_error("tokenizer:\n  type: none\n  user_defined_symbols: \"<x>\"\n"),
             Contains("tokenizer.user_defined_symbols must be empty with tokenizer.type none"));
  CHECK_THAT(parse_error("tokenizer:\n  user_defined_symbols: \"<x>, <y>\"\n"),
             Contains("tokenizer.user_defined_symbols must be comma-separated pieces without spaces"));
}
