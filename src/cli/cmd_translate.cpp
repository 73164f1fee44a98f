// attnmt translate --model MODEL [--model MODEL2 ... [--weights W1,W2,...]] [--input FILE] [--output FILE]
//                  [--prefix FILE] [--constraints FILE] [--scores FILE] [--set decode.key=value ...]
//                  [--beam-size N] [--n-best N] [--batch-size N] [--workers N] [--precision fp32|bf16|int8]
//                  [--packed-weights B] [--gemm auto|onednn|blas] [--attention-out FILE] [--stats FILE]
//                  [--hard-decode true|false] [--shortlist true|false] [--shortlist-first N] [--shortlist-best N]
//                  [--search-rules attnmt|opennmt|opennmt3|joeynmt|fairseq] [--ban-unk true|false] [--unk-penalty P]
//                  [--word-penalty P]
//                  [--streaming [--lookahead K | --wait-k K] [--delays FILE] [--reference FILE] [--simuleval-dir DIR]]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "attention/registry.h"
#include "cli/decode_flags.h"
#include "decoding/ensemble.h"
#include "decoding/output.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/streaming.h"
#include "decoding/translator.h"
#include "eval/latency.h"
#include "eval/simuleval_log.h"
#include "io/model_file.h"
#include "runtime/compute.h"
#include "runtime/gemm.h"
#include "runtime/huge_pages.h"
#include "util/cpu_kernels.h"
#include "util/decode_phases.h"
#include "util/error.h"
#include "util/host_tuning.h"
#include "util/logging.h"
#include "util/text_io.h"

namespace attnmt::cli {

namespace {

// An ensemble's members read one source and write one target vocabulary: the same tokenizer models.
void check_same_vocabulary(const LoadedModel& first, const LoadedModel& other) {
  const char* side = !other.tokenizers.tgt->same_vocabulary(*first.tokenizers.tgt)   ? "target"
                     : !other.tokenizers.src->same_vocabulary(*first.tokenizers.src) ? "source"
                                                                                      : nullptr;
  if (side) {
    throw InputError("--model " + other.checkpoint + ": its " + side + " vocabulary (tokenizer model) differs from " +
                     first.checkpoint + "'s; an ensemble's models must share them");
  }
}

// A guide file's lines, as many as the input's.
std::vector<std::string> read_guide_lines(const std::string& flag, const std::string& path, size_t input_lines) {
  auto lines = read_lines(path);
  if (lines.size() != input_lines) {
    throw InputError(flag + " " + path + ": " + std::to_string(lines.size()) + " lines, the input has " +
                     std::to_string(input_lines));
  }
  return lines;
}

// --prefix FILE and --constraints FILE (tab-separated phrases) as LineGuides.
LineGuides read_line_guides(const std::string& prefix_file, const std::string& constraints_file, size_t input_lines,
                            const DecodeConfig& dc) {
  LineGuides guides;
  for (const auto& [flag, file] : {std::pair{"--prefix", &prefix_file}, std::pair{"--constraints", &constraints_file}}) {
    if (file->empty()) continue;
    if (dc.shortlist) throw InputError(std::string(flag) + ": not with decode.shortlist (its tokens may be outside the shortlist)");
    if (dc.search_rules != SearchRules::attnmt) {
      throw InputError(std::string(flag) + ": not with decode.search_rules " + name_string(dc.search_rules) +
                       " (attnmt's rules only)");
    }
    if (dc.sampling && file == &constraints_file) throw InputError("--constraints: not with decode.sampling (beam or greedy search only)");
  }
  if (!prefix_file.empty()) guides.prefixes = read_guide_lines("--prefix", prefix_file, input_lines);
  if (!constraints_file.empty()) {
    for (const auto& line : read_guide_lines("--constraints", constraints_file, input_lines)) {
      auto& phrases = guides.constraints.emplace_back();
      for (size_t begin = 0; begin <= line.size();) {
        const size_t tab = std::min(line.find('\t', begin), line.size());
        if (line.find_first_not_of(' ', begin) < tab) phrases.push_back(line.substr(begin, tab - begin));
        begin = tab + 1;
      }
    }
  }
  return guides;
}

// Says which lines' best translation misses a constraint (the maximum length cut it first).
void warn_unmet_constraints(const std::vector<std::vector<Translation>>& results) {
  std::string unmet;
  size_t count = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].front().constraints_met) continue;
    if (++count <= 10) unmet += (unmet.empty() ? "" : ", ") + std::to_string(i + 1);
  }
  if (count > 0) {
    spdlog::warn("[decode] {} line(s) reached the maximum output length before every constraint: line(s) {}{}", count,
                 unmet, count > 10 ? ", ..." : "");
  }
}

