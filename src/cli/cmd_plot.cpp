// attnmt plot --model MODEL --src "sentence" [--tgt "reference"] --output FILE.svg|.png
// One attention heatmap, merged to words: the model's own translation of the sentence (beam as
// configured), or with --tgt the reference force-decoded.
#include <string>

#include "analysis/aligner.h"
#include "cli/commands.h"
#include "cli/decode_flags.h"
#include "report/heatmap.h"
#include "runtime/compute.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/text_io.h"

namespace attnmt::cli {

void add_plot_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string model, checkpoint, src, tgt, output, title;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("plot", "Draw one attention heatmap (source words x target words) as SVG or PNG");
  cmd->add_option("--model", o->model, "A model file (.pt), or a save dir (its best.pt, else its newest checkpoint)")->required();
  cmd->add_option("--checkpoint", o->checkpoint, "A checkpoint file (default: SAVE_DIR/best.pt, else the newest)");
  cmd->add_option("--src", o->src, "The source sentence")->required();
  cmd->add_option("--tgt", o->tgt, "A reference: plot its force-decoded attention instead of the model's translation");
  cmd->add_option("--output,-o", o->output, "FILE.svg or FILE.png")->required();
  cmd->add_option("--title", o->title, "Title above the map (default: attention type and what is shown)");
  const auto settings = add_decode_flags(cmd, {{"decode.beam_size"}, {"threads"}, {"device"}});
  cmd->callback([o, settings, &global] {
    setup_logging(global.debug);
    for (const auto* s : {&o->src, &o->tgt}) {
      const auto bad = find_invalid_utf8(*s);
      if (bad != std::string::npos) {
        throw InputError(std::string(s == &o->src ? "--src" : "--tgt") + ": invalid UTF-8 at byte " +
                         std::to_string(bad));
      }
    }
    if (o->src.find_first_not_of(" \t") == std::string::npos) throw InputError("--src is empty");
    auto loaded = load_model(o->model, o->checkpoint, "", *settings);
    configure_compute(loaded.config.threads, loaded.config.gemm);
    SentenceAttention sentence;
    std::string shown;
    if (!o->tgt.empty()) {
      AlignOptions options;
      options.detokenize = false;  // a sentence typed by hand is raw text already
      sentence = forced_attention(loaded, {o->src}, {o->tgt}, options).front();
      shown = "reference";
    } else {
      auto options = translate_options(loaded.config.decode);
      sentence = translate_with_attention(loaded, {o->src}, options).front();
      shown = "translation, beam " + std::to_string(options.search.beam_size);
      spdlog::info("[plot] translation: {}", sentence.translation);
    }
    Heatmap map{sentence.src_words, sentence.tgt_words, sentence.words,
                o->title.empty() ? loaded.config.model.attention.type + " (" + shown + ")" : o->title};
    write_heatmap(map, o->output);
  });
}

}  // namespace attnmt::cli
