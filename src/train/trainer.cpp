#include "train/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <string_view>
#include <thread>

#include "config/loader.h"
#include "data/batcher.h"
#include "data/bpe_dropout.h"
#include "data/corpus.h"
#include "data/lexicon.h"
#include "data/train_pairs.h"
#include "attention/registry.h"
#include "data/tokenizer.h"
#include "runtime/random.h"
#include "model/seq2seq.h"
#include "model/batch.h"
#include "io/model_file.h"
#include "io/train_log.h"
#include "train/distributed.h"
#include "train/ema.h"
#include "model/loss.h"
#include "runtime/workers.h"
#include "runtime/autocast.h"
#include "runtime/compute.h"
#include "runtime/gemm.h"
#include "util/seed_mix.h"
#include "train/optimizer.h"
#include "train/replicas.h"
#include "train/run_dir.h"
#include "train/schedule.h"
#include "train/training_inputs.h"
#include "train/validation.h"
#include "util/cpu_kernels.h"
#include "util/error.h"
#include "util/host_tuning.h"
#include "util/logging.h"
#include "util/progress.h"
#include "util/signals.h"
#include "util/text_io.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

// What every rank agrees on before each update (distributed runs: one small all-reduce).
struct StopDecision {
  bool stop = false;  // rank 0's criteria: steps, epochs, minutes, early stopping
  int signal = 0;     // SIGINT / SIGTERM seen by any rank
};

// The updates since the last report (train.report_every), for the report's loss, perplexity and
// speed: rank 0's sums over the world's tokens.
struct ReportWindow {
  double loss = 0, nll = 0;  // summed over the window's target tokens
  int64_t tokens = 0, steps = 0;
  std::chrono::steady_clock::time_point start;
  double allreduce_start = 0;  // dist_->gradient_seconds() when the window began

  void add(double loss_sum, double nll_sum, int64_t target_tokens) {
    loss += loss_sum;
    nll += nll_sum;
    tokens += target_tokens;
    ++steps;
  }
  void reset(double allreduce_seconds) {
    *this = ReportWindow{};
    start = std::chrono::steady_clock::now();
    allreduce_start = allreduce_seconds;
  }
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

class Trainer {
 public:
  explicit Trainer(const TrainRequest& request) : req_(request), cfg_(request.config) {}
  void run();

 private:
  void prepare_data();  // train/training_inputs.h
  void build_model();
  void restore_or_start();
  // After a checkpoint's load_state: training goes on from its trained weights (a run with
  // train.ema_decay stored the averages as the model), the averages from its model weights.
  void take_trained_weights(CheckpointFile& file, const std::string& path);
  void reseed_other_ranks();
  void map_epoch_position(int64_t old_world_size);
  std::vector<std::vector<size_t>> epoch_batches(int64_t epoch, int64_t world_size) const;
  std::vector<Example> training_examples(const std::vector<size_t>& ids) const;
  void train_loop();
  // train_loop's steps: what a stop by signal leaves, the next epoch's batches, and rank 0's
  // reporting and validation after an update, its last validation and the test set at the end.
  void stop_on_signal(int signal);
  std::vector<std::vector<size_t>> next_epoch();
  void after_update(std::optional<Progress>& bar);
  void finish_training(std::optional<Progress>& bar);
  void start_and_train(bool debug);  // run()'s part after the join
  bool update(const std::vector<size_t>& global_batch);  // false if the loss was not finite
  // Replica r's forward pass over `examples`: the smoothed loss (+ the attention's auxiliary loss)
  // summed over their tokens; part = [that sum, the NLL sum, the tokens].
  torch::Tensor replica_loss(int r, const std::vector<Example>& examples, std::vector<double>& part);
  void note_skipped_update();  // a non-finite loss or gradient: counted, logged, fatal after 10 in a row
  void report();
  void show_progress(Progress& bar) const;
  ValidResult validate();  // with the averaged weights (train.ema_decay) in the model
  // scheduled: see TrainingSchedule::after_validation; logs it, saves the step checkpoint and,
  // for a new best, best.pt.
  void after_validation(const ValidResult& v, bool scheduled);
  void save_step_checkpoint();
  void check_finite_parameters();
  void evaluate_test();
  bool should_stop() const;
  StopDecision agree_stop();
  void write_start_record(const std::string& bf16_class, int64_t batches_per_epoch);
  bool is_main() const { return dist_->is_main(); }

