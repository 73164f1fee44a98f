#include "io/model_file.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <future>
#include <optional>
#include <sstream>

#include "config/loader.h"
#include "data/lexicon.h"
#include "runtime/int8_gemm.h"
#include "util/error.h"
#include "util/text_io.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

template <typename T>
T read_scalar(torch::serialize::InputArchive& archive, const std::string& key, const std::string& path) {
  c10::IValue v;
  if (!archive.try_read(key, v)) throw InputError("checkpoint '" + path + "' has no '" + key + "' entry");
  if constexpr (std::is_same_v<T, double>) return v.toDouble();
  else if constexpr (std::is_same_v<T, bool>) return v.toBool();
  else if constexpr (std::is_same_v<T, std::string>) return v.toStringRef();
  else return static_cast<T>(v.toInt());
}

void load_archive(torch::serialize::InputArchive& archive, const std::string& path, const std::string* bytes) {
  if (!bytes && !fs::exists(path)) throw InputError("checkpoint '" + path + "' does not exist");
  try {
    if (bytes) {
      std::istringstream in(*bytes);
      archive.load_from(in);
    } else {
      archive.load_from(path);
    }
  } catch (const c10::Error& e) {
    throw InputError("checkpoint '" + path + "' is truncated or corrupted (" + first_line(e.what_without_backtrace()) + ")");
  }
}

// Opaque bytes (a SentencePiece model, a lexicon) as a uint8 tensor: stored as a record of its own,
// read without conversion.
// `attnmt export --precision int8`: the parameters and buffers by position ("p<i>", "b<i>": an
// archive's keys must be identifiers, parameter names have dots); a matrix as "q<i>" (int8) and
// "s<i>" (its rows' scales), the quantisation decode.precision: int8 makes (runtime/int8_gemm.h),
// so that decoding the file in int8 quantises it back to the same values.
torch::serialize::OutputArchive int8_archive(Seq2Seq& model) {
  torch::NoGradGuard no_grad;
  torch::serialize::OutputArchive out;
  const auto parameters = model->parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto w = parameters[i].detach().contiguous();
    if (w.dim() != 2 || w.scalar_type() != torch::kFloat || w.numel() == 0) {
      out.write("p" + std::to_string(i), w);
      continue;
    }
    const Int8Matrix matrix(w.data_ptr<float>(), nullptr, w.size(0), w.size(1));
    auto q = torch::empty(w.sizes(), torch::kChar);
    auto s = torch::empty({w.size(0)}, torch::kFloat);
    auto* qp = q.data_ptr<int8_t>();
    for (int64_t r = 0; r < w.size(0); ++r) {
      s[r] = matrix.scale(r);
      for (int64_t c = 0; c < w.size(1); ++c) qp[r * w.size(1) + c] = matrix.value(r, c);
    }
    out.write("q" + std::to_string(i), q);
    out.write("s" + std::to_string(i), s);
  }
  const auto buffers = model->buffers();
  for (size_t i = 0; i < buffers.size(); ++i) out.write("b" + std::to_string(i), buffers[i], /*is_buffer=*/true);
  return out;
}

void load_int8_archive(torch::serialize::InputArchive& in, Seq2Seq& model, const std::string& path) {
  torch::NoGradGuard no_grad;
  const auto fill = [&](torch::Tensor target, const torch::Tensor& value, const std::string& what) {
    if (value.sizes() != target.sizes()) {
      throw InputError("checkpoint '" + path + "': int8 weight " + what + " does not match the model");
    }
    target.copy_(value);
  };
  const auto parameters = model->parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    const auto n = std::to_string(i);
    torch::Tensor q, s, p;
    if (in.try_read("q" + n, q)) {
      in.read("s" + n, s);
      if (q.scalar_type() != torch::kChar || q.dim() != 2 || s.dim() != 1 || s.size(0) != q.size(0)) {
        throw InputError("checkpoint '" + path + "': int8 weight " + n + " is malformed");
      }
      fill(parameters[i], q.to(torch::kFloat) * s.to(torch::kFloat).unsqueeze(1), n);
    } else {
      in.read("p" + n, p);
      fill(parameters[i], p, n);
    }
  }
  const auto buffers = model->buffers();
  for (size_t i = 0; i < buffers.size(); ++i) {
    torch::Tensor b;
    in.read("b" + std::to_string(i), b, /*is_buffer=*/true);
    fill(buffers[i], b, "buffer " + std::to_string(i));
  }
  torch::Tensor extra;
  if (in.try_read("p" + std::to_string(parameters.size()), extra) ||
      in.try_read("q" + std::to_string(parameters.size()), extra)) {
    throw InputError("checkpoint '" + path + "': more int8 weights than the model has parameters");
  }
}

