// A training run's directory (train.save_dir): the lock that keeps a second `attnmt train` out,
// the files in it (their names, the log, the step checkpoints kept) and the clean-up of what a
// killed run left. The checkpoints' format is io/model_file.h's.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "io/train_log.h"

namespace attnmt {

// "train.save_dir 'D' is in use by another attnmt train (pid P)".
std::string save_dir_in_use_message(const std::string& save_dir, const std::string& pid);

// The pid of the training that holds SAVE_DIR/train.lock now, if one does; creates nothing (a
// refusal before any work must leave the directory as it was).
std::optional<std::string> save_dir_holder(const std::string& save_dir);

class RunDir {
 public:
  // Creates the directory and takes its lock (InputError naming the holder when another training
  // has it) for the life of this object.
  explicit RunDir(const std::string& save_dir);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::string& path() const { return dir_; }
  std::string file(const std::string& name) const;  // SAVE_DIR/name
  std::string best_checkpoint() const { return file("best.pt"); }
  std::string step_checkpoint(int64_t step) const { return file("ckpt." + std::to_string(step) + ".pt"); }
  // A run killed while saving leaves its "<file>.tmp.<pid>" behind (the real file is untouched:
  // the temp file is renamed over it only once complete); with the lock held none is being
  // written, so they go (each one logged).
  void remove_stale_temp_files() const;
  // Removes all but the newest `keep` step checkpoints (train.keep_checkpoints).
  void keep_step_checkpoints(int64_t keep) const;
  // log.jsonl, opened for appending on first use.
  TrainLogWriter& log();

 private:
  std::string dir_, lock_path_;
  int lock_fd_ = -1;
  std::unique_ptr<TrainLogWriter> log_;
};

}  // namespace attnmt