  TrainRequest req_;
  Config cfg_;
  torch::Device device_{torch::kCPU};
  std::unique_ptr<Distributed> dist_;  // world size 1 unless --distributed / --nproc
  std::unique_ptr<StopSignals> stop_signals_;  // SIGINT / SIGTERM during train_loop (util/signals.h)
  Tokenizers tokenizers_;
  std::unique_ptr<TrainPairs> train_;
  std::vector<std::vector<size_t>> start_batches_;  // the current epoch's, made once for the log and train_loop
  std::unique_ptr<Validation> validation_;  // the validation set (and data.test at the end)
  std::shared_ptr<const Lexicon> lexicon_;  // decode.shortlist
  std::optional<BpeDropout> src_bpe_dropout_, tgt_bpe_dropout_;  // data.src_bpe_dropout / tgt_bpe_dropout
  Seq2Seq model_{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<ParameterAverage> average_;  // train.ema_decay (rank 0, which validates and saves; null: off)
  std::unique_ptr<Replicas> replicas_;  // train.replicas (1: the model alone)
  TrainingProgress progress_;
  TrainingSchedule schedule_{cfg_.train, progress_};
  std::unique_ptr<RunDir> run_dir_;  // rank 0's: the lock, log.jsonl, the checkpoints
  int64_t nonfinite_in_row_ = 0;
  ReportWindow window_;
  std::chrono::steady_clock::time_point run_start_;
  // When this run began: the start-up (data, tokenizers, model, restore) is logged at its first update
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool first_update_done_ = false;
  double seconds_before_run_ = 0;
  int64_t last_validated_step_ = -1;
};

void Trainer::prepare_data() {
  auto data = prepare_training_inputs(cfg_, *dist_);
  tokenizers_ = std::move(data.tokenizers);
  train_ = std::move(data.train);
  src_bpe_dropout_ = std::move(data.src_bpe_dropout);
  tgt_bpe_dropout_ = std::move(data.tgt_bpe_dropout);
  lexicon_ = std::move(data.lexicon);
  validation_ = std::make_unique<Validation>(cfg_, tokenizers_, lexicon_, std::move(data.valid_text),
                                             std::move(data.valid), device_);
}

void Trainer::build_model() {
  VocabSizes vocab;
  vocab.src = tokenizers_.src->vocab_size();
  vocab.tgt = tokenizers_.tgt->vocab_size();
  model_ = Seq2Seq(cfg_.model, vocab);
  model_->set_wait_k(cfg_.train.wait_k);
  model_->to(device_);
  spdlog::info("[train] model: {} parameters, attention {}, {} decoder", model_->parameter_count(),
               cfg_.model.attention.type, name_of(cfg_.model.decoder.style));
  const auto& t = cfg_.train;
  if (dist_->active()) {  // the same start everywhere (seeded alike already; this makes it certain)
    auto state = model_->parameters();
    for (auto& b : model_->buffers()) state.push_back(b);
    dist_->broadcast_tensors(state);
  }
  if (t.optimizer == Optimizer::adam) {
    optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters(),
                                                      torch::optim::AdamOptions(t.learning_rate));
  } else {
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(t.learning_rate));
  }
  if (t.ema_decay > 0 && is_main()) average_ = std::make_unique<ParameterAverage>(model_, t.ema_decay);
}

void Trainer::take_trained_weights(CheckpointFile& file, const std::string& path) {
  if (average_) average_->restart();
  const bool had_them = file.load_trained_weights(model_);
  if (!is_main()) return;
  if (average_ && !had_them) {
    spdlog::info("[train] '{}' was written without train.ema_decay: the averages start from its weights", path);
  } else if (!average_ && had_them) {
    spdlog::info("[train] '{}' holds averaged weights, but train.ema_decay is 0: training goes on from its trained "
                 "weights, without the averages", path);
  }
}

void Trainer::restore_or_start() {
  const auto checkpoints = is_main() ? list_step_checkpoints(cfg_.train.save_dir) : std::vector<std::string>{};
  if (!req_.resume) {
    if (!checkpoints.empty()) {
      throw InputError("train.save_dir '" + cfg_.train.save_dir + "' already has checkpoints ('" + checkpoints.front() +
                       "'): use --resume to continue, or choose another save_dir");
    }
    progress_.learning_rate = cfg_.train.learning_rate;
    progress_.world_size = dist_->world_size();
    return;
  }
  // Rank 0 picks the newest checkpoint that loads (a damaged newest one -- killed while writing a
  // non-atomic copy, disk trouble -- falls back to the one before) and sends its bytes to the
  // other ranks, so that every rank resumes from the same state without a shared file system.
  std::string chosen, bytes;
  TrainingProgress progress;
  if (is_main()) {
    if (checkpoints.empty()) throw InputError("--resume: no checkpoint in '" + cfg_.train.save_dir + "'");
    for (const auto& path : checkpoints) {
      try {
        CheckpointFile file(path);
        const auto& header = file.header();
        if (header.vocab.src != model_->vocab().src || header.vocab.tgt != model_->vocab().tgt) {
          throw InputError("checkpoint '" + path + "' vocabulary does not match the tokenizer models in the save dir");
        }
        file.load_state(model_, optimizer_.get(), /*restore_rng=*/true);
        take_trained_weights(file, path);
        progress = header.progress;
        chosen = path;
        break;
      } catch (const InputError& e) {
        spdlog::warn("[train] cannot resume from '{}': {}", path, e.what());
      }
    }
    if (chosen.empty()) throw InputError("--resume: no loadable checkpoint in '" + cfg_.train.save_dir + "'");
    if (dist_->active()) bytes = read_file(chosen);
  }
  if (dist_->active()) {
    bytes = dist_->broadcast_bytes(bytes);
    chosen = dist_->broadcast_bytes(chosen);
    if (!is_main()) {
      CheckpointFile file(chosen, &bytes);
      progress = file.header().progress;
      file.load_state(model_, optimizer_.get(), /*restore_rng=*/false);
      take_trained_weights(file, chosen);
    }
  }
  progress_ = progress;
  set_learning_rate(*optimizer_, progress_.learning_rate);
  spdlog::info("[train] resumed from '{}' at step {} (epoch {}, batch {})", chosen, progress_.step,
               progress_.epoch + 1, progress_.batch_in_epoch);
  if (progress_.world_size != dist_->world_size()) map_epoch_position(progress_.world_size);
  progress_.world_size = dist_->world_size();
}

