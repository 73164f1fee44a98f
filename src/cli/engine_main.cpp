// attnmt-engine: the whole attnmt program, every command, on LibTorch. Users run the front
// (cli/front_main.cpp), which runs the commands that need no LibTorch itself and execs this program
// for the others, with the same arguments; run directly, it does everything as `attnmt` does.
#include <cstdio>
#include <string_view>

#include <torch/csrc/jit/runtime/operator.h>

#include "cli/program.h"
#include "cli/resident.h"
#include "data/tokenizer.h"
#include "util/error.h"
#include "util/host_tuning.h"
#include "util/signals.h"

namespace {

// Before the resident engine forks (cli/resident.h): LibTorch builds its JIT operator registry at
// the first model file read, and the SentencePiece module is loaded at the first tokenizer.
void warm_resident_engine() {
  torch::jit::getAllOperators();
  try {
    attnmt::load_sentencepiece_module();
  } catch (const attnmt::Error&) {
    // Each command that needs it says so.
  }
}

const std::vector<attnmt::cli::Command> kCommands = {
    {"train", attnmt::cli::add_train_command},     {"translate", attnmt::cli::add_translate_command},
    {"score", attnmt::cli::add_score_command},     {"bench", attnmt::cli::add_bench_command},
    {"align", attnmt::cli::add_align_command},     {"plot", attnmt::cli::add_plot_command},
    {"compare", attnmt::cli::add_compare_command}, {"lexicon", attnmt::cli::add_lexicon_command},
    {"average", attnmt::cli::add_average_command}, {"config", attnmt::cli::add_config_command},
    {"serve", attnmt::cli::add_serve_command},     {"convert", attnmt::cli::add_convert_command},
    {"export", attnmt::cli::add_export_command},
};

}  // namespace

// Before any shared library's initialiser, LibTorch's included (util/host_tuning.h).
__attribute__((section(".preinit_array"), used)) static void (*const attnmt_preinit)(int, char**, char**) =
    attnmt::tune_malloc_at_start;

int main(int argc, char** argv) {
  // The resident engine (cli/resident.h): returns in each command's child, before anything below
  // has started a thread or read the command's environment.
  if (argc == 3 && std::string_view(argv[1]) == attnmt::cli::kResidentEngineFlag) {
    try {
      attnmt::cli::serve_as_resident_engine(argv[2], warm_resident_engine, argc, argv);
    } catch (const attnmt::Error& e) {
      std::fprintf(stderr, "attnmt: error: %s\n", e.what());
      return 1;
    }
  }
  attnmt::take_stop_signals_on_own_thread();  // before any other thread starts
  attnmt::tune_process();
  attnmt::finish_process(attnmt::cli::run_program(argc, argv, kCommands));
}