torch::Tensor bytes_tensor(const std::string& bytes) {
  auto t = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(t.data_ptr<uint8_t>()));
  return t;
}

}  // namespace

torch::Device parse_device(const std::string& device) {
  torch::Device d(torch::kCPU);
  try {
    d = torch::Device(device);
  } catch (const c10::Error&) {
    throw InputError("device: '" + device + "' is not a device (cpu, cuda, cuda:N)");
  }
  if (d.is_cuda() && !torch::cuda::is_available()) {
    throw InputError("device: '" + device + "' asked for, but this LibTorch build has no usable CUDA device");
  }
  return d;
}

void save_checkpoint(const std::string& path, const Config& config, Seq2Seq& model,
                     torch::optim::Optimizer* optimizer, const TrainingProgress& p, const ModelAssets& assets,
                     const std::vector<torch::Tensor>* trained_weights, bool int8_weights) {
  if (!assets.tokenizers.src || !assets.tokenizers.tgt) throw RuntimeError("save_checkpoint: no tokenizers given");
  torch::serialize::OutputArchive archive;
  archive.write("format_version", c10::IValue(kModelFormat));
  archive.write("attnmt_version", c10::IValue(std::string(ATTNMT_VERSION)));  // named when a reader is too old
  archive.write("config_yaml", c10::IValue(config_to_yaml(config)));
  archive.write("vocab.src", c10::IValue(model->vocab().src));
  archive.write("vocab.tgt", c10::IValue(model->vocab().tgt));
  archive.write("progress.step", c10::IValue(p.step));
  archive.write("progress.epoch", c10::IValue(p.epoch));
  archive.write("progress.batch_in_epoch", c10::IValue(p.batch_in_epoch));
  archive.write("progress.best_score", c10::IValue(p.best_score));
  archive.write("progress.has_best", c10::IValue(p.has_best));
  archive.write("progress.best_model_score", c10::IValue(p.best_model_score));
  archive.write("progress.has_best_model", c10::IValue(p.has_best_model));
  archive.write("progress.bad_validations", c10::IValue(p.bad_validations));
  archive.write("progress.lr_bad_validations", c10::IValue(p.lr_bad_validations));
  archive.write("progress.learning_rate", c10::IValue(p.learning_rate));
  archive.write("progress.skipped_steps", c10::IValue(p.skipped_steps));
  archive.write("progress.train_seconds", c10::IValue(p.train_seconds));
  archive.write("progress.target_tokens", c10::IValue(p.target_tokens));
  archive.write("progress.world_size", c10::IValue(p.world_size));
  archive.write("rng.cpu", at::detail::getDefaultCPUGenerator().get_state());
  const bool shared = assets.tokenizers.src == assets.tokenizers.tgt;
  archive.write("tokenizer.shared", c10::IValue(shared));
  archive.write("tokenizer.src", bytes_tensor(assets.tokenizers.src->serialized()), /*is_buffer=*/true);
  if (!shared) archive.write("tokenizer.tgt", bytes_tensor(assets.tokenizers.tgt->serialized()), /*is_buffer=*/true);
  if (assets.lexicon) archive.write("lexicon", bytes_tensor(lexicon_bytes(*assets.lexicon)), /*is_buffer=*/true);
  if (int8_weights) {
    auto int8_model = int8_archive(model);
    archive.write("model_int8", int8_model);
  } else {
    torch::serialize::OutputArchive model_archive;
    model->save(model_archive);
    archive.write("model", model_archive);
  }
  if (optimizer) {
    torch::serialize::OutputArchive optim_archive;
    optimizer->save(optim_archive);
    archive.write("optimizer", optim_archive);
  }
  if (trained_weights) {
    // By position: a serialized archive's keys must be identifiers, parameter names have dots.
    torch::serialize::OutputArchive trained_archive;
    for (size_t i = 0; i < trained_weights->size(); ++i) trained_archive.write("p" + std::to_string(i), (*trained_weights)[i]);
    archive.write("trained_weights", trained_archive);
  }
  // Streamed to the file: a checkpoint built in memory would be a second copy of the model and
  // the optimizer at the peak of training's memory. The archive writer must not see a failed
  // write (it then throws from its destructor, which ends the process), so the first error is
  // kept, the rest of the bytes are dropped, and the error is thrown once the writer is done.
  AtomicFile file(path);
  std::exception_ptr error;
  try {
    archive.save_to([&](const void* data, size_t size) -> size_t {
      if (!error) {
        try {
          file.write(data, size);
        } catch (...) {
          error = std::current_exception();
        }
      }
      return size;
    });
  } catch (const c10::Error& e) {
    if (!error) throw RuntimeError("cannot write '" + path + "': " + first_line(e.what_without_backtrace()));
  }
  if (error) std::rethrow_exception(error);
  file.commit();
}

