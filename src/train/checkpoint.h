// Checkpoints: one file holding the model, the optimizer, the training progress, the dropout RNG
// and the resolved config, written atomically (temp file, fsync, rename) so that a kill at any
// moment leaves the previous checkpoint loadable. Files in a save dir:
//   config.yaml        resolved config (also stored inside every checkpoint)
//   spm*.model         SentencePiece model(s)
//   ckpt.<step>.pt     the last train.keep_checkpoints step checkpoints
//   best.pt            the best checkpoint by train.valid_metric
//   log.jsonl          one JSON object per report / validation
#pragma once
#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/tokenizer.h"
#include "model/seq2seq.h"

namespace attnmt {

constexpr int64_t kCheckpointFormat = 1;

struct TrainingProgress {
  int64_t step = 0;              // updates done
  int64_t epoch = 0;             // current epoch (0-based)
  int64_t batch_in_epoch = 0;    // next batch of the current epoch
  double best_score = 0;         // best valid metric so far (meaning depends on valid_metric)
  bool has_best = false;
  int64_t bad_validations = 0;   // validations since the last improvement (early stopping)
  int64_t lr_bad_validations = 0;  // same, since the last LR decay
  double learning_rate = 0;
  int64_t skipped_steps = 0;     // non-finite losses skipped
  double train_seconds = 0;      // wall time spent training so far (all runs)
  int64_t target_tokens = 0;     // target tokens trained on so far
  int64_t world_size = 1;        // processes that trained (batch_in_epoch counts their global batches)
};

// Writes a checkpoint atomically, streamed to disk (without optimizer state when `optimizer` is
// null). RuntimeError (naming the path) if it cannot be written; the previous file at `path`
// stays intact.
void save_checkpoint(const std::string& path, const Config& config, Seq2Seq& model,
                     torch::optim::Optimizer* optimizer, const TrainingProgress& progress);

struct CheckpointContents {
  Config config;
  VocabSizes vocab;
  TrainingProgress progress;
};

// A checkpoint file, read once: header() is the config/vocab/progress part; load_state then fills
// a model (and optimizer) built from that config. best.pt holds no optimizer state (it is for
// decoding; resuming reads the step checkpoints). InputError (naming the file) for a missing,
// truncated or corrupted file or a different format version. With `bytes`, the checkpoint is
// read from them instead of the file (`path` only names it in messages): the other ranks of a
// distributed run read rank 0's checkpoint this way.
class CheckpointFile {
 public:
  explicit CheckpointFile(const std::string& path, const std::string* bytes = nullptr);
  const CheckpointContents& header() const { return header_; }
  // InputError if the model (or optimizer, when given) does not match the stored state.
  void load_state(Seq2Seq& model, torch::optim::Optimizer* optimizer, bool restore_rng);

 private:
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
  std::string checkpoint;
};

// Decode-time choices that may differ from the stored config (unset: as trained).
struct DecodeOverrides {
  std::optional<bool> hard_decode;  // model.attention.hard_decode (monotonic)
};

// Loads `checkpoint` if given, else SAVE_DIR/best.pt, else the newest step checkpoint. Checks that
// the tokenizer models in the save dir match the checkpoint's vocabulary sizes.
LoadedModel load_model(const std::string& save_dir, const std::string& checkpoint, const std::string& device,
                       const DecodeOverrides& overrides = {});

// Parses "cpu", "cuda", "cuda:N"; InputError if CUDA is asked for but not available.
torch::Device parse_device(const std::string& device);

}  // namespace attnmt