// --streaming: what it decodes with and what it cannot be combined with.
void check_streaming(const std::vector<LoadedModel>& members, const std::vector<std::string>& exclusive, int wait_k) {
  if (members.size() > 1) throw InputError("--streaming: one --model (an ensemble's heads would stop in different places)");
  for (const auto& flag : exclusive) {
    if (!flag.empty()) throw InputError("--streaming: not with " + flag + " (streaming decodes greedily, one sentence at a time)");
  }
  const auto& a = members.front().config.model.attention;
  if (wait_k == 0 && !attention_streams(a)) {
    throw InputError("--streaming: the model's attention must stop hard and never look right of its stop "
                     "(a model.attention.type that streams: " + attention_names_with(&AttentionTraits::streams) +
                     "; with hard_decode: true), or --wait-k K (decode.wait_k) for any model; " +
                     members.front().checkpoint + " has '" + a.type + "'" + (a.hard_decode ? "" : " with hard_decode: false"));
  }
}

// The translations to --output, or to stdout ("" or "-").
void write_output(const std::string& output, const std::string& text) {
  if (output.empty() || output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    write_file_atomic(output, text);
  }
}

// The latency of a stream in words (SimulEval's records, and its figures) and in subwords.
struct StreamLatency {
  std::vector<SimulEvalRecord> records;
  CorpusLatency words, subwords;
};

StreamLatency stream_latency(const std::vector<StreamedLine>& results, const std::vector<std::string>& lines,
                             const std::vector<std::string>& references, const Tokenizer& target) {
  StreamLatency out;
  std::vector<LatencyInstance> words, subwords;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    SimulEvalRecord record;
    record.index = static_cast<int64_t>(i);
    for (const auto& w : r.words) record.prediction += (record.prediction.empty() ? "" : " ") + w;
    record.delays = r.word_delays;
    record.elapsed.assign(r.word_delays.size(), 0.0);  // text input: SimulEval's text instances write 0
    record.prediction_length = static_cast<int64_t>(r.words.size());
    record.reference = references.empty() ? "" : references[i];
    record.source = lines[i];
    record.source_length = r.source_words;
    out.records.push_back(record);
    if (r.source_tokens == 0) continue;  // a blank line: nothing streamed
    LatencyInstance w{std::vector<double>(r.word_delays.begin(), r.word_delays.end()),
                      static_cast<double>(r.source_words), -1};
    LatencyInstance s{std::vector<double>(r.delays.begin(), r.delays.end()), static_cast<double>(r.source_tokens), -1};
    if (!references.empty()) {
      w.reference_length = simuleval_reference_words(references[i]);
      s.reference_length = static_cast<double>(target.encode(references[i]).size());
    }
    words.push_back(std::move(w));
    subwords.push_back(std::move(s));
  }
  out.words = corpus_latency(words);
  out.subwords = corpus_latency(subwords);
  return out;
}

std::string format_latency(const LatencyScores& scores) {
  std::string line;
  for (const auto& [name, value] : latency_fields(scores)) line += fmt::format("{}{} {:.3f}", line.empty() ? "" : ", ", name, value);
  return line;
}

nlohmann::json latency_json(const CorpusLatency& c) {
  nlohmann::json j = {{"scored", c.scored}};
  for (const auto& [name, value] : latency_fields(c.mean)) j[name] = value;
  return j;
}

struct StreamingOutputs {
  std::string output, delays, stats, simuleval_dir, reference;
};

