// attnmt translate --model MODEL [--input FILE] [--output FILE] [--set decode.key=value ...]
//                  [--beam-size N] [--n-best N] [--batch-size N] [--workers N] [--precision fp32|bf16]
//                  [--packed-weights B] [--gemm auto|onednn|blas] [--attention-out FILE] [--stats FILE]
//                  [--hard-decode true|false] [--shortlist true|false] [--shortlist-first N] [--shortlist-best N]
#include <chrono>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/decode_flags.h"
#include "decoding/output.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/translator.h"
#include "io/model_file.h"
#include "runtime/compute.h"
#include "runtime/gemm.h"
#include "runtime/huge_pages.h"
#include "util/error.h"
#include "util/host_tuning.h"
#include "util/logging.h"
#include "util/text_io.h"

namespace attnmt::cli {

void add_translate_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string model, checkpoint, input, output, attention_out, stats;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("translate", "Translate a text file (raw text in, detokenized text out)");
  cmd->add_option("--model", o->model, "A model file (.pt), or a save dir (its best.pt, else its newest checkpoint)")->required();
  cmd->add_option("--checkpoint", o->checkpoint, "A checkpoint file (instead of --model's)");
  cmd->add_option("--input,-i", o->input, "Input file, one sentence per line (default: stdin)");
  cmd->add_option("--output,-o", o->output, "Output file (default: stdout)");
  cmd->add_option("--attention-out", o->attention_out,
                  "Write attention as JSON lines: {line, src, tgt, attention[tgt][src]}");
  cmd->add_option("--stats", o->stats,
                  "Write JSON: sentences, target tokens, seconds spent translating (tokenize + search + detokenize; model loading excluded)");
  const auto settings = add_decode_flags(
      cmd, {{"--beam-size", "decode.beam_size", "Beam size (1 = greedy)"},
            {"--n-best", "decode.n_best", "Write the N best: 'line ||| text ||| score'"},
            {"--batch-size", "decode.batch_size", "Sentences decoded together"},
            {"--length-penalty", "decode.length_penalty", "GNMT length penalty alpha"},
            {"--coverage-penalty", "decode.coverage_penalty", "GNMT coverage penalty beta"},
            {"--max-length-ratio", "decode.max_length_ratio", "Max output/input length"},
            {"--threads", "threads", "Threads (0 = all cores)"},
            {"--workers", "decode.workers", "Batches decoded at once, a thread each (0 = one per thread on CPU)"},
            {"--precision", "decode.precision", "fp32 | bf16: the encoder's and decoder step's products in bfloat16"},
            {"--packed-weights", "decode.packed_weights",
             "true | false: the encoder's and decoder step's products on weights packed for oneDNN"},
            {"--gemm", "gemm", "auto | onednn | blas: what runs fp32 matrix products"},
            {"--device", "device", "cpu | cuda | cuda:N"},
            {"--hard-decode", "model.attention.hard_decode",
             "true | false: monotonic attention decodes hard or with the expected alignment"},
            {"--shortlist", "decode.shortlist", "true | false: score only a vocabulary shortlist per batch (the model's lexicon)"},
            {"--shortlist-first", "decode.shortlist_first", "With a shortlist: the most frequent target subwords every batch keeps"},
            {"--shortlist-best", "decode.shortlist_best", "With a shortlist: translations kept per source subword"}});
  cmd->callback([o, settings, &global] {
    setup_logging(global.debug);
    share_one_malloc_arena();  // both before the model is loaded and the workers start
    install_huge_page_advice();
    auto loaded = load_model(o->model, o->checkpoint, "", *settings);
    const auto& config = loaded.config;
    const auto& dc = config.decode;
    configure_compute(config.threads, config.gemm);
    TranslateOptions options = translate_options(dc);
    options.search.return_attention = !o->attention_out.empty();
    const auto lines = read_lines(o->input.empty() ? "-" : o->input);
    Seq2SeqStepModel step_model(loaded.model, dc.precision, dc.packed_weights);
    if (dc.shortlist) step_model.use_shortlist(loaded.lexicon, dc.shortlist_first, dc.shortlist_best);
    const auto start = std::chrono::steady_clock::now();
    auto results = translate_lines(step_model, loaded.tokenizers, lines, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const auto text = format_translations(results, options.search.n_best);
    if (o->output.empty() || o->output == "-") {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    } else {
      write_file_atomic(o->output, text);
    }
    if (options.search.return_attention) write_file_atomic(o->attention_out, format_attention(results));
    if (!o->stats.empty()) {
      auto j = translation_stats(results, seconds);
      j.update({{"beam_size", options.search.beam_size}, {"batch_size", options.batch_size},
                {"threads", torch::get_num_threads()}, {"cpu_allocator", cpu_allocator_description()},
                {"malloc", malloc_description()}, {"packed_weights", step_model.packed()},
                {"gemm", gemm_description()}, {"shortlist", dc.shortlist},
                {"shortlist_mean_size", step_model.mean_shortlist_size()}});
      write_file_atomic(o->stats, j.dump() + "\n");
    }
  });
}

}  // namespace attnmt::cli