// Ranks other than 0 draw their own dropout masks: a generator seeded from (seed, rank, step) at
// every update, so that a resumed run draws what an uninterrupted one would without storing each
// rank's generator in the checkpoint. Rank 0 keeps the single-process stream (restored from the
// checkpoint when resuming).
void Trainer::reseed_other_ranks() {
  if (is_main()) return;
  torch::manual_seed(cfg_.train.seed + 1000003ULL * static_cast<uint64_t>(dist_->rank()) +
                     static_cast<uint64_t>(progress_.step));
}

// Resuming with another number of processes: the epoch's global batches differ (their size is
// per-process batch x processes), so the position in the epoch is carried over as the number of
// examples already seen; the rest of the epoch is then the new run's own order.
void Trainer::map_epoch_position(int64_t old_world_size) {
  const auto old_batches = epoch_batches(progress_.epoch, old_world_size);
  size_t seen = 0;
  for (int64_t b = 0; b < progress_.batch_in_epoch && b < static_cast<int64_t>(old_batches.size()); ++b) {
    seen += old_batches[static_cast<size_t>(b)].size();
  }
  const auto batches = epoch_batches(progress_.epoch, dist_->world_size());
  int64_t position = 0;
  size_t covered = 0;
  while (position < static_cast<int64_t>(batches.size()) && covered < seen) {
    covered += batches[static_cast<size_t>(position++)].size();
  }
  spdlog::warn("[train] the checkpoint was written by {} process(es), this run has {}: epoch {} resumes after batch "
               "{} of {} ({} of its examples seen before; the order of the rest differs from an uninterrupted run)",
               old_world_size, dist_->world_size(), progress_.epoch + 1, position, batches.size(), seen);
  progress_.batch_in_epoch = position;
}

// The epoch's global batches: train.batch_size (or batch_tokens) per process, so each global batch
// is what one process with a world_size times larger batch would train on.
std::vector<std::vector<size_t>> Trainer::epoch_batches(int64_t epoch, int64_t world_size) const {
  const auto& t = cfg_.train;
  return make_batches(train_->epoch_examples(t.seed, epoch), train_->src_lengths(), train_->tgt_lengths(),
                      static_cast<int>(t.batch_size * world_size), static_cast<int>(t.batch_tokens * world_size),
                      /*shuffle=*/true, t.seed, static_cast<int>(epoch), static_cast<size_t>(cfg_.data.batch_window));
}

// The pairs of a batch, segmented again under BPE-dropout when it is on. The draws are seeded by
// (train.seed, update, pair), so every rank and replica draws the same pieces for a pair, and a
// resumed run draws what the uninterrupted one did.
std::vector<Example> Trainer::training_examples(const std::vector<size_t>& ids) const {
  auto examples = train_->gather(ids);
  if (!src_bpe_dropout_ && !tgt_bpe_dropout_) return examples;
  const auto seed = static_cast<uint64_t>(cfg_.train.seed), step = static_cast<uint64_t>(progress_.step);
  for (size_t k = 0; k < ids.size(); ++k) {
    auto& e = examples[k];
    if (src_bpe_dropout_) e.src = src_bpe_dropout_->apply(e.src, mix_seeds(seed, step, ids[k], /*side=*/0));
    if (tgt_bpe_dropout_) e.tgt = tgt_bpe_dropout_->apply(e.tgt, mix_seeds(seed, step, ids[k], /*side=*/1));
  }
  return examples;
}

