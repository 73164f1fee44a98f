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

// The field's value against its rule: "<key> must be <rule>, got <value>".
void check_rule(const Config& config, const Field& field) {
  const Rule& rule = field.rule;
  if (rule.kind == Rule::kAny) return;
  const ConstFieldRef ref = field.cref(config);
  if (auto* c = std::get_if<ConstChoiceRef>(&ref)) {
    // The YAML reader took the name from the enum's names; the rule must list the same ones.
    if (rule.kind != Rule::kChoice || rule.choices != c->access->names) {
      throw std::logic_error(std::string("config key table: ") + field.key + "'s rule is not its enum's names");
    }
  } else if (auto* s = std::get_if<const std::string*>(&ref)) {
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

// A rule between keys: `key`'s value is refused when `broken`, with "<key> must be <must>, got <got>".
// In the order they are checked (the first broken one is reported); the key table's `also` says
// each in words.
struct BetweenKeys {
  const char* key;
  bool (*broken)(const Config& c);
  std::string (*must)(const Config& c);
  std::string (*got)(const Config& c);
};

int encoder_output_size(const ModelConfig& m) { return m.encoder.hidden_size * (m.encoder.bidirectional ? 2 : 1); }
// Layer l of the decoder starts from encoder layer l's final state (model/decoder.h).
bool init_from_encoder_layers(DecoderInit init) {
  return init == DecoderInit::encoder || init == DecoderInit::encoder_relu_bridge || init == DecoderInit::encoder_linear;
}
bool sentencepiece_bpe(const TokenizerConfig& t) {
  return t.type == TokenizerType::sentencepiece && t.model_type == SubwordModel::bpe;
}
bool toolkit_rules(const DecodeConfig& d) { return d.search_rules != SearchRules::attnmt; }
bool opennmt_rules(const DecodeConfig& d) {
  return d.search_rules == SearchRules::opennmt || d.search_rules == SearchRules::opennmt3;
}
std::string with_rules(const DecodeConfig& d) { return " with decode.search_rules: " + name_string(d.search_rules); }
std::string text(const std::string& s) { return in_quotes(s); }
std::string number(double v) { return format_double(v); }
std::string integer(long long v) { return std::to_string(v); }
std::string yes(const Config&) { return "true"; }

const BetweenKeys kBetweenKeys[] = {
    {"tokenizer.user_defined_symbols",
     [](const Config& c) { return !c.tokenizer.user_defined_symbols.empty() && c.tokenizer.type != TokenizerType::sentencepiece; },
     [](const Config&) -> std::string { return "empty with tokenizer.type none (it is a SentencePiece option)"; },
     [](const Config& c) { return text(c.tokenizer.user_defined_symbols); }},
    {"tokenizer.user_defined_symbols",
     [](const Config& c) { return c.tokenizer.user_defined_symbols.find_first_of(" \t") != std::string::npos; },
     [](const Config&) -> std::string { return "comma-separated pieces without spaces"; },
     [](const Config& c) { return text(c.tokenizer.user_defined_symbols); }},
    {"data.src_bpe_dropout",
     [](const Config& c) { return c.data.src_bpe_dropout > 0 && !sentencepiece_bpe(c.tokenizer); },
     [](const Config&) -> std::string {
       return "0 unless tokenizer.type is sentencepiece and tokenizer.model_type bpe (it drops BPE merges)";
     },
     [](const Config& c) { return number(c.data.src_bpe_dropout); }},
    {"data.tgt_bpe_dropout",
     [](const Config& c) { return c.data.tgt_bpe_dropout > 0 && !sentencepiece_bpe(c.tokenizer); },
     [](const Config&) -> std::string {
       return "0 unless tokenizer.type is sentencepiece and tokenizer.model_type bpe (it drops BPE merges)";
     },
     [](const Config& c) { return number(c.data.tgt_bpe_dropout); }},
    // Two tokenizers give the same id to different pieces: one matrix would mix them.
    {"model.share_embeddings", [](const Config& c) { return c.model.share_embeddings && !c.tokenizer.shared; },
     [](const Config&) -> std::string { return "false unless tokenizer.shared is true (one vocabulary for both sides)"; },
     yes},
    {"model.encoder.self_attention.heads",
     [](const Config& c) {
       const auto& sa = c.model.encoder.self_attention;
       return sa.layers > 0 && encoder_output_size(c.model) % sa.heads != 0;
     },
     [](const Config& c) {
       return "a divisor of the encoder's output size " + integer(encoder_output_size(c.model)) +
              " (hidden_size x directions)";
     },
     [](const Config& c) { return integer(c.model.encoder.self_attention.heads); }},
    // The stacks must match in depth and cell, and in width unless a projection (encoder_linear)
    // maps one onto the other.
    {"model.decoder.init",
     [](const Config& c) {
       const ModelConfig& m = c.model;
       if (!init_from_encoder_layers(m.decoder.init)) return false;
       const bool width = m.decoder.init == DecoderInit::encoder_linear || encoder_output_size(m) == m.decoder.hidden_size;
       return m.encoder.layers != m.decoder.layers || !width || m.encoder.rnn != m.decoder.rnn;
     },
     [](const Config& c) {
       const DecoderConfig& d = c.model.decoder;
       return "not '" + name_string(d.init) + "' unless the encoder has the decoder's layers (" + integer(d.layers) +
              "), cell (" + name_string(d.rnn) + ") and output size (" + integer(d.hidden_size) + ")";
     },
     [](const Config& c) { return name_string(c.model.decoder.init); }},
    {"model.decoder.init",
     [](const Config& c) {
       const int out = encoder_output_size(c.model), h = c.model.decoder.hidden_size;
       return c.model.decoder.init == DecoderInit::last && out != h && out != 2 * h;
     },
     [](const Config& c) {
       return "not 'last' unless the encoder's output size (" + integer(encoder_output_size(c.model)) +
              ") is the decoder's hidden size or twice it";
     },
     [](const Config&) -> std::string { return "last"; }},
    {"model.encoder.separate_directions",
     [](const Config& c) { return c.model.encoder.separate_directions && !c.model.encoder.bidirectional; },
     [](const Config&) -> std::string { return "false unless model.encoder.bidirectional is true"; }, yes},
    {"model.decoder.transitions",
     [](const Config& c) { return c.model.decoder.transitions > 0 && c.model.decoder.style != DecoderStyle::conditional; },
     [](const Config&) -> std::string { return "0 unless model.decoder.style is conditional (they follow its second cell)"; },
     [](const Config& c) { return integer(c.model.decoder.transitions); }},
    // The name itself, the coverage and the dropout rules are the attention registry's (it knows the variants).
    {"model.attention.type", [](const Config& c) { return c.model.attention.type.empty(); },
     [](const Config&) -> std::string { return "set (an attention name)"; },
     [](const Config&) -> std::string { return "''"; }},

    {"train.warmup_steps",
     [](const Config& c) { return c.train.lr_schedule == LrSchedule::inverse_sqrt && c.train.warmup_steps == 0; },
     [](const Config&) -> std::string { return "> 0 with train.lr_schedule: inverse_sqrt (lr * sqrt(warmup / step))"; },
     [](const Config&) -> std::string { return "0"; }},
    {"train.max_steps", [](const Config& c) { return c.train.lr_schedule == LrSchedule::cosine && c.train.max_steps == 0; },
     [](const Config&) -> std::string { return "> 0 with train.lr_schedule: cosine (the cosine ends at it)"; },
     [](const Config&) -> std::string { return "0"; }},
    {"train.min_learning_rate",
     [](const Config& c) {
       return c.train.lr_schedule == LrSchedule::cosine && c.train.min_learning_rate > c.train.learning_rate;
     },
     [](const Config&) -> std::string { return "<= train.learning_rate with train.lr_schedule: cosine"; },
     [](const Config& c) { return number(c.train.min_learning_rate); }},

    // Sampling's n_best counts samples, not beams.
    {"decode.n_best", [](const Config& c) { return c.decode.sampling && c.decode.n_best < 1; },
     [](const Config&) -> std::string { return ">= 1"; }, [](const Config& c) { return integer(c.decode.n_best); }},
    {"decode.n_best",
     [](const Config& c) { return !c.decode.sampling && (c.decode.n_best < 1 || c.decode.n_best > c.decode.beam_size); },
     [](const Config& c) { return "in [1, decode.beam_size=" + integer(c.decode.beam_size) + "]"; },
     [](const Config& c) { return integer(c.decode.n_best); }},
    {"decode.min_length",
     [](const Config& c) { return c.decode.max_length > 0 && c.decode.min_length > c.decode.max_length; },
     [](const Config& c) { return "<= decode.max_length=" + integer(c.decode.max_length); },
     [](const Config& c) { return integer(c.decode.min_length); }},
    {"decode.mbr_candidates",
     [](const Config& c) { return c.decode.mbr != MbrMetric::none && c.decode.sampling && c.decode.mbr_candidates < 2; },
     [](const Config&) -> std::string { return ">= 2 (the samples compared) with decode.sampling"; },
     [](const Config& c) { return integer(c.decode.mbr_candidates); }},
    {"decode.mbr_candidates",
     [](const Config& c) {
       const DecodeConfig& d = c.decode;
       return d.mbr != MbrMetric::none && !d.sampling && (d.mbr_candidates < 0 || d.mbr_candidates > d.beam_size);
     },
     [](const Config& c) {
       return "in [0, decode.beam_size=" + integer(c.decode.beam_size) + "] (0 = the whole beam)";
     },
     [](const Config& c) { return integer(c.decode.mbr_candidates); }},
    {"decode.n_best",
     [](const Config& c) {
       const DecodeConfig& d = c.decode;
       return d.mbr != MbrMetric::none && d.n_best > mbr_candidate_count(d.sampling, d.mbr_candidates, d.beam_size);
     },
     [](const Config& c) {
       const DecodeConfig& d = c.decode;
       return "<= the hypotheses MBR compares (" +
              integer(mbr_candidate_count(d.sampling, d.mbr_candidates, d.beam_size)) + ", decode.mbr_candidates)";
     },
     [](const Config& c) { return integer(c.decode.n_best); }},
    // fairseq's --max-len-a is 0 by default; every other rule's ratio limit needs a positive ratio.
    {"decode.max_length_ratio",
     [](const Config& c) { return c.decode.search_rules != SearchRules::fairseq && !(c.decode.max_length_ratio > 0); },
     [](const Config& c) { return "> 0" + with_rules(c.decode) + " (0 only with fairseq)"; },
     [](const Config& c) { return number(c.decode.max_length_ratio); }},
    {"decode.unk_penalty",
     [](const Config& c) { return c.decode.search_rules != SearchRules::fairseq && c.decode.unk_penalty != 0; },
     [](const Config& c) { return "0" + with_rules(c.decode) + " (a rule of fairseq)"; },
     [](const Config& c) { return number(c.decode.unk_penalty); }},
    {"decode.min_length",
     [](const Config& c) { return c.decode.search_rules == SearchRules::marian && c.decode.min_length > 0; },
     [](const Config&) -> std::string { return "0 with decode.search_rules: marian (marian-decoder has no minimum length)"; },
     [](const Config& c) { return integer(c.decode.min_length); }},
    {"decode.max_length",
     [](const Config& c) { return c.decode.search_rules == SearchRules::marian && c.decode.max_length > 0; },
     [](const Config&) -> std::string {
       return "0 with decode.search_rules: marian (its limit is decode.max_length_ratio, marian-decoder's --max-length-factor)";
     },
     [](const Config& c) { return integer(c.decode.max_length); }},
    {"decode.word_penalty",
     [](const Config& c) { return c.decode.search_rules != SearchRules::marian && c.decode.word_penalty != 0; },
     [](const Config& c) { return "0" + with_rules(c.decode) + " (a rule of marian)"; },
     [](const Config& c) { return number(c.decode.word_penalty); }},
    {"decode.ban_unk", [](const Config& c) { return c.decode.search_rules == SearchRules::fairseq && c.decode.ban_unk; },
     [](const Config&) -> std::string { return "false with decode.search_rules: fairseq (its --unkpen is decode.unk_penalty)"; },
     yes},
    {"decode.max_length",
     [](const Config& c) {
       const DecodeConfig& d = c.decode;
       return d.search_rules == SearchRules::fairseq && !(d.max_length > 0 || d.max_length_ratio > 0);
     },
     [](const Config&) -> std::string {
       return "> 0, or decode.max_length_ratio > 0, with decode.search_rules: fairseq (its --max-len-b and --max-len-a)";
     },
     [](const Config& c) { return integer(c.decode.max_length); }},
    {"decode.ban_unk", [](const Config& c) { return !toolkit_rules(c.decode) && c.decode.ban_unk; },
     [](const Config&) -> std::string {
       return "false with decode.search_rules: attnmt (a rule of opennmt, opennmt3, joeynmt and marian)";
     },
     yes},
    // joeynmt: 0 = Joey NMT's own default (decoding/toolkit_search.h).
    {"decode.max_length", [](const Config& c) { return opennmt_rules(c.decode) && c.decode.max_length <= 0; },
     [](const Config& c) {
       return "> 0" + with_rules(c.decode) +
              (c.decode.search_rules == SearchRules::opennmt ? " (the toolkit's max_length, its only length limit)"
                                                             : " (the toolkit's max_length)");
     },
     [](const Config& c) { return integer(c.decode.max_length); }},
    // What the toolkits' rules (decoding/toolkit_search.h) do not do.
    {"decode.sampling", [](const Config& c) { return toolkit_rules(c.decode) && c.decode.sampling; },
     [](const Config& c) { return "false" + with_rules(c.decode) + " (attnmt's rules only)"; }, yes},
    {"decode.shortlist", [](const Config& c) { return toolkit_rules(c.decode) && c.decode.shortlist; },
     [](const Config& c) { return "false" + with_rules(c.decode) + " (attnmt's rules only)"; }, yes},
    {"decode.coverage_penalty", [](const Config& c) { return toolkit_rules(c.decode) && c.decode.coverage_penalty != 0; },
     [](const Config& c) { return "0" + with_rules(c.decode) + " (attnmt's rules only)"; },
     [](const Config& c) { return number(c.decode.coverage_penalty); }},
    {"decode.no_repeat_ngram_size",
     [](const Config& c) { return toolkit_rules(c.decode) && c.decode.no_repeat_ngram_size != 0; },
     [](const Config& c) { return "0" + with_rules(c.decode) + " (attnmt's rules only)"; },
     [](const Config& c) { return integer(c.decode.no_repeat_ngram_size); }},
    {"decode.mbr", [](const Config& c) { return toolkit_rules(c.decode) && c.decode.mbr != MbrMetric::none; },
     [](const Config& c) { return "none" + with_rules(c.decode) + " (attnmt's rules only)"; },
     [](const Config& c) { return text(name_string(c.decode.mbr)); }},

    {"device", [](const Config& c) { return !is_device(c.device); },
     [](const Config&) -> std::string { return "cpu, cuda or cuda:N"; },
     [](const Config& c) { return text(c.device); }},
};

}  // namespace

std::string config_table::choice_refusal(const Field& field, const std::string& name) {
  if (std::string_view(field.key) == "train.precision" && name == "int8") {
    return "train.precision: int8 is for decoding only (decode.precision: int8, or translate --precision int8); "
           "training takes fp32 or bf16";
  }
  return std::string(field.key) + " must be " + rule_text(field.rule, false) + ", got " + in_quotes(name);
}

void validate_config(const Config& config) {
  for (const Field& f : fields()) check_rule(config, f);
  for (const BetweenKeys& rule : kBetweenKeys) {
    if (rule.broken(config)) invalid(rule.key, rule.must(config), rule.got(config));
  }
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