// Streaming decoding (decoding/streaming.h): the translations, the delays file and the latency.
void translate_streaming(StepModel& model, const LoadedModel& loaded, const std::vector<std::string>& lines,
                         const TranslateOptions& options, int lookahead, int wait_k, WaitKPolicy policy,
                         bool reencode, const StreamingOutputs& to) {
  StreamingOptions streaming;
  streaming.incremental = !reencode;
  streaming.search = options.search;
  streaming.lookahead = lookahead;
  streaming.wait_k = wait_k;
  streaming.wait_k_policy = policy;
  streaming.workers = options.workers;
  streaming.batch_size = options.batch_size;
  streaming.max_source_tokens = options.max_source_tokens;
  const auto references = to.reference.empty() ? std::vector<std::string>{}
                                               : read_guide_lines("--reference", to.reference, lines.size());
  if (options.search.beam_size > 1) spdlog::info("[decode] streaming decodes greedily (decode.beam_size {} not used)", options.search.beam_size);
  const auto start = std::chrono::steady_clock::now();
  const auto results = stream_lines(model, loaded.tokenizers, lines, streaming);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string text, delays;
  double lagging = 0, source_tokens = 0;
  size_t sentences = 0, target_tokens = 0;
  for (const auto& r : results) {
    text += r.text + "\n";
    delays += fmt::format("{:.4f}\t", r.lagging);
    for (size_t t = 0; t < r.delays.size(); ++t) delays += (t ? " " : "") + std::to_string(r.delays[t]);
    delays += '\n';
    if (r.source_tokens == 0) continue;
    ++sentences;
    lagging += r.lagging;
    source_tokens += static_cast<double>(r.source_tokens);
    target_tokens += r.delays.size();
  }
  const double mean_lagging = sentences ? lagging / static_cast<double>(sentences) : 0;
  const double mean_source = sentences ? source_tokens / static_cast<double>(sentences) : 0;
  const bool incremental = streaming.incremental && model.streams_source();
  spdlog::info("[decode] streaming, {}, {}: {} sentences, average lagging {:.2f} source subwords "
               "(full-sentence decoding waits for all {:.2f}), {:.1f} s",
               wait_k > 0 ? fmt::format("wait-{} ({})", wait_k, name_of(policy))
                          : fmt::format("lookahead {}", lookahead),
               incremental ? "source read a token at a time" : "every source prefix encoded again", sentences,
               mean_lagging, mean_source, seconds);
  const auto latency = stream_latency(results, lines, references, *loaded.tokenizers.tgt);
  const char* lengths = references.empty() ? " (no --reference: |y| is the output's length)" : "";
  spdlog::info("[decode] latency in words as SimulEval scores it, {} sentences{}: {}", latency.words.scored, lengths,
               format_latency(latency.words.mean));
  spdlog::info("[decode] latency in subwords: {}", format_latency(latency.subwords.mean));
  write_output(to.output, text);
  if (!to.delays.empty()) write_file_atomic(to.delays, delays);
  if (!to.simuleval_dir.empty()) write_simuleval_dir(to.simuleval_dir, latency.records);
  if (!to.stats.empty()) {
    const nlohmann::json j = {{"sentences", sentences},      {"target_tokens", target_tokens},
                              {"seconds", seconds},          {"streaming", true},
                              {"lookahead", lookahead},      {"wait_k", wait_k},
                              {"wait_k_policy", wait_k > 0 ? name_of(policy) : ""},
                              {"incremental", incremental},
                              {"average_lagging", mean_lagging},
                              {"mean_source_tokens", mean_source}, {"threads", torch::get_num_threads()},
                              {"latency", {{"words", latency_json(latency.words)},
                                           {"subwords", latency_json(latency.subwords)},
                                           {"reference", !references.empty()}}}};
    write_file_atomic(to.stats, j.dump() + "\n");
  }
}

// translate --profile: each phase's seconds and share of the translating time.
nlohmann::json phases_json(double seconds) {
  nlohmann::json j = nlohmann::json::object();
  const auto split = decode_phase_seconds();
  double counted = 0;
  for (size_t i = 0; i < kDecodePhases; ++i) {
    j[decode_phase_name(static_cast<DecodePhase>(i))] = split[i];
    counted += split[i];
  }
  j["other"] = std::max(0.0, seconds - counted);
  return j;
}

void log_phases(double seconds) {
  std::string line;
  const auto phases = phases_json(seconds);
  for (const auto& [name, s] : phases.items()) {
    line += fmt::format("{}{} {:.3f} s ({:.0f}%)", line.empty() ? "" : ", ", name, s.get<double>(),
                        seconds > 0 ? 100 * s.get<double>() / seconds : 0.0);
  }
  spdlog::info("[translate] phases of {:.3f} s: {}", seconds, line);
}

struct TranslateArgs {
  std::vector<std::string> models;
  std::vector<double> weights;
  std::string checkpoint, input, output, attention_out, stats, prefix, constraints, scores, delays;
  std::string reference, simuleval_dir;
  bool streaming = false, profile = false, reencode = false;
  int lookahead = 0;
  int wait_k = 0;
  std::string wait_k_policy;  // --wait-k-policy ("": decode.wait_k_policy)
};