// One update on a global batch. Each rank trains on its slice of it and back-propagates its
// share of the loss averaged over the global batch's target tokens; the summed gradients are
// then exactly those of one process on the whole batch.
bool Trainer::update(const std::vector<size_t>& global_batch) {
  // Positions in the global batch: this rank's share of them, then each replica's share of that.
  std::vector<size_t> positions(global_batch.size());
  std::iota(positions.begin(), positions.end(), 0);
  const auto mine = dist_->active() ? shard_batch(positions, dist_->rank(), dist_->world_size()) : positions;
  reseed_other_ranks();
  int64_t global_tokens = 0;
  // Under target BPE-dropout the token count depends on this update's draws: the whole global batch
  // is segmented once here, and the replicas take their pairs from it.
  std::vector<Example> global_examples;
  if (tgt_bpe_dropout_) {
    global_examples = training_examples(global_batch);
    for (const auto& e : global_examples) global_tokens += static_cast<int64_t>(e.tgt.size()) + 1;
  } else {
    for (auto i : global_batch) global_tokens += static_cast<int64_t>(train_->tgt_lengths()[i]) + 1;
  }
  replicas_->prepare();  // drops the gradients
  const int R = replicas_->count();
  // Per replica: the smoothed loss (+ auxiliary loss) summed over its tokens, and [that sum, the
  // NLL sum, the tokens].
  std::vector<torch::Tensor> local_sum(static_cast<size_t>(R));
  std::vector<std::vector<double>> part(static_cast<size_t>(R), std::vector<double>{0, 0, 0});
  replicas_->parallel([&](int r) {
    const auto slice = R > 1 ? shard_batch(mine, r, R) : mine;
    if (slice.empty()) return;
    std::vector<Example> examples;
    if (!global_examples.empty()) {
      for (auto p : slice) examples.push_back(std::move(global_examples[p]));  // each position in one slice
    } else {
      std::vector<size_t> ids;
      for (auto p : slice) ids.push_back(global_batch[p]);
      examples = training_examples(ids);
    }
    c10::optional<RandomStreamScope> stream;
    if (R > 1) stream.emplace(replica_stream_seed(cfg_.train.seed, dist_->rank(), r, progress_.step));
    local_sum[static_cast<size_t>(r)] = replica_loss(r, examples, part[static_cast<size_t>(r)]);
  });
  std::vector<double> sums{0, 0, 0};
  for (const auto& p : part) {
    for (size_t k = 0; k < sums.size(); ++k) sums[k] += p[k];
  }
  dist_->allreduce_sum(sums);  // a non-finite loss on any rank makes the sum non-finite everywhere
  const double value = sums[0] / static_cast<double>(global_tokens);
  if (!std::isfinite(value)) return false;  // the next update's prepare() drops the gradients
  replicas_->parallel([&](int r) {
    const auto& sum = local_sum[static_cast<size_t>(r)];
    if (sum.defined()) (sum / static_cast<double>(global_tokens)).backward();
  });
  replicas_->reduce_gradients();
  dist_->allreduce_gradients(model_->parameters());
  // The global gradient norm (clipped to train.clip_norm when set, the scale folded into the
  // update): a non-finite one (an overflow in backward) skips the update like a non-finite loss,
  // so parameters never become NaN/Inf.
  const double grad_norm = gradient_norm(model_->parameters());
  if (!std::isfinite(grad_norm)) return false;
  const double clip = cfg_.train.clip_norm;
  const double clip_coef = clip > 0 ? clip / (grad_norm + 1e-6) : 1.0;  // as clip_grad_norm_
  set_learning_rate(*optimizer_, schedule_.next_learning_rate());
  optimizer_step(*optimizer_, std::min(1.0, clip_coef), cfg_.train.weight_decay);
  window_.add(sums[0], sums[1], global_tokens);
  progress_.target_tokens += global_tokens;
  return true;
}

torch::Tensor Trainer::replica_loss(int r, const std::vector<Example>& examples, std::vector<double>& part) {
  auto& model = replicas_->model(r);
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  auto batch = make_batch(examples, order, device_);
  const bool bf16 = cfg_.train.precision == TrainPrecision::bf16;
  CpuBf16Autocast autocast(bf16);  // train.precision: bf16, the forward pass
  auto hidden = model->hidden_states(batch.src, batch.lengths, batch.tgt_in).to(torch::kFloat);
  autocast.end();
  auto loss = output_layer_loss(hidden, model->output_weight(), model->output_bias(), batch.tgt_out,
                                Tokenizer::kPad, cfg_.train.label_smoothing, bf16);
  auto sum = loss.loss;
  const auto target_lengths = batch.tgt_out.ne(Tokenizer::kPad).sum(1);
  if (auto aux = model->decoder()->attention().take_auxiliary_loss(-loss.sentence_nll, target_lengths);
      aux.defined()) {
    sum = sum + aux;
  }
  part = {sum.item<double>(), loss.nll_sum, static_cast<double>(loss.tokens)};
  return sum;
}

ValidResult Trainer::validate() {
  torch::NoGradGuard no_grad;
  AveragesInModel averages(average_.get());
  return validation_->validate(model_);
}

