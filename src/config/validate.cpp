// validate_config and check_training_inputs: each key against its rule in the key table
// (config/key_table.h), then the rules between keys, which the table's `also` says in words.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "config/decode_rules.h"
#include "config/key_table.h"
#include "config/loader.h"
#include "util/error.h"

namespace attnmt {

using namespace config_table;

namespace {

// "<key> must be <what>, got <value>"
[[noreturn]] void invalid(const std::string& key, const std::string& what, const std::string& got) {
  throw InputError(key + " must be " + what + ", got " + got);
}

void check_int(bool ok, const char* key, const char* what, long long value) {
  if (!ok) invalid(key, what, std::to_string(value));
}

// The field's value against its rule: "<key> must be <rule>, got <value>".
void check_rule(const Config& config, const Field& field) {
  const Rule& rule = field.rule;
  if (rule.kind == Rule::kAny) return;
  const ConstFieldRef ref = field.cref(config);
  if (auto* s = std::get_if<const std::string*>(&ref)) {
    const auto choices = choices_of(rule);
    if (std::find(choices.begin(), choices.end(), **s) == choices.end()) {
      invalid(field.key, rule_text(rule, false), in_quotes(**s));
    }
  } else if (auto* i = std::get_if<const int*>(&ref)) {
    if (!within(rule, **i)) invalid(field.key, rule_text(rule, false), std::to_string(**i));
  } else if (auto* d = std::get_if<const double*>(&ref)) {
    if (!within(rule, **d)) invalid(field.key, rule_text(rule, false), format_double(**d));
  } else {
    throw std::logic_error(std::string("config key table: ") + field.key + " has a rule its type cannot have");
  }
}

bool is_device(const std::string& device) {
  if (device == "cpu" || device == "cuda") return true;
  if (device.rfind("cuda:", 0) != 0 || device.size() == 5) return false;
  return device.find_first_not_of("0123456789", 5) == std::string::npos;
}

void check_readable(const std::string& key, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(key + ": cannot read " + in_quotes(path) + ": " + std::strerror(EISDIR));
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    throw InputError(key + ": cannot read " + in_quotes(path) + ": " + std::strerror(errno));
  }
  std::fclose(file);
}

}  // namespace