CheckpointFile::CheckpointFile(const std::string& path, const std::string* bytes) : path_(path) {
  auto& archive = archive_;
  load_archive(archive, path, bytes);
  auto& c = header_;
  try {
    c.format = read_scalar<int64_t>(archive, "format_version", path);
    if (c.format > kModelFormat) {
      // A newer attnmt wrote it: say which, and what to do (files before format 2 carry no version).
      c10::IValue writer;
      const std::string by = archive.try_read("attnmt_version", writer) && writer.isString()
                                 ? " (written by attnmt " + writer.toStringRef() + ")"
                                 : "";
      throw InputError("checkpoint '" + path + "' has model format " + std::to_string(c.format) + by + ", newer than this attnmt " +
                       ATTNMT_VERSION + " reads (formats 1 to " + std::to_string(kModelFormat) +
                       "): upgrade attnmt to load it");
    }
    if (c.format != 1 && c.format != kModelFormat) {
      throw InputError("checkpoint '" + path + "' has format version " + std::to_string(c.format) +
                       ", this attnmt reads versions 1 and " + std::to_string(kModelFormat));
    }
    c.config = parse_config(read_scalar<std::string>(archive, "config_yaml", path), path + " (stored config)");
    c.vocab.src = read_scalar<int64_t>(archive, "vocab.src", path);
    c.vocab.tgt = read_scalar<int64_t>(archive, "vocab.tgt", path);
    auto& p = c.progress;
    p.step = read_scalar<int64_t>(archive, "progress.step", path);
    p.epoch = read_scalar<int64_t>(archive, "progress.epoch", path);
    p.batch_in_epoch = read_scalar<int64_t>(archive, "progress.batch_in_epoch", path);
    p.best_score = read_scalar<double>(archive, "progress.best_score", path);
    p.has_best = read_scalar<bool>(archive, "progress.has_best", path);
    c10::IValue best_model, has_best_model;  // absent before end-of-run validations were told apart
    p.best_model_score = archive.try_read("progress.best_model_score", best_model) ? best_model.toDouble() : p.best_score;
    p.has_best_model = archive.try_read("progress.has_best_model", has_best_model) ? has_best_model.toBool() : p.has_best;
    p.bad_validations = read_scalar<int64_t>(archive, "progress.bad_validations", path);
    p.lr_bad_validations = read_scalar<int64_t>(archive, "progress.lr_bad_validations", path);
    p.learning_rate = read_scalar<double>(archive, "progress.learning_rate", path);
    p.skipped_steps = read_scalar<int64_t>(archive, "progress.skipped_steps", path);
    p.train_seconds = read_scalar<double>(archive, "progress.train_seconds", path);
    p.target_tokens = read_scalar<int64_t>(archive, "progress.target_tokens", path);
    c10::IValue world;  // absent in checkpoints written before distributed training: one process
    p.world_size = archive.try_read("progress.world_size", world) ? world.toInt() : 1;
  } catch (const c10::Error& e) {
    throw InputError("checkpoint '" + path + "' is corrupted (" + first_line(e.what_without_backtrace()) + ")");
  }
}

std::optional<std::string> CheckpointFile::bytes_of(const std::string& key) {
  torch::Tensor t;
  try {
    if (!archive_.try_read(key, t)) return std::nullopt;
  } catch (const c10::Error& e) {
    throw InputError("checkpoint '" + path_ + "': its '" + key + "' entry is corrupted (" +
                     first_line(e.what_without_backtrace()) + ")");
  }
  if (t.scalar_type() != torch::kUInt8 || t.dim() != 1) {
    throw InputError("checkpoint '" + path_ + "': its '" + key + "' entry is not a byte string");
  }
  t = t.contiguous();
  const auto* p = reinterpret_cast<const char*>(t.data_ptr<uint8_t>());
  return std::string(p, p + t.numel());
}

std::optional<Tokenizers> CheckpointFile::tokenizers() {
  if (header_.format < 2) return std::nullopt;
  const bool shared = read_scalar<bool>(archive_, "tokenizer.shared", path_);
  auto load = [&](const std::string& key) {
    auto bytes = bytes_of(key);
    if (!bytes) throw InputError("checkpoint '" + path_ + "' has no '" + key + "' entry");
    return std::make_shared<Tokenizer>(Tokenizer::from_bytes(*bytes, path_ + " (" + key + ")"));
  };
  Tokenizers t;
  t.src = load("tokenizer.src");
  t.tgt = shared ? t.src : load("tokenizer.tgt");
  return t;
}

