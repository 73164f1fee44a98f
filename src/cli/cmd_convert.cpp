// attnmt convert --from opennmt-py|joeynmt|fairseq|marian SOURCE --output MODEL.pt [--data-dir DICTS]
//                [--vocabs SRC.yml TGT.yml]
//                [--src-spm S.model] [--tgt-spm T.model]
// A model trained by another toolkit as an attnmt model file (convert/convert.h, docs/convert.md).
#include <string>

#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "convert/convert.h"
#include "util/logging.h"

namespace attnmt::cli {

void add_convert_command(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<ConvertOptions>();
  auto spm = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("convert", "Convert an OpenNMT-py, Joey NMT, fairseq or Marian RNN model into an attnmt model file");
  cmd->add_option("--from", o->from, "The toolkit that trained it: opennmt-py | joeynmt | fairseq | marian")->required();
  cmd->add_option("source", o->source,
                  "OpenNMT-py: the checkpoint (.pt, or the .safetensors of a 3.x checkpoint); Joey NMT: the model "
                  "directory or its config.yaml; fairseq: the checkpoint (checkpoint_best.pt); Marian: the model (.npz)")
      ->required();
  cmd->add_option("--output,-o", o->output, "The attnmt model file to write")->required();
  cmd->add_option("--checkpoint", o->checkpoint,
                  "Joey NMT: the checkpoint to take (default: the directory's best.ckpt, else its newest)");
  cmd->add_option("--data-dir", o->data_dir,
                  "fairseq: the directory with the dictionaries fairseq-preprocess wrote (dict.SRC.txt, dict.TGT.txt)");
  cmd->add_option("--vocabs", o->vocabs, "Marian: its source and target vocabularies (.yml), as its --vocabs")
      ->expected(2);
  cmd->add_option("--spm", *spm, "The SentencePiece model of both sides (a joint model)");
  cmd->add_option("--src-spm", o->src_spm,
                  "The source side's SentencePiece model (default: the one the Joey NMT config names; none: "
                  "the input is pre-tokenized)");
  cmd->add_option("--tgt-spm", o->tgt_spm, "The target side's SentencePiece model (as --src-spm)");
  cmd->add_option("--max-unknown", o->max_unknown,
                  "The largest share of a vocabulary's tokens that may be missing from its SentencePiece model")
      ->capture_default_str();
  cmd->callback([o, spm, &global] {
    setup_logging(global.debug);
    if (!spm->empty()) {
      if (o->src_spm.empty()) o->src_spm = *spm;
      if (o->tgt_spm.empty()) o->tgt_spm = *spm;
    }
    spdlog::info("[convert] {}", convert_model(*o));
  });
}

}  // namespace attnmt::cli