// --model (several: an ensemble, checked against --weights and for one vocabulary), each with the
// decode settings applied.
std::vector<LoadedModel> load_members(const TranslateArgs& o, const std::vector<std::string>& settings) {
  if (o.models.size() > 1 && !o.checkpoint.empty()) throw InputError("--checkpoint: one --model only");
  if (!o.weights.empty() && o.weights.size() != o.models.size()) {
    throw InputError("--weights: " + std::to_string(o.weights.size()) + " weight(s) for " +
                     std::to_string(o.models.size()) + " model(s)");
  }
  for (double w : o.weights) {
    if (!(w > 0) || !std::isfinite(w)) throw InputError("--weights: " + std::to_string(w) + " is not a weight > 0");
  }
  std::vector<LoadedModel> members;
  for (const auto& m : o.models) members.push_back(load_model(m, o.checkpoint, "", settings));
  for (size_t i = 1; i < members.size(); ++i) check_same_vocabulary(members.front(), members[i]);
  return members;
}

// --stats: what was translated in how long, and how.
void write_stats(const TranslateArgs& o, const std::vector<std::vector<Translation>>& results, double seconds,
                 const TranslateOptions& options, Seq2SeqStepModel& first, StepModel& step_model, size_t models,
                 bool shortlist) {
  auto j = translation_stats(results, seconds);
  j.update({{"beam_size", options.search.beam_size}, {"batch_size", options.batch_size},
            {"threads", torch::get_num_threads()}, {"cpu_allocator", cpu_allocator_description()},
            {"malloc", malloc_description()}, {"packed_weights", first.packed()},
            {"precision", first.precision()}, {"kernel", first.kernel()},
            {"cpu_isa", cpu_isa_name(this_cpu_isa())}, {"models", models},
            {"device", step_model.device().str()},
            {"gemm", gemm_description(step_model.device().is_cpu())}, {"shortlist", shortlist},
            {"shortlist_mean_size", first.mean_shortlist_size()}});
  if (o.profile) {
    j["phases"] = phases_json(seconds);
    // What the phases' seconds divide by: the encoder's runs (one per batch; a stream's, one per
    // read), the output layer's (one per decoder step of each model).
    const auto entries = decode_phase_entries();
    j["encoder_calls"] = entries[static_cast<size_t>(DecodePhase::kEncoder)];
    j["decoder_steps"] = entries[static_cast<size_t>(DecodePhase::kOutput)];
  }
  write_file_atomic(o.stats, j.dump() + "\n");
}