std::shared_ptr<const Lexicon> CheckpointFile::lexicon() {
  if (header_.format < 2) return nullptr;
  auto bytes = bytes_of("lexicon");
  if (!bytes) return nullptr;
  return std::make_shared<const Lexicon>(parse_lexicon(*bytes, path_ + " (lexicon)"));
}

void CheckpointFile::load_state(Seq2Seq& model, torch::optim::Optimizer* optimizer, bool restore_rng) {
  auto& archive = archive_;
  const auto& path = path_;
  try {
    torch::serialize::InputArchive model_archive;
    if (archive.try_read("model_int8", model_archive)) {
      load_int8_archive(model_archive, model, path);
    } else {
      archive.read("model", model_archive);
      model->load(model_archive);
    }
    if (optimizer) {
      torch::serialize::InputArchive optim_archive;
      if (!archive.try_read("optimizer", optim_archive)) {
        throw InputError("checkpoint '" + path +
                         "' has no optimizer state (best.pt is for decoding: resume from a ckpt.<step>.pt)");
      }
      optimizer->load(optim_archive);
    }
    if (restore_rng) {
      torch::Tensor state;
      archive.read("rng.cpu", state);
      auto generator = at::detail::getDefaultCPUGenerator();
      generator.set_state(state);
    }
  } catch (const c10::Error& e) {
    throw InputError("checkpoint '" + path + "' does not match the model or is corrupted (" +
                     first_line(e.what_without_backtrace()) + ")");
  }
}

bool CheckpointFile::load_trained_weights(Seq2Seq& model) {
  torch::serialize::InputArchive trained_archive;
  if (!archive_.try_read("trained_weights", trained_archive)) return false;
  torch::NoGradGuard no_grad;
  const auto parameters = model->parameters();
  try {
    for (size_t i = 0; i < parameters.size(); ++i) {
      torch::Tensor t;
      trained_archive.read("p" + std::to_string(i), t);
      if (t.sizes() != parameters[i].sizes()) {
        throw InputError("checkpoint '" + path_ + "': trained weight " + std::to_string(i) + " does not match the model");
      }
      parameters[i].copy_(t);
    }
    torch::Tensor extra;
    if (trained_archive.try_read("p" + std::to_string(parameters.size()), extra)) {
      throw InputError("checkpoint '" + path_ + "': more trained weights than the model has parameters");
    }
  } catch (const c10::Error& e) {
    throw InputError("checkpoint '" + path_ + "': its trained weights do not match the model or are corrupted (" +
                     first_line(e.what_without_backtrace()) + ")");
  }
  return true;
}

