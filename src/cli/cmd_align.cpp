// attnmt align --model SAVE_DIR --src F [--tgt F] [--gold TALP] [--output F] [--threshold X]
// Word alignments from a model's attention over force-decoded references (analysis/aligner.h),
// written as Pharaoh "i-j" lines (0-based, source first); with --gold, AER / precision / recall.
#include <cstdio>
#include <string>

#include "align/links.h"
#include "analysis/aligner.h"
#include "cli/commands.h"
#include "cli/decode_flags.h"
#include "runtime/compute.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/text_io.h"

namespace attnmt::cli {

void add_align_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string model, checkpoint, src, tgt, gold, output;
    double threshold = 0;
    bool no_detokenize = false;
    int batch_size = 32;
  };
  auto o = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("align", "Word alignments from attention (force-decoded references), AER against gold");
  cmd->add_option("--model", o->model, "A model file (.pt), or a save dir (its best.pt, else its newest checkpoint)")->required();
  cmd->add_option("--checkpoint", o->checkpoint, "A checkpoint file (default: SAVE_DIR/best.pt, else the newest)");
  cmd->add_option("--src", o->src, "Source sentences, tokenised words (or 'SRC ||| TGT' lines without --tgt)")
      ->required();
  cmd->add_option("--tgt", o->tgt, "Target sentences (references), same number of lines");
  cmd->add_option("--gold", o->gold, "Gold alignments (TALP: 'i-j' sure, 'ipj' possible, 1-based): print AER");
  cmd->add_option("--output,-o", o->output, "Pharaoh alignments, 'i-j' 0-based (default: stdout)");
  cmd->add_option("--threshold", o->threshold,
                  "Link every word pair with attention >= X (default 0: one link per target word, at the argmax)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--no-detokenize", o->no_detokenize,
                "Give the model the words joined by spaces as they are (default: punctuation re-attached)");
  cmd->add_option("--batch-size", o->batch_size, "Sentence pairs per forward pass")->check(CLI::PositiveNumber);
  const auto settings = add_decode_flags(cmd, {{"threads"}, {"device"}});
  cmd->callback([o, settings, &global] {
    setup_logging(global.debug);
    const auto text = read_alignment_text(o->src, o->tgt);
    std::vector<GoldLinks> gold;
    if (!o->gold.empty()) {
      gold = read_talp(o->gold);
      check_gold_links(gold, text.src, text.tgt, o->gold);
    }
    auto loaded = load_model(o->model, o->checkpoint, "", *settings);
    configure_compute(loaded.config.threads, loaded.config.gemm);
    AlignOptions options;
    options.detokenize = !o->no_detokenize;
    options.threshold = o->threshold;
    options.batch_size = o->batch_size;
    const auto links = align(loaded, text.src, text.tgt, options);
    std::string out;
    for (const auto& l : links) out += format_pharaoh(l) + '\n';
    const bool to_stdout = o->output.empty() || o->output == "-";
    if (to_stdout) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
    } else {
      write_file_atomic(o->output, out);
    }
    if (!gold.empty()) {
      const auto r = alignment_error_rate(links, gold);
      const std::string line = fmt::format(
          "AER {:.2f}%  precision {:.2f}%  recall {:.2f}%  ({} sentence pairs, {} links predicted, {} sure, "
          "{} possible)\n",
          100 * r.aer, 100 * r.precision, 100 * r.recall, gold.size(), r.counts.predicted, r.counts.sure,
          r.counts.possible);
      std::fputs(line.c_str(), to_stdout ? stderr : stdout);
    }
  });
}

}  // namespace attnmt::cli
