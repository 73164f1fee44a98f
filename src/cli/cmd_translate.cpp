// attnmt translate --model SAVE_DIR [--input FILE] [--output FILE] [--beam-size N] [--n-best N]
//                  [--batch-size N] [--workers N] [--precision fp32|bf16] [--packed-weights B] [--gemm auto|onednn|blas]
//                  [--attention-out FILE] [--stats FILE]
//                  [--hard-decode true|false] [--shortlist true|false] [--shortlist-first N] [--shortlist-best N]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "data/lexicon.h"
#include "decoding/translator.h"
#include "runtime/compute.h"
#include "runtime/gemm.h"
#include "runtime/huge_pages.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/runtime.h"
#include "util/text_io.h"

namespace attnmt::cli {

void add_translate_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string model, checkpoint, input, output, attention_out, device, stats, precision, gemm;
    std::optional<bool> hard_decode, packed_weights, shortlist;
    int beam_size = 0, n_best = 0, batch_size = 0, threads = -1, workers = -1, shortlist_first = -1,
        shortlist_best = -1;
    double length_penalty = -1, max_length_ratio = -1;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("translate", "Translate a text file (raw text in, detokenized text out)");
  cmd->add_option("--model", o->model, "Save dir of a trained model")->required();
  cmd->add_option("--checkpoint", o->checkpoint, "A checkpoint file (default: SAVE_DIR/best.pt, else the newest)");
  cmd->add_option("--input,-i", o->input, "Input file, one sentence per line (default: stdin)");
  cmd->add_option("--output,-o", o->output, "Output file (default: stdout)");
  cmd->add_option("--beam-size", o->beam_size, "Beam size (default: decode.beam_size; 1 = greedy)");
  cmd->add_option("--n-best", o->n_best, "Write the N best: 'line ||| text ||| score' (default: decode.n_best)");
  cmd->add_option("--batch-size", o->batch_size, "Sentences decoded together (default: decode.batch_size)");
  cmd->add_option("--length-penalty", o->length_penalty, "GNMT length penalty alpha (default: decode.length_penalty)");
  cmd->add_option("--max-length-ratio", o->max_length_ratio, "Max output/input length (default: decode.max_length_ratio)");
  cmd->add_option("--attention-out", o->attention_out,
                  "Write attention as JSON lines: {line, src, tgt, attention[tgt][src]}");
  cmd->add_option("--threads", o->threads, "Threads (default: config 'threads', 0 = all cores)");
  cmd->add_option("--workers", o->workers,
                  "Batches decoded at once, a thread each (default: decode.workers; 0 = one per thread on CPU)");
  cmd->add_option("--precision", o->precision, "fp32 | bf16: the encoder's and decoder step's products in bfloat16 (default: decode.precision)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--packed-weights", o->packed_weights,
                  "true | false: the encoder's and decoder step's products on weights packed for oneDNN (default: decode.packed_weights)");
  cmd->add_option("--gemm", o->gemm, "auto | onednn | blas: what runs fp32 matrix products (default: config 'gemm')")
      ->check(CLI::IsMember({"auto", "onednn", "blas"}));
  cmd->add_option("--stats", o->stats,
                  "Write JSON: sentences, target tokens, seconds spent translating (tokenize + search + detokenize; model loading excluded)");
  cmd->add_option("--device", o->device, "cpu | cuda | cuda:N (default: the model's config)");
  cmd->add_option("--hard-decode", o->hard_decode,
                  "true | false: monotonic attention decodes hard or with the expected alignment (default: as trained)");
  cmd->add_option("--shortlist", o->shortlist,
                  "true | false: score only a vocabulary shortlist per batch, from SAVE_DIR/lexicon.bin (default: decode.shortlist)");
  cmd->add_option("--shortlist-first", o->shortlist_first,
                  "With a shortlist: the most frequent target subwords every batch keeps (default: decode.shortlist_first)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--shortlist-best", o->shortlist_best,
                  "With a shortlist: translations kept per source subword (default: decode.shortlist_best)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o, &global] {
    setup_logging(global.debug);
    share_one_malloc_arena();  // both before the model is loaded and the workers start
    install_huge_page_advice();
    DecodeOverrides overrides;
    overrides.hard_decode = o->hard_decode;
    auto loaded = load_model(o->model, o->checkpoint, o->device, overrides);
    const auto& dc = loaded.config.decode;
    const int threads = o->threads >= 0 ? o->threads : loaded.config.threads;
    configure_compute(threads, o->gemm.empty() ? loaded.config.gemm : o->gemm);
    TranslateOptions options = translate_options(dc);
    if (o->beam_size > 0) options.search.beam_size = o->beam_size;
    if (o->n_best > 0) options.search.n_best = o->n_best;
    if (o->length_penalty >= 0) options.search.length_penalty = o->length_penalty;
    if (o->max_length_ratio > 0) options.search.max_length_ratio = o->max_length_ratio;
    options.search.return_attention = !o->attention_out.empty();
    if (o->batch_size > 0) options.batch_size = o->batch_size;
    if (o->workers >= 0) options.workers = o->workers;
    if (options.search.n_best > options.search.beam_size) {
      throw InputError("--n-best (" + std::to_string(options.search.n_best) + ") cannot exceed the beam size (" +
                       std::to_string(options.search.beam_size) + ")");
    }
    const auto lines = read_lines(o->input.empty() ? "-" : o->input);
    Seq2SeqStepModel step_model(loaded.model, o->precision.empty() ? dc.precision : o->precision,
                                o->packed_weights.value_or(dc.packed_weights));
    const bool shortlist = o->shortlist.value_or(dc.shortlist);
    if (shortlist) {
      step_model.use_shortlist(std::make_shared<const Lexicon>(read_lexicon(lexicon_path(o->model))),
                               o->shortlist_first >= 0 ? o->shortlist_first : dc.shortlist_first,
                               o->shortlist_best >= 0 ? o->shortlist_best : dc.shortlist_best);
    }
    const auto start = std::chrono::steady_clock::now();
    auto results = translate_lines(step_model, loaded.tokenizers, lines, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::ostringstream out, att;
    for (size_t i = 0; i < results.size(); ++i) {
      if (options.search.n_best > 1) {
        for (const auto& t : results[i]) out << i << " ||| " << t.text << " ||| " << t.score << '\n';
      } else {
        out << results[i].front().text << '\n';
      }
      if (options.search.return_attention) {
        const auto& best = results[i].front();
        nlohmann::json j = {{"line", i}, {"src", best.src_pieces}, {"tgt", best.tgt_pieces},
                            {"attention", best.attention}, {"translation", best.text}};
        att << j.dump() << '\n';
      }
    }
    if (o->output.empty() || o->output == "-") {
      std::fwrite(out.str().data(), 1, out.str().size(), stdout);
      std::fflush(stdout);
    } else {
      write_file_atomic(o->output, out.str());
    }
    if (options.search.return_attention) write_file_atomic(o->attention_out, att.str());
    if (!o->stats.empty()) {
      int64_t tokens = 0;  // generated target subwords, </s> included
      for (const auto& r : results) tokens += static_cast<int64_t>(r.front().target_tokens);
      nlohmann::json j = {{"sentences", results.size()}, {"target_tokens", tokens}, {"translate_seconds", seconds},
                          {"beam_size", options.search.beam_size}, {"batch_size", options.batch_size},
                          {"threads", torch::get_num_threads()}, {"cpu_allocator", cpu_allocator_description()},
                          {"malloc", malloc_description()},
                          {"packed_weights", step_model.packed()}, {"gemm", gemm_description()},
                          {"shortlist", shortlist}, {"shortlist_mean_size", step_model.mean_shortlist_size()}};
      write_file_atomic(o->stats, j.dump() + "\n");
    }
  });
}

}  // namespace attnmt::cli