void Trainer::after_validation(const ValidResult& v, bool scheduled) {
  const bool by_bleu = cfg_.train.valid_metric == ValidMetric::bleu;
  const auto outcome = schedule_.after_validation(v.score(cfg_.train), scheduled);
  if (outcome.decayed_from) {
    spdlog::info("[train] valid did not improve for {} validation(s): learning rate {:.3g} -> {:.3g}",
                 outcome.decay_after, *outcome.decayed_from, progress_.learning_rate);
    set_learning_rate(*optimizer_, progress_.learning_rate);
  }
  if (by_bleu) {
    spdlog::info("[valid] step {}: ppl {:.2f}, BLEU {:.2f}, chrF {:.2f}{}{}", progress_.step, v.ppl, v.bleu, v.chrf,
                 outcome.best ? " (best)" : "", scheduled ? "" : " (end of run)");
  } else {
    spdlog::info("[valid] step {}: ppl {:.2f}{}{}", progress_.step, v.ppl, outcome.best ? " (best)" : "",
                 scheduled ? "" : " (end of run)");
  }
  ValidRecord record;
  record.step = progress_.step;
  record.epoch = progress_.epoch + 1;
  record.valid_ppl = v.ppl;
  if (by_bleu) {
    record.valid_bleu = v.bleu;
    record.valid_chrf = v.chrf;
  }
  record.lr = schedule_.applied_learning_rate();
  record.elapsed = progress_.train_seconds;
  record.best = outcome.best;
  record.scheduled = scheduled;
  run_dir_->log().write(record);
  save_step_checkpoint();
  if (outcome.best) {
    check_finite_parameters();
    AveragesInModel averages(average_.get());
    save_checkpoint(run_dir_->best_checkpoint(), cfg_, model_, /*optimizer=*/nullptr, progress_, {tokenizers_, lexicon_});
  }
  if (outcome.early_stop) {
    spdlog::info("[train] early stopping: no improvement in {} validations", progress_.bad_validations);
  }
  last_validated_step_ = progress_.step;
}

// Last line of defence behind the skipped non-finite updates: a checkpoint never holds NaN/Inf.
void Trainer::check_finite_parameters() {
  torch::NoGradGuard no_grad;
  for (const auto& p : model_->named_parameters()) {
    if (!torch::isfinite(p.value()).all().item<bool>()) {
      throw RuntimeError("parameter '" + p.key() + "' is not finite at step " + std::to_string(progress_.step) +
                         ": no checkpoint written (the ones in train.save_dir are from before)");
    }
  }
}

void Trainer::save_step_checkpoint() {
  check_finite_parameters();
  const auto path = run_dir_->step_checkpoint(progress_.step);
  {
    AveragesInModel averages(average_.get());
    save_checkpoint(path, cfg_, model_, optimizer_.get(), progress_, {tokenizers_, lexicon_}, averages.trained_weights());
  }
  run_dir_->keep_step_checkpoints(cfg_.train.keep_checkpoints);
  spdlog::debug("[train] saved '{}'", path);
}

// data.test, when set: the best checkpoint translated with the decode.* settings and scored;
// the output goes to SAVE_DIR/test.hyp, the scores to the log and log.jsonl.
void Trainer::evaluate_test() {
  if (cfg_.data.test.src.empty()) return;
  const auto test = read_parallel(cfg_.data.test, "test");
  const auto best = run_dir_->best_checkpoint();
  if (fs::exists(best)) CheckpointFile(best).load_state(model_, nullptr, /*restore_rng=*/false);
  model_->eval();
  const auto result = validation_->test(model_, test);
  std::string text;
  for (const auto& h : result.hypotheses) text += h + '\n';
  write_file_atomic(run_dir_->file("test.hyp"), text);
  spdlog::info("[test] '{}': BLEU {:.2f}, chrF {:.2f} (beam {}, {} sentences in {:.1f}s) -> {}/test.hyp",
               cfg_.data.test.src, result.bleu, result.chrf, result.beam_size, result.hypotheses.size(), result.seconds,
               cfg_.train.save_dir);
  TestRecord record;
  record.step = progress_.step;
  record.test_bleu = result.bleu;
  record.test_chrf = result.chrf;
  record.beam_size = result.beam_size;
  record.sentences = static_cast<int64_t>(result.hypotheses.size());
  record.decode_seconds = result.seconds;
  record.checkpoint = fs::exists(best) ? best : std::string("last");
  run_dir_->log().write(record);
}

bool Trainer::should_stop() const {
  return schedule_.reached().has_value();  // train.patience included
}

// Every rank stops at the same update: rank 0's criteria (its clock, its validations) and a
// signal seen by any rank are all-reduced (max) once per update.
StopDecision Trainer::agree_stop() {
  std::vector<double> v{is_main() && should_stop() ? 1.0 : 0.0, static_cast<double>(stop_signals_ ? stop_signals_->received() : 0)};
  dist_->allreduce_max(v);
  return {v[0] > 0, static_cast<int>(v[1])};
}