void validate_config(const Config& config) {
  // Before the table's rule, which would only list fp32 and bf16.
  if (config.train.precision == "int8") {
    throw InputError("train.precision: int8 is for decoding only (decode.precision: int8, or translate --precision "
                     "int8); training takes fp32 or bf16");
  }
  for (const Field& f : fields()) check_rule(config, f);

  // The rules between keys (the table's `also` says them in words).
  const Config& c = config;
  const TokenizerConfig& tok = c.tokenizer;
  if (!tok.user_defined_symbols.empty() && tok.type != "sentencepiece") {
    invalid("tokenizer.user_defined_symbols", "empty with tokenizer.type none (it is a SentencePiece option)",
            in_quotes(tok.user_defined_symbols));
  }
  if (tok.user_defined_symbols.find_first_of(" \t") != std::string::npos) {
    invalid("tokenizer.user_defined_symbols", "comma-separated pieces without spaces", in_quotes(tok.user_defined_symbols));
  }
  for (const auto& [key, p] : {std::pair<const char*, double>{"data.src_bpe_dropout", c.data.src_bpe_dropout},
                                {"data.tgt_bpe_dropout", c.data.tgt_bpe_dropout}}) {
    if (p > 0 && (tok.type != "sentencepiece" || tok.model_type != "bpe")) {
      invalid(key, "0 unless tokenizer.type is sentencepiece and tokenizer.model_type bpe (it drops BPE merges)",
              format_double(p));
    }
  }

  const ModelConfig& m = c.model;
  if (m.share_embeddings && !tok.shared) {
    // Two tokenizers give the same id to different pieces: one matrix would mix them.
    invalid("model.share_embeddings", "false unless tokenizer.shared is true (one vocabulary for both sides)", "true");
  }
  const SelfAttentionConfig& sa = m.encoder.self_attention;
  const int encoder_out = m.encoder.hidden_size * (m.encoder.bidirectional ? 2 : 1);
  if (sa.layers > 0 && encoder_out % sa.heads != 0) {
    invalid("model.encoder.self_attention.heads",
            "a divisor of the encoder's output size " + std::to_string(encoder_out) + " (hidden_size x directions)",
            std::to_string(sa.heads));
  }
  if (m.decoder.init == "encoder" || m.decoder.init == "encoder_relu_bridge" || m.decoder.init == "encoder_linear") {
    // Layer l starts from encoder layer l's final state: the stacks must match in depth and cell,
    // and in width unless a projection (encoder_linear) maps one onto the other.
    const bool width = m.decoder.init == "encoder_linear" || encoder_out == m.decoder.hidden_size;
    if (m.encoder.layers != m.decoder.layers || !width || m.encoder.rnn != m.decoder.rnn) {
      invalid("model.decoder.init",
              "not '" + m.decoder.init + "' unless the encoder has the decoder's layers (" +
                  std::to_string(m.decoder.layers) + "), cell (" + m.decoder.rnn + ") and output size (" +
                  std::to_string(m.decoder.hidden_size) + ")",
              m.decoder.init);
    }
  }
  if (m.decoder.init == "last" && encoder_out != m.decoder.hidden_size && encoder_out != 2 * m.decoder.hidden_size) {
    invalid("model.decoder.init",
            "not 'last' unless the encoder's output size (" + std::to_string(encoder_out) +
                ") is the decoder's hidden size or twice it",
            "last");
  }
  // The name itself, the coverage and the dropout rules are the attention registry's (it knows the variants).
  if (m.attention.type.empty()) invalid("model.attention.type", "set (an attention name)", "''");

  const TrainConfig& t = c.train;
  if (t.lr_schedule == "inverse_sqrt" && t.warmup_steps == 0) {
    invalid("train.warmup_steps", "> 0 with train.lr_schedule: inverse_sqrt (lr * sqrt(warmup / step))", "0");
  }
  if (t.lr_schedule == "cosine" && t.max_steps == 0) {
    invalid("train.max_steps", "> 0 with train.lr_schedule: cosine (the cosine ends at it)", "0");
  }
  if (t.lr_schedule == "cosine" && t.min_learning_rate > t.learning_rate) {
    invalid("train.min_learning_rate", "<= train.learning_rate with train.lr_schedule: cosine",
            format_double(t.min_learning_rate));
  }

  const DecodeConfig& d = c.decode;
  if (d.sampling) {  // n_best samples, not beams
    check_int(d.n_best >= 1, "decode.n_best", ">= 1", d.n_best);
  } else {
    check_int(d.n_best >= 1 && d.n_best <= d.beam_size, "decode.n_best",
              ("in [1, decode.beam_size=" + std::to_string(d.beam_size) + "]").c_str(), d.n_best);
  }
  if (d.max_length > 0) {
    check_int(d.min_length <= d.max_length, "decode.min_length",
              ("<= decode.max_length=" + std::to_string(d.max_length)).c_str(), d.min_length);
  }
  if (d.mbr != "none") {
    if (d.sampling) {
      check_int(d.mbr_candidates >= 2, "decode.mbr_candidates", ">= 2 (the samples compared) with decode.sampling",
                d.mbr_candidates);
    } else {
      check_int(d.mbr_candidates >= 0 && d.mbr_candidates <= d.beam_size, "decode.mbr_candidates",
                ("in [0, decode.beam_size=" + std::to_string(d.beam_size) + "] (0 = the whole beam)").c_str(),
                d.mbr_candidates);
    }
    const int candidates = mbr_candidate_count(d.sampling, d.mbr_candidates, d.beam_size);
    check_int(d.n_best <= candidates, "decode.n_best",
              ("<= the hypotheses MBR compares (" + std::to_string(candidates) + ", decode.mbr_candidates)").c_str(),
              d.n_best);
  }
  if (d.search_rules != "fairseq") {
    // fairseq's --max-len-a is 0 by default; every other rule's ratio limit needs a positive ratio.
    if (!(d.max_length_ratio > 0)) {
      invalid("decode.max_length_ratio", ("> 0 with decode.search_rules: " + d.search_rules + " (0 only with fairseq)").c_str(),
              format_double(d.max_length_ratio));
    }
    if (d.unk_penalty != 0) {
      invalid("decode.unk_penalty", ("0 with decode.search_rules: " + d.search_rules + " (a rule of fairseq)").c_str(),
              format_double(d.unk_penalty));
    }
  }
  if (d.search_rules == "fairseq") {
    if (d.ban_unk) invalid("decode.ban_unk", "false with decode.search_rules: fairseq (its --unkpen is decode.unk_penalty)", "true");
    check_int(d.max_length > 0 || d.max_length_ratio > 0, "decode.max_length",
              "> 0, or decode.max_length_ratio > 0, with decode.search_rules: fairseq (its --max-len-b and --max-len-a)",
              d.max_length);
  }
  if (d.search_rules == "attnmt") {
    if (d.ban_unk) {
      invalid("decode.ban_unk", "false with decode.search_rules: attnmt (a rule of opennmt, opennmt3 and joeynmt)", "true");
    }
  } else {  // what the toolkits' rules (decoding/toolkit_search.h) do not do
    const std::string with = " with decode.search_rules: " + d.search_rules;
    // joeynmt: 0 = Joey NMT's own default (decoding/toolkit_search.h)
    if (d.search_rules == "opennmt" || d.search_rules == "opennmt3") {
      const char* why = d.search_rules == "opennmt" ? " (the toolkit's max_length, its only length limit)"
                                                    : " (the toolkit's max_length)";
      check_int(d.max_length > 0, "decode.max_length", ("> 0" + with + why).c_str(), d.max_length);
    }
    auto refuse = [&](bool on, const char* key, const std::string& off, const std::string& got) {
      if (on) invalid(key, off + with + " (attnmt's rules only)", got);
    };
    refuse(d.sampling, "decode.sampling", "false", "true");
    refuse(d.shortlist, "decode.shortlist", "false", "true");
    refuse(d.coverage_penalty != 0, "decode.coverage_penalty", "0", format_double(d.coverage_penalty));
    refuse(d.no_repeat_ngram_size != 0, "decode.no_repeat_ngram_size", "0", std::to_string(d.no_repeat_ngram_size));
    refuse(d.mbr != "none", "decode.mbr", "none", in_quotes(d.mbr));
  }

  if (!is_device(c.device)) invalid("device", "cpu, cuda or cuda:N", in_quotes(c.device));
}

