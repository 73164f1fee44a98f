// SAVE_DIR/log.jsonl, a training run's log: one JSON object per line, each with a "type". Training
// writes it (train/trainer.cpp), a resumed run appends to it, and `attnmt compare`, `attnmt bench`
// and the scripts read it; these records are its one description. Torch-free.
//   start  a run (or a resumed run) began: its model, threads and the kernels its products run on
//   train  every train.report_every updates: the window's loss, perplexity and speed
//   valid  a validation (scheduled, or at the end of a run)
//   test   data.test translated by best.pt at the end
#pragma once
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace attnmt {

struct StartRecord {
  int64_t step = 0;  // 0, or the step a resumed run goes on from
  int64_t parameters = 0;
  std::string attention, decoder_style;
  int64_t threads = 0, replicas = 0;
  std::string blas, malloc, gemm, precision, bf16_kernel, cpu_flags, device;
  int64_t batches_per_epoch = 0;
  bool resumed = false;
  int64_t processes = 1;
  std::string distributed_backend;
};

struct TrainRecord {
  int64_t step = 0, epoch = 0;  // epoch 1-based
  double loss = 0;              // the window's training loss (label smoothing included) per target token
  double ppl = 0;               // exp of its negative log-likelihood per target token
  double lr = 0;
  double tgt_tokens_per_sec = 0;
  double elapsed = 0;           // seconds of training so far (all runs of the save dir)
  std::optional<double> allreduce_share;  // distributed runs: the window's share in the gradient all-reduce
};

struct ValidRecord {
  int64_t step = 0, epoch = 0;
  double valid_ppl = 0;
  std::optional<double> valid_bleu, valid_chrf;  // train.valid_metric: bleu
  double lr = 0;
  double elapsed = 0;
  bool best = false;       // it wrote best.pt
  bool scheduled = true;   // every train.valid_every updates (false: the end-of-run one)
};

struct TestRecord {
  int64_t step = 0;
  double test_bleu = 0, test_chrf = 0;
  int64_t beam_size = 0, sentences = 0;
  double decode_seconds = 0;
  std::string checkpoint;  // best.pt's path, or "last"
};

using TrainLogRecord = std::variant<StartRecord, TrainRecord, ValidRecord, TestRecord>;

// One line of log.jsonl (no newline).
std::string train_log_line(const TrainLogRecord& record);

// Appends records to a log.jsonl, each line flushed as written. InputError if it cannot be opened.
class TrainLogWriter {
 public:
  explicit TrainLogWriter(const std::string& path);
  void write(const TrainLogRecord& record);

 private:
  std::ofstream out_;
};

struct TrainLog {
  std::vector<TrainLogRecord> records;  // in file order
  int64_t skipped_lines = 0;            // lines that do not parse (a kill mid-write) or of another type
  // The records of one type, in file order.
  template <class T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& r : records) {
      if (const auto* x = std::get_if<T>(&r)) out.push_back(*x);
    }
    return out;
  }
};

// The log at `path`; nullopt if there is no such file.
std::optional<TrainLog> read_train_log(const std::string& path);

}  // namespace attnmt