void Trainer::report() {
  const double secs = window_.seconds();
  const double loss = window_.loss / std::max<int64_t>(window_.tokens, 1);
  const double ppl = std::exp(window_.nll / std::max<int64_t>(window_.tokens, 1));
  const double tps = window_.tokens / std::max(secs, 1e-9);
  TrainRecord record;
  record.step = progress_.step;
  record.epoch = progress_.epoch + 1;
  record.loss = loss;
  record.ppl = ppl;
  record.lr = schedule_.applied_learning_rate();
  record.tgt_tokens_per_sec = tps;
  record.elapsed = progress_.train_seconds;
  std::string allreduce;
  if (dist_->active()) {  // share of the window rank 0 spent in the gradient all-reduce
    const double share = (dist_->gradient_seconds() - window_.allreduce_start) / std::max(secs, 1e-9);
    record.allreduce_share = share;
    allreduce = fmt::format(" all-reduce {:.0f}%", 100 * share);
  }
  spdlog::info("[train] step {} epoch {} loss {:.4f} ppl {:.2f} lr {:.3g} {:.0f} tgt tok/s{} elapsed {:.0f}s",
               progress_.step, progress_.epoch + 1, loss, ppl, record.lr, tps, allreduce,
               progress_.train_seconds);
  run_dir_->log().write(record);
}

void Trainer::show_progress(Progress& bar) const {
  const auto& t = cfg_.train;
  const double secs = window_.seconds();
  std::vector<std::string> fields{fmt::format("epoch {}", progress_.epoch + 1)};
  if (window_.tokens > 0) fields.push_back(fmt::format("loss {:.3f}", window_.loss / window_.tokens));
  fields.push_back("next valid " + group_thousands((progress_.step / t.valid_every + 1) * t.valid_every));
  if (t.max_minutes > 0) fields.push_back("time left " + format_duration(t.max_minutes * 60.0 - progress_.train_seconds));
  bar.update(progress_.step, std::move(fields),
             secs > 0 && window_.tokens > 0 ? group_thousands(std::llround(window_.tokens / secs)) + " tok/s" : "");
}

void Trainer::note_skipped_update() {
  constexpr int64_t kMaxNonFiniteInRow = 10;
  ++progress_.skipped_steps;
  if (is_main()) {
    spdlog::warn("[train] non-finite loss or gradient at step {}: update skipped ({} in a row)", progress_.step + 1,
                 nonfinite_in_row_ + 1);
  }
  if (++nonfinite_in_row_ >= kMaxNonFiniteInRow) {
    throw RuntimeError("training diverged: " + std::to_string(kMaxNonFiniteInRow) +
                       " non-finite losses or gradients in a row (lower train.learning_rate or set "
                       "train.clip_norm); the checkpoints in train.save_dir are from before");
  }
}