void run_translate(const TranslateArgs& o, const std::vector<std::string>& settings) {
  share_one_malloc_arena();  // both before the model is loaded and the workers start
  install_huge_page_advice();
  auto members = load_members(o, settings);
  const auto& loaded = members.front();
  const auto& config = loaded.config;
  const auto& dc = config.decode;
  configure_compute(config.threads, config.gemm);
  TranslateOptions options = translate_options(dc);
  options.search.return_attention = !o.attention_out.empty();
  options.progress_label = "[translate]";
  for (const auto& [flag, given] : std::vector<std::pair<std::string, bool>>{
           {"--lookahead", o.lookahead != 0}, {"--wait-k", o.wait_k != 0}, {"--delays", !o.delays.empty()},
           {"--reference", !o.reference.empty()}, {"--simuleval-dir", !o.simuleval_dir.empty()},
           {"--reencode", o.reencode}, {"--wait-k-policy", !o.wait_k_policy.empty()}}) {
    if (given && !o.streaming) throw InputError(flag + ": only with --streaming");
  }
  if (o.wait_k != 0 && o.lookahead != 0) throw InputError("--lookahead: not with --wait-k (wait-k reads by its own schedule)");
  // --wait-k, else decode.wait_k, else (0) the schedule a model trained prefix-to-prefix learnt
  // (train.wait_k; a --lookahead asks for the head's policy), else the hard-attention head's policy.
  const int wait_k = o.wait_k != 0 ? o.wait_k : !o.streaming ? 0 : default_wait_k(dc.wait_k, config.train.wait_k, o.lookahead);
  if (wait_k != 0 && o.lookahead != 0) {
    throw InputError("--lookahead: not with decode.wait_k " + std::to_string(wait_k) +
                     " (wait-k reads by its own schedule; --set decode.wait_k=0 for the head's policy)");
  }
  WaitKPolicy policy =
      o.wait_k_policy.empty() ? dc.wait_k_policy : parse_choice<WaitKPolicy>("--wait-k-policy", o.wait_k_policy);
  // A model trained prefix-to-prefix decodes as it was trained where its encoder reads a token at
  // a time (the shortlist and --reencode encode every prefix again).
  policy = resolve_wait_k_policy(policy, config.train.wait_k,
                                 loaded.model->streams_source() && !dc.shortlist && !o.reencode);
  if (o.streaming && o.wait_k == 0 && dc.wait_k == 0 && wait_k != 0) {
    spdlog::info("[decode] wait-{} ({}): the schedule the model was trained with (train.wait_k; --wait-k or "
                 "decode.wait_k for another)", wait_k, name_of(policy));
  }
  if (!o.wait_k_policy.empty() && wait_k == 0) {
    throw InputError("--wait-k-policy: only with wait-k (--wait-k K or decode.wait_k)");
  }
  if (wait_k != 0 && policy == WaitKPolicy::prefix && o.reencode) {
    throw InputError("--reencode: not with the wait-k policy prefix (its decoder is kept across reads of a source "
                     "read a token at a time)");
  }
  if (!o.simuleval_dir.empty() && o.reference.empty()) {
    throw InputError("--simuleval-dir: needs --reference (SimulEval's AL, LAAL and AP use the reference's length)");
  }
  if (o.streaming) {
    check_streaming(members, {o.prefix.empty() ? "" : "--prefix", o.constraints.empty() ? "" : "--constraints",
                              o.attention_out.empty() ? "" : "--attention-out", o.scores.empty() ? "" : "--scores",
                              dc.n_best > 1 ? "--n-best" : "", dc.sampling ? "--sampling" : "",
                              dc.mbr != MbrMetric::none ? "--mbr" : "",
                              dc.min_length > 0 ? "--min-length" : "",
                              dc.no_repeat_ngram_size > 0 ? "--no-repeat-ngram-size" : "",
                              dc.search_rules != SearchRules::attnmt ? "--search-rules" : ""},
                    wait_k);
  }
  const auto lines = read_lines(o.input.empty() ? "-" : o.input);
  if (o.streaming) {
    auto step_model = make_step_model(loaded.model, dc, loaded.lexicon);
    translate_streaming(*step_model, loaded, lines, options, o.lookahead, wait_k, policy, o.reencode,
                        {o.output, o.delays, o.stats, o.simuleval_dir, o.reference});
    return;
  }
  const auto guides = read_line_guides(o.prefix, o.constraints, lines.size(), dc);
  std::vector<std::unique_ptr<Seq2SeqStepModel>> step_models;
  std::vector<StepModel*> pointers;
  for (auto& m : members) {
    // Each member decodes with its own shortlist lexicon; the settings are the first model's.
    step_models.push_back(make_step_model(m.model, dc, m.lexicon));
    pointers.push_back(step_models.back().get());
  }
  std::unique_ptr<EnsembleStepModel> ensemble;
  if (members.size() > 1) {
    ensemble = std::make_unique<EnsembleStepModel>(
        pointers, o.weights.empty() ? std::vector<double>(members.size(), 1.0) : o.weights,
        loaded.tokenizers.tgt->vocab_size());
    spdlog::info("[decode] an ensemble of {} models{}", members.size(),
                 options.search.return_attention ? " (attention output: the first model's, " + loaded.checkpoint + ")" : "");
  }
  StepModel& step_model = ensemble ? static_cast<StepModel&>(*ensemble) : *step_models.front();
  enable_decode_phases(o.profile);
  const auto start = std::chrono::steady_clock::now();
  auto results = translate_lines(step_model, loaded.tokenizers, lines, options, guides);
  warn_unmet_constraints(results);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (o.profile) log_phases(seconds);
  write_output(o.output, format_translations(results, options.search.n_best));
  if (options.search.return_attention) write_file_atomic(o.attention_out, format_attention(results));
  if (!o.scores.empty()) write_file_atomic(o.scores, format_scores(results));
  if (!o.stats.empty()) write_stats(o, results, seconds, options, *step_models.front(), step_model, members.size(), dc.shortlist);
}

}  // namespace

