// Model files. A checkpoint is one file that holds everything translation needs, so a model can be
// copied and used without the directory it was trained in:
//   format 2: the resolved config, the vocabulary sizes, the weights, the SentencePiece model(s)
//             as bytes, the shortlist lexicon when there is one (decode.shortlist), and for
//             resuming the training progress, the dropout RNG and (step checkpoints) the optimizer;
//             a run with train.ema_decay keeps the averaged weights as the model's and the trained
//             ones beside them (step checkpoints: "trained_weights"), which resume continues from.
//   format 1: the same without tokenizers and lexicon; still read, its tokenizers (and
//             lexicon.bin) from the directory the file is in.
// Files are written atomically (temp file, fsync, rename): a kill at any moment leaves the previous
// file loadable. A training save dir holds:
//   config.yaml        resolved config (also stored inside every checkpoint)
//   spm*.model         SentencePiece model(s) (also stored inside every checkpoint)
//   lexicon.bin        the shortlist lexicon, when built (also stored inside checkpoints)
//   ckpt.<step>.pt     the last train.keep_checkpoints step checkpoints
//   best.pt            the best checkpoint by train.valid_metric (no optimizer: for decoding)
//   log.jsonl          one JSON object per report / validation
#pragma once
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/training_progress.h"
#include "data/tokenizer.h"
#include "io/model_format.h"
#include "model/seq2seq.h"

namespace attnmt {

struct Lexicon;

// What a model file carries besides the weights: the tokenizers and the shortlist lexicon.
struct ModelAssets {
  Tokenizers tokenizers;                    // required
  std::shared_ptr<const Lexicon> lexicon;  // null: none
};

// Writes a checkpoint atomically, streamed to disk (without optimizer state when `optimizer` is
// null). `trained_weights` (train.ema_decay: `model` then holds the averages) are the weights
// training goes on from, in the order of model->parameters(). int8_weights (`attnmt export
// --precision int8`): every matrix (weights, embeddings) stored as int8 with a scale per row, as
// decode.precision: int8 quantises it (runtime/int8_gemm.h), the rest in fp32: a file ~4x
// smaller that loads as those values dequantised. RuntimeError (naming the path) if it cannot be
// written; the previous file at `path` stays intact.
void save_checkpoint(const std::string& path, const Config& config, Seq2Seq& model,
                     torch::optim::Optimizer* optimizer, const TrainingProgress& progress, const ModelAssets& assets,
                     const std::vector<torch::Tensor>* trained_weights = nullptr, bool int8_weights = false);

struct CheckpointContents {
  int64_t format = kModelFormat;
  Config config;
  VocabSizes vocab;
  TrainingProgress progress;
};

// A checkpoint file, read once: header() is the config/vocab/progress part; load_state then fills
// a model (and optimizer) built from that config. best.pt holds no optimizer state (it is for
// decoding; resuming reads the step checkpoints). InputError (naming the file) for a missing,
// truncated or corrupted file or an unknown format version. With `bytes`, the checkpoint is read
// from them instead of the file (`path` only names it in messages): the other ranks of a
// distributed run read rank 0's checkpoint this way.
class CheckpointFile {
 public:
  explicit CheckpointFile(const std::string& path, const std::string* bytes = nullptr);
  const CheckpointContents& header() const { return header_; }
  // InputError if the model (or optimizer, when given) does not match the stored state.
  void load_state(Seq2Seq& model, torch::optim::Optimizer* optimizer, bool restore_rng);
  // A step checkpoint of a run with train.ema_decay: copies its trained weights into the model's
  // parameters (in place) and returns true; false (the model untouched) for a file without them.
  // InputError if they do not match the model.
  bool load_trained_weights(Seq2Seq& model);
  // The stored tokenizers (format 2), else nullopt.
  std::optional<Tokenizers> tokenizers();
  // The stored lexicon (format 2, when it has one), else null.
  std::shared_ptr<const Lexicon> lexicon();

 private:
  std::optional<std::string> bytes_of(const std::string& key);
  std::string path_;
  torch::serialize::InputArchive archive_;
  CheckpointContents header_;
};

// Step checkpoints in a save dir, newest first.
std::vector<std::string> list_step_checkpoints(const std::string& save_dir);

// A trained model ready for decoding.
struct LoadedModel {
  Config config;
  Tokenizers tokenizers;
  Seq2Seq model{nullptr};
  std::string checkpoint;                  // the file read
  std::shared_ptr<const Lexicon> lexicon;  // the shortlist's, when decoding with one (else null)
};

// The keys a decoding command may set on a trained model's config (`--set key=value`): those of
// scope load or call in the config's key table (config/loader.h). InputError for any other key.
void check_decode_settings(const std::vector<std::string>& settings);

// Whether `model` names a model find_model_file finds: a file, or a save dir with best.pt or a
// ckpt.<step>.pt. The one answer to "is there a model here?" (compare, bench and decoding ask it).
bool has_model(const std::string& model);

// `model` is a model file, or a save dir (its best.pt, else its newest step checkpoint);
// `checkpoint`, when not empty, names the file instead (a save dir's other checkpoint).
// InputError naming the path when there is no model there.
std::string find_model_file(const std::string& model, const std::string& checkpoint = "");

// Loads a model for decoding (find_model_file's file). Its config is the stored one with
// `settings` ("key=value", check_decode_settings) applied through the config loader (the same
// parsing, validation and messages as `train --set`); `device` (if not empty) overrides its device.
// Format 1 files take their tokenizers from their directory (checked against the checkpoint's
// vocabulary sizes). With decode.shortlist, the lexicon too: the file's, else lexicon.bin beside
// it, else an InputError.
LoadedModel load_model(const std::string& model, const std::string& checkpoint, const std::string& device,
                       const std::vector<std::string>& settings = {});

// Parses "cpu", "cuda", "cuda:N"; InputError if CUDA is asked for but not available.
torch::Device parse_device(const std::string& device);

}  // namespace attnmt