// Marian's shape: until every rank agrees to stop, the next batch of the epoch is an update.
void Trainer::train_loop() {
  model_->train();
  run_start_ = std::chrono::steady_clock::now();
  window_.reset(dist_->gradient_seconds());
  seconds_before_run_ = progress_.train_seconds;
  auto batches = start_batches_.empty() ? epoch_batches(progress_.epoch, dist_->world_size()) : std::move(start_batches_);
  start_batches_.clear();
  std::optional<Progress> bar;  // rank 0's progress line on a terminal
  if (is_main()) {
    bar.emplace("[train]", "step", schedule_.step_budget(static_cast<int64_t>(batches.size())));
    bar->update(progress_.step);  // where the rate and the ETA count from (a resumed run: its step)
  }
  for (;;) {
    const StopDecision decision = agree_stop();
    if (decision.signal) return stop_on_signal(decision.signal);
    if (decision.stop) break;
    if (progress_.batch_in_epoch >= static_cast<int64_t>(batches.size())) {
      batches = next_epoch();
      continue;
    }
    const bool ok = update(batches[static_cast<size_t>(progress_.batch_in_epoch)]);
    ++progress_.batch_in_epoch;
    if (!first_update_done_ && is_main()) {
      first_update_done_ = true;
      spdlog::info("[train] first update done {:.1f}s after the start (data, tokenizers, model, checkpoint)",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    }
    if (!ok) {
      note_skipped_update();
      continue;
    }
    nonfinite_in_row_ = 0;
    ++progress_.step;
    if (average_) average_->update(progress_.step);
    progress_.train_seconds =
        seconds_before_run_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
    if (is_main()) after_update(bar);  // rank 0 alone reports, validates and writes checkpoints
  }
  if (is_main()) finish_training(bar);
}

void Trainer::stop_on_signal(int signal) {
  if (!is_main()) return;
  save_step_checkpoint();
  spdlog::info("[train] {} received: saved step {} and stopped; continue with --resume",
               signal == SIGINT ? "SIGINT" : "SIGTERM", progress_.step);
}

std::vector<std::vector<size_t>> Trainer::next_epoch() {
  ++progress_.epoch;
  progress_.batch_in_epoch = 0;
  return epoch_batches(progress_.epoch, dist_->world_size());
}

void Trainer::after_update(std::optional<Progress>& bar) {
  if (bar->enabled()) show_progress(*bar);
  if (progress_.step % cfg_.train.report_every == 0) {
    report();
    window_.reset(dist_->gradient_seconds());
  }
  if (progress_.step % cfg_.train.valid_every == 0) {
    after_validation(validate(), /*scheduled=*/true);
    window_.reset(dist_->gradient_seconds());  // validation time is not training speed
  }
}

void Trainer::finish_training(std::optional<Progress>& bar) {
  bar->finish();
  if (last_validated_step_ != progress_.step) after_validation(validate(), /*scheduled=*/false);
  spdlog::info("[train] finished at step {} (epoch {}), {:.0f}s of training, best valid {} {:.2f}", progress_.step,
               progress_.epoch, progress_.train_seconds, name_of(cfg_.train.valid_metric),
               cfg_.train.valid_metric == ValidMetric::bleu ? progress_.best_model_score : -progress_.best_model_score);
  evaluate_test();
}

// --resume of a run that has reached a limit of the config it is resumed with: the limit's name
// and the step, read from its newest checkpoint; nullopt when it can go on (or has no checkpoint).
static std::optional<std::string> finished_run(const Config& cfg) {
  for (const auto& path : list_step_checkpoints(cfg.train.save_dir)) {
    try {
      const auto progress = CheckpointFile(path).header().progress;
      const auto limit = reached_limit(cfg.train, progress);
      if (!limit) return std::nullopt;
      return *limit + " reached at step " + std::to_string(progress.step) + " ('" + path + "')";
    } catch (const InputError&) {
      continue;  // a damaged newest checkpoint: the resume path falls back to the one before
    }
  }
  return std::nullopt;
}

// log.jsonl's start record: the model, the threads and the kernels the products run on.
void Trainer::write_start_record(const std::string& bf16_class, int64_t batches_per_epoch) {
  StartRecord start;
  start.step = progress_.step;
  start.parameters = model_->parameter_count();
  start.attention = cfg_.model.attention.type;
  start.decoder_style = name_string(cfg_.model.decoder.style);
  start.threads = torch::get_num_threads();
  start.replicas = replicas_->count();
  start.blas = blas_description();
  start.malloc = malloc_description();
  start.gemm = gemm_description(device_.is_cpu());
  start.precision = name_string(cfg_.train.precision);
  start.bf16_kernel = bf16_class;
  start.cpu_flags = kernel_flags(this_cpu_flags());
  start.device = device_.str();
  start.batches_per_epoch = batches_per_epoch;
  start.resumed = req_.resume;
  start.processes = dist_->world_size();
  start.distributed_backend = dist_->backend();
  run_dir_->log().write(start);
}

void Trainer::run() {
  // Resuming a finished run changes nothing: no validation, no checkpoint, no log line on disk.
  if (req_.resume && !req_.distributed) {
    if (const auto finished = finished_run(cfg_)) {
      spdlog::info("[train] the run in '{}' is finished: {}; nothing to do (raise the limit with --set to go on)",
                   cfg_.train.save_dir, *finished);
      return;
    }
  }
  device_ = parse_device(cfg_.device);
  // bf16 is CPU autocast with attnmt's own bfloat16 kernels; on a GPU it would leave the
  // recurrences in fp32 and cast only the output layer, so it is refused rather than half-applied.
  if (!device_.is_cpu() && cfg_.train.precision == TrainPrecision::bf16) {
    throw InputError("train.precision: bf16 runs on the CPU only (device '" + cfg_.device +
                     "'); set train.precision: fp32");
  }
  DistributedEnv env;
  if (req_.distributed) {
    env = distributed_env_from_environment();
    if (device_.is_cuda() && !device_.has_index()) device_ = torch::Device(torch::kCUDA, env.local_rank);
  }
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  configure_compute(cfg_.threads > 0 ? cfg_.threads : std::max(1, cores / env.local_world_size), cfg_.gemm);
  const bool debug = spdlog::default_logger()->level() == spdlog::level::debug;
  // Joins the other ranks first: a rank that then fails (a locked save dir, bad data) tells the
  // others why through the store, and they stop with its line instead of waiting.
  dist_ = std::make_unique<Distributed>(env, cfg_.distributed, device_, shared_settings(cfg_));
  try {
    start_and_train(debug);
  } catch (const std::exception& e) {
    dist_->tell_peers_of_failure(e);  // while this rank's connections are still open
    throw;
  }
}

void Trainer::start_and_train(bool debug) {
  if (is_main()) {
    run_dir_ = std::make_unique<RunDir>(cfg_.train.save_dir);
    setup_logging(debug, run_dir_->file("train.log"));
    run_dir_->remove_stale_temp_files();
  } else if (!debug) {
    spdlog::set_level(spdlog::level::warn);  // rank 0 alone logs progress
  }
  torch::manual_seed(cfg_.train.seed);
  prepare_data();
  build_model();
  restore_or_start();
  const int replicas = resolve_workers(cfg_.train.replicas, device_.is_cpu());
  replicas_ = std::make_unique<Replicas>(model_, cfg_.model, replicas, torch::get_num_threads() / replicas);
  start_batches_ = epoch_batches(progress_.epoch, dist_->world_size());  // train_loop starts with them
  const auto batches_per_epoch = start_batches_.size();
  // The kernels the products run on: bf16's class on this CPU (util/cpu_kernels.h), fp32's library.
  const std::string bf16_class = device_.is_cpu() ? bf16_kernel_name(bf16_kernel(this_cpu_flags())) : "";
  spdlog::info("[train] {} threads ({}{}, {}), {} replica(s), device {}, {} batches per epoch{}", torch::get_num_threads(),
               cfg_.train.precision == TrainPrecision::bf16 ? "bf16 products: " + bf16_class + ", fp32: " : "",
               gemm_description(device_.is_cpu()), blas_description(), replicas_->count(), device_.str(), batches_per_epoch,
               dist_->active() ? fmt::format(" ({} processes, {}, batch {} per process)", dist_->world_size(),
                                             dist_->backend(), cfg_.train.batch_tokens > 0 ? cfg_.train.batch_tokens : cfg_.train.batch_size)
                               : std::string());
  if (is_main()) {
    write_file_atomic(run_dir_->file("config.yaml"), config_to_yaml(cfg_));
    write_start_record(bf16_class, static_cast<int64_t>(batches_per_epoch));
  }
  stop_signals_ = std::make_unique<StopSignals>();
  train_loop();
  stop_signals_.reset();  // after training (or with the Trainer, on an exception), the signals end the process again
}

}  // namespace