void add_translate_command(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<TranslateArgs>();
  auto* cmd = app.add_subcommand("translate", "Translate a text file (raw text in, detokenized text out)");
  cmd->add_option("--model", o->models,
                  "A model file (.pt), or a save dir (its best.pt, else its newest checkpoint); several: an ensemble")
      ->required();
  cmd->add_option("--weights", o->weights, "An ensemble's weights, one per --model, > 0 (default: equal)")
      ->delimiter(',');
  cmd->add_option("--checkpoint", o->checkpoint, "A checkpoint file (instead of --model's)");
  cmd->add_option("--input,-i", o->input, "Input file, one sentence per line (default: stdin)");
  cmd->add_option("--output,-o", o->output, "Output file (default: stdout)");
  cmd->add_option("--attention-out", o->attention_out,
                  "Write attention as JSON lines: {line, src, tgt, attention[tgt][src]}");
  cmd->add_option("--prefix", o->prefix,
                  "A target prefix per input line (empty line = none), forced before search goes on");
  cmd->add_option("--constraints", o->constraints,
                  "Phrases per input line (tab-separated; empty line = none) that every output must contain");
  cmd->add_option("--scores", o->scores,
                  "Write 'line<TAB>log-probability<TAB>score' per output: log P(Y|X) and its length-normalised score");
  cmd->add_option("--stats", o->stats,
                  "Write JSON: sentences, target tokens, seconds spent translating (tokenize + search + detokenize; model loading excluded)");
  cmd->add_flag("--profile", o->profile,
               "Split the translating time into phases (tokenize, encoder, attention, recurrent, output, search): "
               "logged, and in --stats (with the encoder's calls and the decoder's steps)");
  cmd->add_flag("--streaming", o->streaming,
               "Simultaneous decoding: read the source token by token, write as soon as the monotonic head allows "
               "(model.attention.type " + attention_names_with(&AttentionTraits::streams) +
                   ", decoding hard; greedy) or, with --wait-k, by the wait-k schedule (any model); logs the latency "
                   "(AL, LAAL, AP, DAL, ATD as SimulEval computes them)");
  cmd->add_option("--lookahead", o->lookahead,
                  "--streaming: source tokens to read past the head's stop before writing (a large value = wait for the whole sentence)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--wait-k", o->wait_k,
                  "--streaming: the wait-k policy (STACL) for any model: read K source tokens, then write one and "
                  "read one in turn (instead of the monotonic head's stops); overrides decode.wait_k")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--wait-k-policy", o->wait_k_policy,
                  "--streaming with wait-k: replay (the decoder restarted over the longer source prefix after each "
                  "read, the written tokens replayed; any model) or prefix (the decoder kept across reads, each step "
                  "attending to the source read by then: STACL's prefix-to-prefix; a unidirectional encoder); "
                  "overrides decode.wait_k_policy")
      ->check(CLI::IsMember(std::vector<std::string>(Choice<WaitKPolicy>::names.begin(), Choice<WaitKPolicy>::names.end())));
  cmd->add_flag("--reencode", o->reencode,
                "--streaming: encode every source prefix again and replay the written tokens after each read, as for "
                "a bidirectional encoder, instead of reading a unidirectional model's source a token at a time "
                "(the same output, slower; for comparison)");
  cmd->add_option("--delays", o->delays,
                  "--streaming: write 'average lagging<TAB>source tokens read at each target token' per line");
  cmd->add_option("--reference", o->reference,
                  "--streaming: the reference translations, a line per input line: AL, LAAL and AP take their "
                  "lengths (SimulEval's definitions)");
  cmd->add_option("--simuleval-dir", o->simuleval_dir,
                  "--streaming: write SimulEval's instances.log and config.yaml there (delays in words), for "
                  "`simuleval --score-only --output DIR`; needs --reference");
  const auto settings = add_decode_flags(
      cmd, {{"decode.beam_size"}, {"decode.n_best", "written as 'line ||| text ||| score'"}, {"decode.batch_size"},
            {"decode.length_penalty"}, {"decode.coverage_penalty"}, {"decode.max_length_ratio"}, {"threads"},
            {"decode.workers"}, {"decode.precision"}, {"decode.packed_weights"}, {"gemm"}, {"device"},
            {"model.attention.hard_decode"}, {"decode.shortlist"}, {"decode.shortlist_first"}, {"decode.shortlist_best"},
            {"decode.min_length"}, {"decode.max_length"}, {"decode.no_repeat_ngram_size"}, {"decode.sampling"},
            {"decode.temperature"}, {"decode.top_k"}, {"decode.top_p"}, {"decode.epsilon"}, {"decode.seed"},
            {"decode.mbr"}, {"decode.mbr_candidates"}, {"decode.search_rules"}, {"decode.ban_unk"},
            {"decode.unk_penalty"}, {"decode.word_penalty"}});
  cmd->callback([o, settings, &global] {
    setup_logging(global.debug);
    run_translate(*o, *settings);
  });
}

}  // namespace attnmt::cli