std::vector<std::string> list_step_checkpoints(const std::string& save_dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(save_dir, ec)) return {};
  for (const auto& entry : fs::directory_iterator(save_dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("ckpt.", 0) != 0 || name.size() < 9 || name.substr(name.size() - 3) != ".pt") continue;
    const auto digits = name.substr(5, name.size() - 8);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    found.emplace_back(std::stoll(digits), entry.path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

bool has_model(const std::string& model) {
  std::error_code ec;
  if (!fs::exists(model, ec)) return false;
  if (!fs::is_directory(model, ec)) return true;
  return fs::exists(fs::path(model) / "best.pt", ec) || !list_step_checkpoints(model).empty();
}

std::string find_model_file(const std::string& model, const std::string& checkpoint) {
  if (!checkpoint.empty()) return checkpoint;
  std::error_code ec;
  if (!fs::exists(model, ec)) throw InputError("model '" + model + "' does not exist (give a model file or a save dir)");
  if (!fs::is_directory(model, ec)) return model;
  const auto best = (fs::path(model) / "best.pt").string();
  if (fs::exists(best, ec)) return best;
  auto steps = list_step_checkpoints(model);
  if (steps.empty()) throw InputError("no model in '" + model + "' (expected best.pt or ckpt.<step>.pt)");
  return steps.front();
}

namespace {

struct EarlyModel {
  Config config;
  Tokenizers tokenizers;
  VocabSizes vocab;
  Seq2Seq model{nullptr};
};

// Whether two configs build the same model with the same tokenizers.
bool same_model(const Config& a, const Config& b) {
  auto part = [](const Config& c) {
    Config p;
    p.model = c.model;
    p.tokenizer = c.tokenizer;
    return config_to_yaml(p);
  };
  return part(a) == part(b);
}

bool same_vocab(const VocabSizes& a, const VocabSizes& b) {
  return a.src == b.src && a.tgt == b.tgt && a.pad_id == b.pad_id && a.bos_id == b.bos_id && a.eos_id == b.eos_id;
}

}  // namespace

void check_decode_settings(const std::vector<std::string>& settings) {
  for (const auto& s : settings) {
    const auto key = s.substr(0, s.find('='));
    // An unknown key is the config loader's to refuse (it suggests the closest one).
    if (may_change(key, KeyScope::load) || !is_key_or_section(key)) continue;
    throw InputError("--set " + s + ": a trained model takes only " + describe_keys(keys_that_may_change(KeyScope::load)));
  }
}

LoadedModel load_model(const std::string& model, const std::string& checkpoint, const std::string& device,
                       const std::vector<std::string>& settings) {
  check_decode_settings(settings);
  LoadedModel m;
  m.checkpoint = find_model_file(model, checkpoint);
  const auto dir = fs::path(m.checkpoint).parent_path().string();
  const auto here = dir.empty() ? std::string(".") : dir;
  // Building the model draws its initial weights (LibTorch's modules do it in their constructors,
  // a noticeable part of a load: docs/performance.md, "The model is built while the checkpoint is
  // read"), which the checkpoint then replaces. In a save dir, the model is built from its
  // config.yaml and tokenizers while the checkpoint is read, and kept when the checkpoint's
  // model, tokenizer and vocabulary turn out the same (else built from the checkpoint's config).
  const auto config_yaml = (fs::path(here) / "config.yaml").string();
  std::future<std::optional<EarlyModel>> early;
  if (fs::exists(config_yaml)) {
    early = std::async(std::launch::async, [&]() -> std::optional<EarlyModel> {
      try {
        EarlyModel e;
        e.config = load_config_file(config_yaml, settings);
        e.tokenizers = load_or_train_tokenizers(e.config.tokenizer, here, nullptr, e.config.train.seed);
        e.vocab.src = e.tokenizers.src->vocab_size();
        e.vocab.tgt = e.tokenizers.tgt->vocab_size();
        e.model = Seq2Seq(e.config.model, e.vocab);
        return e;
      } catch (...) {
        return std::nullopt;  // no usable save dir: built below, from the checkpoint alone
      }
    });
  }
  CheckpointFile file(m.checkpoint);
  const auto& header = file.header();
  m.config = settings.empty() ? header.config
                              : parse_config(config_to_yaml(header.config), m.checkpoint + " (stored config)", settings);
  auto stored = file.tokenizers();
  std::optional<EarlyModel> e;
  if (early.valid()) e = early.get();
  if (e && same_model(e->config, m.config) && same_vocab(e->vocab, header.vocab)) m.model = e->model;
  if (stored) {
    m.tokenizers = std::move(*stored);
  } else {  // format 1: the tokenizers of the directory it is in
    m.tokenizers = e && m.model ? std::move(e->tokenizers)
                                : load_or_train_tokenizers(m.config.tokenizer, here, nullptr, m.config.train.seed);
  }
  if (m.config.decode.shortlist) {
    // The file's own lexicon, else (format 1, or one built later by `attnmt lexicon`) lexicon.bin
    // beside it.
    m.lexicon = file.lexicon();
    const auto lexicon_file = lexicon_path(here);
    if (!m.lexicon && fs::exists(lexicon_file)) m.lexicon = std::make_shared<const Lexicon>(read_lexicon(lexicon_file));
    if (!m.lexicon) {
      throw InputError("decode.shortlist: model '" + m.checkpoint + "' has no lexicon, nor is there a '" + lexicon_file +
                       "' (build one: attnmt lexicon --model " + model + ", or decode with --shortlist false)");
    }
  }
  if (m.tokenizers.src->vocab_size() != header.vocab.src || m.tokenizers.tgt->vocab_size() != header.vocab.tgt) {
    throw InputError("tokenizer model of '" + m.checkpoint + "' has " + std::to_string(m.tokenizers.src->vocab_size()) +
                     "/" + std::to_string(m.tokenizers.tgt->vocab_size()) + " pieces but the checkpoint was trained with " +
                     std::to_string(header.vocab.src) + "/" + std::to_string(header.vocab.tgt));
  }
  if (!m.model) m.model = Seq2Seq(m.config.model, header.vocab);
  file.load_state(m.model, nullptr, /*restore_rng=*/false);
  m.model->to(parse_device(device.empty() ? m.config.device : device));
  m.model->eval();
  return m;
}

}  // namespace attnmt