// train.precision: bf16 on a CPU whose bf16 products have no native kernel (util/cpu_kernels.h)
// would run them emulated, many times slower than fp32, and a recipe would take that much longer
// with nothing saying why. Refused before any work (tokenizers, caches, the save dir), unless
// train.allow_slow_bf16. bf16 on a GPU is refused in Trainer::run.
static void check_bf16_kernels(const TrainRequest& request) {
  const Config& cfg = request.config;
  if (cfg.train.precision != TrainPrecision::bf16 || !parse_device(cfg.device).is_cpu()) return;
  const auto& flags = this_cpu_flags();
  if (has_native_bf16(flags)) return;
  if (cfg.train.allow_slow_bf16) {
    const char* rank = std::getenv("RANK");  // a distributed run (--nproc's included): said by its first rank
    if (request.launch || (request.distributed && (rank == nullptr || std::string_view(rank) != "0"))) return;
    spdlog::warn("[train] train.precision: bf16: {}: they run emulated, {} (train.allow_slow_bf16)", no_native_bf16(flags),
                 emulated_bf16_cost(flags));
    return;
  }
  throw InputError("train.precision: bf16: " + no_native_bf16(flags) + ": they would run emulated, " +
                   emulated_bf16_cost(flags) +
                   "; use --set train.precision=fp32 (or train.allow_slow_bf16: true to insist)");
}

// --resume with nothing to resume from is refused before any work: no tokenizer trained, no
// cache written, no directory created, so the save dir is left as it was. A rank started with
// --distributed is checked by its launcher or finds out in restore_or_start; the launchers of
// nodes other than 0 have no checkpoints (rank 0 writes them on node 0).
static void check_resumable(const TrainRequest& request) {
  if (!request.resume || request.distributed || (request.launch && request.launch->node_rank != 0)) return;
  const auto& dir = request.config.train.save_dir;
  // A run still going there is the first thing to say (it may not have written a checkpoint yet).
  if (const auto holder = save_dir_holder(dir)) throw InputError(save_dir_in_use_message(dir, *holder));
  const auto checkpoints = list_step_checkpoints(dir);
  if (checkpoints.empty()) {
    throw InputError("--resume: no checkpoint in train.save_dir '" + dir +
                     "' (nothing was done; leave out --resume to start a new run there)");
  }
  for (const auto& path : checkpoints) {
    try {
      CheckpointFile file(path);
      return;
    } catch (const InputError&) {
      continue;  // restore_or_start falls back to the one before, as here
    }
  }
  throw InputError("--resume: no loadable checkpoint in train.save_dir '" + dir + "' (" +
                   std::to_string(checkpoints.size()) + " damaged; nothing was done)");
}

void train(const TrainRequest& request) {
  if (request.launch) validate(*request.launch);  // the command line's values first
  check_bf16_kernels(request);  // before anything else: every path (ranks, launchers) starts here
  check_attention(request.config.model);  // before any data is read
  check_wait_k_training(request.config.model, request.config.train.wait_k);
  check_training_inputs(request.config, request.config_source);
  check_resumable(request);
  if (request.launch) {
    auto launch = *request.launch;
    if (!distributed_available()) {
      throw InputError("--nproc / --nnodes / --max-restarts: this attnmt was built without c10d/Gloo support (install "
                       "libgloo-dev and rebuild)");
    }
    launch.save_dir = request.config.train.save_dir;
    launch.join_timeout = request.config.distributed.join_timeout;
    launch_workers(launch);
    return;
  }
  Trainer trainer(request);
  trainer.run();
}

}  // namespace attnmt