void check_training_inputs(const Config& config, const std::string& source_name) {
  const std::pair<const char*, const std::string*> required[] = {
      {"train.save_dir", &config.train.save_dir}, {"data.train.src", &config.data.train.src},
      {"data.train.tgt", &config.data.train.tgt}, {"data.valid.src", &config.data.valid.src},
      {"data.valid.tgt", &config.data.valid.tgt},
  };
  for (const auto& [key, value] : required) {
    if (value->empty()) {
      throw InputError(in_quotes(source_name) + ": missing required key " + in_quotes(key));
    }
  }
  // The test set is optional, but half of it is a mistake.
  const CorpusConfig& test = config.data.test;
  if (test.src.empty() != test.tgt.empty()) {
    throw InputError(in_quotes(source_name) + ": missing required key " +
                     in_quotes(test.src.empty() ? "data.test.src" : "data.test.tgt") +
                     " (data.test needs both sides)");
  }
  const std::pair<const char*, const std::string*> files[] = {
      {"data.train.src", &config.data.train.src}, {"data.train.tgt", &config.data.train.tgt},
      {"data.valid.src", &config.data.valid.src}, {"data.valid.tgt", &config.data.valid.tgt},
      {"data.test.src", &config.data.test.src},   {"data.test.tgt", &config.data.test.tgt},
  };
  for (const auto& [key, path] : files) {
    if (!path->empty()) check_readable(key, *path);
  }
  for (size_t i = 0; i < config.data.more_train.size(); ++i) {
    const std::string item = "data.train item " + std::to_string(i + 2);
    check_readable(item + " src", config.data.more_train[i].src);
    check_readable(item + " tgt", config.data.more_train[i].tgt);
  }
}

}  // namespace attnmt
