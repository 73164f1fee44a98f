#include "train/trainer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ATen/autocast_mode.h>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/loader.h"
#include "data/batcher.h"
#include "data/corpus.h"
#include "attention/registry.h"
#include "data/tokenizer.h"
#include "decoding/translator.h"
#include "eval/metrics.h"
#include "model/seq2seq.h"
#include "train/checkpoint.h"
#include "train/loss.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/text_io.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

// Holds SAVE_DIR/train.lock (flock) for the life of a training run.
class SaveDirLock {
 public:
  explicit SaveDirLock(const std::string& save_dir) : path_((fs::path(save_dir) / "train.lock").string()) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd_ < 0) throw InputError("train.save_dir: cannot write '" + path_ + "': " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {0};
      const auto n = ::pread(fd_, buf, sizeof(buf) - 1, 0);
      ::close(fd_);
      fd_ = -1;
      throw InputError("train.save_dir '" + save_dir + "' is in use by another attnmt train (pid " +
                       std::string(buf, n > 0 ? static_cast<size_t>(n) : 0) + ")");
    }
    const auto pid = std::to_string(::getpid());
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
      // the lock itself holds; the pid is only informative
    }
  }
  ~SaveDirLock() {
    if (fd_ >= 0) {
      ::unlink(path_.c_str());
      ::close(fd_);
    }
  }
  SaveDirLock(const SaveDirLock&) = delete;
  SaveDirLock& operator=(const SaveDirLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

// train.precision: bf16 — CPU autocast for the forward pass: matrix products run in bfloat16
// (oneDNN kernels on CPUs with AVX512-BF16/AMX), parameters, optimizer state and the loss stay
// fp32. The cast weights are cached for one forward pass and dropped afterwards.
class AutocastScope {
 public:
  explicit AutocastScope(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
  ~AutocastScope() { end(); }
  void end() {
    if (!enabled_) return;
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();  // the autograd graph keeps what backward needs
    enabled_ = false;
  }

 private:
  bool enabled_;
};

struct BatchTensors {
  torch::Tensor src, lengths, tgt_in, tgt_out;
  int64_t tgt_tokens = 0;
};

// src: ids + eos; tgt_in: bos + ids; tgt_out: ids + eos; all padded with pad.
BatchTensors make_batch(const std::vector<Example>& examples, const std::vector<size_t>& ids,
                        const torch::Device& device) {
  const int64_t B = static_cast<int64_t>(ids.size());
  int64_t S = 0, T = 0;
  for (auto i : ids) {
    S = std::max<int64_t>(S, examples[i].src.size() + 1);
    T = std::max<int64_t>(T, examples[i].tgt.size() + 1);
  }
  auto src = torch::full({B, S}, Tokenizer::kPad, torch::kLong);
  auto tin = torch::full({B, T}, Tokenizer::kPad, torch::kLong);
  auto tout = torch::full({B, T}, Tokenizer::kPad, torch::kLong);
  auto len = torch::empty({B}, torch::kLong);
  auto* s = src.data_ptr<int64_t>();
  auto* ti = tin.data_ptr<int64_t>();
  auto* to = tout.data_ptr<int64_t>();
  auto* l = len.data_ptr<int64_t>();
  BatchTensors b;
  for (int64_t r = 0; r < B; ++r) {
    const auto& ex = examples[ids[r]];
    for (size_t j = 0; j < ex.src.size(); ++j) s[r * S + j] = ex.src[j];
    s[r * S + ex.src.size()] = Tokenizer::kEos;
    l[r] = static_cast<int64_t>(ex.src.size()) + 1;
    ti[r * T] = Tokenizer::kBos;
    for (size_t j = 0; j < ex.tgt.size(); ++j) {
      ti[r * T + j + 1] = ex.tgt[j];
      to[r * T + j] = ex.tgt[j];
    }
    to[r * T + ex.tgt.size()] = Tokenizer::kEos;
    b.tgt_tokens += static_cast<int64_t>(ex.tgt.size()) + 1;
  }
  b.src = src.to(device);
  b.lengths = len.to(device);
  b.tgt_in = tin.to(device);
  b.tgt_out = tout.to(device);
  return b;
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

class JsonLog {
 public:
  explicit JsonLog(const std::string& path) : out_(path, std::ios::app) {
    if (!out_) throw InputError("train.save_dir: cannot write '" + path + "'");
  }
  void write(const nlohmann::json& j) {
    out_ << j.dump() << '\n';
    out_.flush();
  }

 private:
  std::ofstream out_;
};

struct ValidResult {
  double ppl = 0;
  double bleu = 0;
  double chrf = 0;
};

class Trainer {
 public:
  explicit Trainer(const TrainRequest& request) : req_(request), cfg_(request.config) {}
  void run();

 private:
  void prepare_data();
  void build_model();
  void restore_or_start();
  void train_loop();
  bool update(const std::vector<size_t>& batch_ids);  // false if the loss was not finite
  ValidResult validate();
  void after_validation(const ValidResult& v);
  void save_step_checkpoint();
  void evaluate_test();
  bool should_stop() const;

  TrainRequest req_;
  Config cfg_;
  torch::Device device_{torch::kCPU};
  Tokenizers tokenizers_;
  Dataset train_, valid_;
  ParallelText valid_text_;
  Seq2Seq model_{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  TrainingProgress progress_;
  std::unique_ptr<JsonLog> log_;
  bool early_stopped_ = false;
  int64_t nonfinite_in_row_ = 0;
  // report window
  double window_loss_ = 0, window_nll_ = 0;
  int64_t window_tokens_ = 0, window_steps_ = 0;
  std::chrono::steady_clock::time_point window_start_, run_start_;
  double seconds_before_run_ = 0;
  int64_t last_validated_step_ = -1;
};

void Trainer::prepare_data() {
  auto train_text = read_parallel(cfg_.data.train, "train");
  valid_text_ = read_parallel(cfg_.data.valid, "valid");
  spdlog::info("[data] train: {} pairs from '{}' / '{}'", train_text.src.size(), cfg_.data.train.src,
               cfg_.data.train.tgt);
  tokenizers_ = load_or_train_tokenizers(cfg_.tokenizer, cfg_.train.save_dir, &train_text, cfg_.train.seed);
  train_ = encode_dataset(train_text, tokenizers_, cfg_.data.max_length);
  spdlog::info("[data] train: {} pairs kept, {} skipped as empty, {} skipped as longer than {} tokens",
               train_.examples.size(), train_.skipped_empty, train_.skipped_long, cfg_.data.max_length);
  if (train_.examples.empty()) throw InputError("train: no usable sentence pairs in '" + cfg_.data.train.src + "'");
  valid_ = encode_dataset(valid_text_, tokenizers_, /*max_length=*/0);
  spdlog::info("[data] valid: {} pairs ({} empty skipped)", valid_.examples.size(), valid_.skipped_empty);
}

void Trainer::build_model() {
  VocabSizes vocab;
  vocab.src = tokenizers_.src->vocab_size();
  vocab.tgt = tokenizers_.tgt->vocab_size();
  model_ = Seq2Seq(cfg_.model, vocab);
  model_->to(device_);
  spdlog::info("[train] model: {} parameters, attention {}, {} decoder", model_->parameter_count(),
               cfg_.model.attention.type, cfg_.model.decoder.style);
  const auto& t = cfg_.train;
  if (t.optimizer == "adam") {
    optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters(),
                                                      torch::optim::AdamOptions(t.learning_rate));
  } else {
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(), torch::optim::SGDOptions(t.learning_rate));
  }
}

void Trainer::restore_or_start() {
  const auto checkpoints = list_step_checkpoints(cfg_.train.save_dir);
  if (!req_.resume) {
    if (!checkpoints.empty()) {
      throw InputError("train.save_dir '" + cfg_.train.save_dir + "' already has checkpoints ('" + checkpoints.front() +
                       "'): use --resume to continue, or choose another save_dir");
    }
    progress_.learning_rate = cfg_.train.learning_rate;
    return;
  }
  if (checkpoints.empty()) {
    throw InputError("--resume: no checkpoint in '" + cfg_.train.save_dir + "'");
  }
  // The newest checkpoint that loads; a damaged newest one (killed while writing a non-atomic
  // copy, disk trouble) falls back to the one before.
  for (const auto& path : checkpoints) {
    try {
      auto header = read_checkpoint_header(path);
      if (header.vocab.src != model_->vocab().src || header.vocab.tgt != model_->vocab().tgt) {
        throw InputError("checkpoint '" + path + "' vocabulary does not match the tokenizer models in the save dir");
      }
      load_checkpoint_state(path, model_, optimizer_.get(), /*restore_rng=*/true);
      progress_ = header.progress;
      set_learning_rate(*optimizer_, progress_.learning_rate);
      spdlog::info("[train] resumed from '{}' at step {} (epoch {}, batch {})", path, progress_.step,
                   progress_.epoch + 1, progress_.batch_in_epoch);
      return;
    } catch (const InputError& e) {
      spdlog::warn("[train] cannot resume from '{}': {}", path, e.what());
    }
  }
  throw InputError("--resume: no loadable checkpoint in '" + cfg_.train.save_dir + "'");
}

bool Trainer::update(const std::vector<size_t>& ids) {
  auto batch = make_batch(train_.examples, ids, device_);
  optimizer_->zero_grad();
  AutocastScope autocast(cfg_.train.precision == "bf16");
  auto logits = model_->forward(batch.src, batch.lengths, batch.tgt_in).to(torch::kFloat);
  autocast.end();
  auto loss = sequence_loss(logits, batch.tgt_out, Tokenizer::kPad, cfg_.train.label_smoothing);
  auto objective = loss.loss / static_cast<double>(loss.tokens);
  if (auto aux = model_->decoder()->attention().take_auxiliary_loss(-loss.sentence_nll); aux.defined()) {
    objective = objective + aux / static_cast<double>(loss.tokens);
  }
  const double value = objective.item<double>();
  if (!std::isfinite(value)) {
    optimizer_->zero_grad();
    return false;
  }
  objective.backward();
  if (cfg_.train.clip_norm > 0) torch::nn::utils::clip_grad_norm_(model_->parameters(), cfg_.train.clip_norm);
  optimizer_->step();
  window_loss_ += value * loss.tokens;
  window_nll_ += loss.nll_sum;
  window_tokens_ += loss.tokens;
  ++window_steps_;
  progress_.target_tokens += loss.tokens;
  return true;
}

ValidResult Trainer::validate() {
  torch::NoGradGuard no_grad;
  model_->eval();
  ValidResult r;
  double nll = 0;
  int64_t tokens = 0;
  for (const auto& ids : make_batches(valid_.examples, cfg_.train.batch_size, 0, false, 0, 0)) {
    auto batch = make_batch(valid_.examples, ids, device_);
    auto logits = model_->forward(batch.src, batch.lengths, batch.tgt_in);
    auto loss = sequence_loss(logits, batch.tgt_out, Tokenizer::kPad, 0.0);
    nll += loss.nll_sum;
    tokens += loss.tokens;
  }
  r.ppl = std::exp(nll / std::max<int64_t>(tokens, 1));
  if (cfg_.train.valid_metric == "bleu") {
    Seq2SeqStepModel step_model(model_);
    TranslateOptions options = translate_options(cfg_.decode);
    options.search.beam_size = cfg_.train.valid_beam_size;
    options.search.n_best = 1;
    auto translations = translate_lines(step_model, tokenizers_, valid_text_.src, options);
    std::vector<std::string> hyps;
    hyps.reserve(translations.size());
    for (auto& t : translations) hyps.push_back(t.front().text);
    r.bleu = corpus_bleu(hyps, valid_text_.tgt).score;
    r.chrf = corpus_chrf(hyps, valid_text_.tgt).score;
  }
  model_->train();
  return r;
}

void Trainer::after_validation(const ValidResult& v) {
  const bool by_bleu = cfg_.train.valid_metric == "bleu";
  const double score = by_bleu ? v.bleu : -v.ppl;  // higher is better
  const bool improved = !progress_.has_best || score > progress_.best_score;
  if (improved) {
    progress_.best_score = score;
    progress_.has_best = true;
    progress_.bad_validations = 0;
    progress_.lr_bad_validations = 0;
  } else {
    ++progress_.bad_validations;
    ++progress_.lr_bad_validations;
    if (cfg_.train.lr_schedule == "plateau" && progress_.lr_bad_validations >= cfg_.train.lr_patience) {
      const double lr = std::max(cfg_.train.min_learning_rate, progress_.learning_rate * cfg_.train.lr_decay);
      if (lr < progress_.learning_rate) {
        spdlog::info("[train] valid did not improve for {} validation(s): learning rate {:.3g} -> {:.3g}",
                     progress_.lr_bad_validations, progress_.learning_rate, lr);
        progress_.learning_rate = lr;
        set_learning_rate(*optimizer_, lr);
      }
      progress_.lr_bad_validations = 0;
    }
  }
  if (by_bleu) {
    spdlog::info("[valid] step {}: ppl {:.2f}, BLEU {:.2f}, chrF {:.2f}{}", progress_.step, v.ppl, v.bleu, v.chrf,
                 improved ? " (best)" : "");
  } else {
    spdlog::info("[valid] step {}: ppl {:.2f}{}", progress_.step, v.ppl, improved ? " (best)" : "");
  }
  nlohmann::json j = {{"type", "valid"}, {"step", progress_.step}, {"epoch", progress_.epoch + 1},
                      {"valid_ppl", v.ppl}, {"lr", progress_.learning_rate},
                      {"elapsed", progress_.train_seconds}, {"best", improved}};
  if (by_bleu) {
    j["valid_bleu"] = v.bleu;
    j["valid_chrf"] = v.chrf;
  }
  log_->write(j);
  save_step_checkpoint();
  if (improved) {
    save_checkpoint((fs::path(cfg_.train.save_dir) / "best.pt").string(), cfg_, model_, optimizer_.get(), progress_);
  }
  if (cfg_.train.patience > 0 && progress_.bad_validations >= cfg_.train.patience) {
    spdlog::info("[train] early stopping: no improvement in {} validations", progress_.bad_validations);
    early_stopped_ = true;
  }
  last_validated_step_ = progress_.step;
}

void Trainer::save_step_checkpoint() {
  const auto path = (fs::path(cfg_.train.save_dir) / ("ckpt." + std::to_string(progress_.step) + ".pt")).string();
  save_checkpoint(path, cfg_, model_, optimizer_.get(), progress_);
  auto all = list_step_checkpoints(cfg_.train.save_dir);
  for (size_t i = cfg_.train.keep_checkpoints; i < all.size(); ++i) {
    std::error_code ec;
    fs::remove(all[i], ec);
  }
  spdlog::debug("[train] saved '{}'", path);
}

// data.test, when set: the best checkpoint translated with the decode.* settings and scored;
// the output goes to SAVE_DIR/test.hyp, the scores to the log and log.jsonl.
void Trainer::evaluate_test() {
  if (cfg_.data.test.src.empty()) return;
  const auto test = read_parallel(cfg_.data.test, "test");
  const auto best = (fs::path(cfg_.train.save_dir) / "best.pt").string();
  if (fs::exists(best)) load_checkpoint_state(best, model_, nullptr, /*restore_rng=*/false);
  model_->eval();
  Seq2SeqStepModel step_model(model_);
  TranslateOptions options = translate_options(cfg_.decode);
  options.search.n_best = 1;
  const auto start = std::chrono::steady_clock::now();
  auto translations = translate_lines(step_model, tokenizers_, test.src, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<std::string> hyps;
  std::string text;
  for (auto& t : translations) {
    hyps.push_back(t.front().text);
    text += hyps.back() + '\n';
  }
  write_file_atomic((fs::path(cfg_.train.save_dir) / "test.hyp").string(), text);
  const double bleu = corpus_bleu(hyps, test.tgt).score;
  const double chrf = corpus_chrf(hyps, test.tgt).score;
  spdlog::info("[test] '{}': BLEU {:.2f}, chrF {:.2f} (beam {}, {} sentences in {:.1f}s) -> {}/test.hyp",
               cfg_.data.test.src, bleu, chrf, options.search.beam_size, hyps.size(), seconds, cfg_.train.save_dir);
  log_->write({{"type", "test"}, {"step", progress_.step}, {"test_bleu", bleu}, {"test_chrf", chrf},
               {"beam_size", options.search.beam_size}, {"sentences", hyps.size()},
               {"decode_seconds", seconds}, {"checkpoint", fs::exists(best) ? best : std::string("last")}});
}

bool Trainer::should_stop() const {
  if (early_stopped_) return true;
  if (cfg_.train.max_steps > 0 && progress_.step >= cfg_.train.max_steps) return true;
  if (cfg_.train.max_epochs > 0 && progress_.epoch >= cfg_.train.max_epochs) return true;
  if (cfg_.train.max_minutes > 0 && progress_.train_seconds >= 60.0 * cfg_.train.max_minutes) return true;
  return false;
}

void Trainer::train_loop() {
  model_->train();
  run_start_ = window_start_ = std::chrono::steady_clock::now();
  seconds_before_run_ = progress_.train_seconds;
  auto elapsed = [&] {
    return seconds_before_run_ +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
  };
  constexpr int64_t kMaxNonFiniteInRow = 10;
  while (!should_stop()) {
    auto batches = make_batches(train_.examples, cfg_.train.batch_size, cfg_.train.batch_tokens, /*shuffle=*/true,
                                cfg_.train.seed, static_cast<int>(progress_.epoch));
    while (progress_.batch_in_epoch < static_cast<int64_t>(batches.size()) && !should_stop()) {
      const bool ok = update(batches[progress_.batch_in_epoch]);
      ++progress_.batch_in_epoch;
      if (!ok) {
        ++progress_.skipped_steps;
        spdlog::warn("[train] non-finite loss at step {}: update skipped ({} in a row)", progress_.step + 1,
                     nonfinite_in_row_ + 1);
        if (++nonfinite_in_row_ >= kMaxNonFiniteInRow) {
          throw RuntimeError("training diverged: " + std::to_string(kMaxNonFiniteInRow) +
                             " non-finite losses in a row (lower train.learning_rate or set train.clip_norm)");
        }
        continue;
      }
      nonfinite_in_row_ = 0;
      ++progress_.step;
      progress_.train_seconds = elapsed();
      if (progress_.step % cfg_.train.report_every == 0) {
        const auto now = std::chrono::steady_clock::now();
        const double secs = std::chrono::duration<double>(now - window_start_).count();
        const double loss = window_loss_ / std::max<int64_t>(window_tokens_, 1);
        const double ppl = std::exp(window_nll_ / std::max<int64_t>(window_tokens_, 1));
        const double tps = window_tokens_ / std::max(secs, 1e-9);
        spdlog::info("[train] step {} epoch {} loss {:.4f} ppl {:.2f} lr {:.3g} {:.0f} tgt tok/s elapsed {:.0f}s",
                     progress_.step, progress_.epoch + 1, loss, ppl, progress_.learning_rate, tps,
                     progress_.train_seconds);
        log_->write({{"type", "train"}, {"step", progress_.step}, {"epoch", progress_.epoch + 1}, {"loss", loss},
                     {"ppl", ppl}, {"lr", progress_.learning_rate}, {"tgt_tokens_per_sec", tps},
                     {"elapsed", progress_.train_seconds}});
        window_loss_ = window_nll_ = 0;
        window_tokens_ = window_steps_ = 0;
        window_start_ = std::chrono::steady_clock::now();
      }
      if (progress_.step % cfg_.train.valid_every == 0) {
        after_validation(validate());
        window_start_ = std::chrono::steady_clock::now();  // validation time is not training speed
        window_loss_ = window_nll_ = 0;
        window_tokens_ = window_steps_ = 0;
      }
      if (int sig = g_stop_signal.load()) {
        save_step_checkpoint();
        spdlog::info("[train] {} received: saved step {} and stopped; continue with --resume",
                     sig == SIGINT ? "SIGINT" : "SIGTERM", progress_.step);
        return;
      }
    }
    if (progress_.batch_in_epoch >= static_cast<int64_t>(batches.size())) {
      ++progress_.epoch;
      progress_.batch_in_epoch = 0;
    }
  }
  if (last_validated_step_ != progress_.step) after_validation(validate());
  spdlog::info("[train] finished at step {} (epoch {}), {:.0f}s of training, best valid {} {:.2f}", progress_.step,
               progress_.epoch, progress_.train_seconds, cfg_.train.valid_metric,
               cfg_.train.valid_metric == "bleu" ? progress_.best_score : -progress_.best_score);
  evaluate_test();
}

void Trainer::run() {
  device_ = parse_device(cfg_.device);
  torch::set_num_threads(cfg_.threads > 0 ? cfg_.threads : static_cast<int>(std::thread::hardware_concurrency()));
  std::error_code ec;
  fs::create_directories(cfg_.train.save_dir, ec);
  if (ec) throw InputError("train.save_dir: cannot create '" + cfg_.train.save_dir + "': " + ec.message());
  SaveDirLock lock(cfg_.train.save_dir);
  setup_logging(spdlog::default_logger()->level() == spdlog::level::debug,
                (fs::path(cfg_.train.save_dir) / "train.log").string());
  torch::manual_seed(cfg_.train.seed);
  prepare_data();
  build_model();
  restore_or_start();
  write_file_atomic((fs::path(cfg_.train.save_dir) / "config.yaml").string(), config_to_yaml(cfg_));
  log_ = std::make_unique<JsonLog>((fs::path(cfg_.train.save_dir) / "log.jsonl").string());
  const auto batches_per_epoch =
      make_batches(train_.examples, cfg_.train.batch_size, cfg_.train.batch_tokens, true, cfg_.train.seed, 0).size();
  spdlog::info("[train] {} threads, device {}, {} batches per epoch", torch::get_num_threads(), device_.str(),
               batches_per_epoch);
  log_->write({{"type", "start"}, {"step", progress_.step}, {"parameters", model_->parameter_count()},
               {"attention", cfg_.model.attention.type}, {"decoder_style", cfg_.model.decoder.style},
               {"threads", torch::get_num_threads()}, {"device", device_.str()},
               {"batches_per_epoch", batches_per_epoch}, {"resumed", req_.resume}});
  g_stop_signal = 0;
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);
  try {
    train_loop();
  } catch (...) {
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
    throw;
  }
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
}

}  // namespace

void train(const TrainRequest& request) {
  check_attention(request.config.model);  // before any data is read
  check_training_inputs(request.config, request.config_source);
  Trainer trainer(request);
  trainer.run();
}

}  // namespace attnmt
