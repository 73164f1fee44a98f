#include "data/tokenizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>

#include "data/corpus.h"
#include "data/spm_backend.h"
#include "data/toolkit_vocab.h"
#include "data/word_vocab.h"
#include "util/error.h"
#include "util/host_tuning.h"
#include "util/process.h"
#include "util/progress.h"
#include "util/logging.h"
#include "util/text_io.h"

namespace attnmt {

namespace fs = std::filesystem;

namespace {

// `count` of the lines drawn at random without replacement (seeded), kept in their order:
// SentencePiece's trainer grows in time and memory with its input, and a few million lines
// give the same pieces (its documentation recommends sampling).
std::vector<size_t> sample_indices(size_t total, size_t count, uint64_t seed) {
  std::vector<size_t> index(total);
  for (size_t i = 0; i < index.size(); ++i) index[i] = i;
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ULL + 0x5A17ULL);
  for (size_t i = 0; i < count; ++i) std::swap(index[i], index[i + static_cast<size_t>(gen() % (index.size() - i))]);
  index.resize(count);
  std::sort(index.begin(), index.end());
  return index;
}

// The lines SentencePiece trains on: every line of `sides` in order (the files one after the
// other), or a sample of tokenizer.input_sentence_size of them. `total` gets the number of lines.
using TrainingLines = std::function<std::vector<std::string>(size_t sample, uint64_t seed, size_t& total)>;

TrainingLines lines_in_memory(const std::vector<const std::vector<std::string>*>& sides) {
  return [sides](size_t sample, uint64_t seed, size_t& total) {
    std::vector<std::string> all;
    for (const auto* side : sides) all.insert(all.end(), side->begin(), side->end());
    total = all.size();
    if (sample == 0 || all.size() <= sample) return all;
    std::vector<std::string> out;
    out.reserve(sample);
    for (size_t i : sample_indices(all.size(), sample, seed)) out.push_back(std::move(all[i]));
    return out;
  };
}

// The same lines as lines_in_memory over the files' contents (`total` lines in all), read as a
// stream: only the sample is held in memory.
TrainingLines lines_in_files(const std::vector<std::string>& files, size_t total) {
  return [files, total](size_t sample, uint64_t seed, size_t& lines) {
    const auto start = std::chrono::steady_clock::now();
    const bool all = sample == 0 || total <= sample;
    const auto chosen = all ? std::vector<size_t>{} : sample_indices(total, sample, seed);
    std::vector<std::string> out;
    out.reserve(all ? total : sample);
    std::string line;
    size_t index = 0, next = 0;
    Progress progress("[data] reading the lines to train on", "lines", static_cast<int64_t>(total));
    for (const auto& file : files) {
      LineReader reader(file);
      for (; reader.next(line); ++index) {
        if (index % 65536 == 0) progress.update(static_cast<int64_t>(index));
        if (all || (next < chosen.size() && chosen[next] == index)) {
          out.push_back(line);
          ++next;
        }
      }
    }
    lines = index;
    spdlog::info("[data] read {} lines ({} to train on) in {:.1f}s", group_thousands(static_cast<int64_t>(index)),
                 group_thousands(static_cast<int64_t>(out.size())),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return out;
  };
}

// The pairs of each corpus, counted in one pass that also checks them: both sides of every line
// readable UTF-8, the same number of lines on both sides, no empty corpus.
std::vector<size_t> count_pairs(const std::vector<CorpusConfig>& corpora) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<size_t> counts;
  std::string a, b;
  Progress progress("[data] counting lines", "pairs", 0);
  size_t total = 0;
  for (size_t c = 0; c < corpora.size(); ++c) {
    const std::string what = training_corpus_name(c, corpora.size());
    PairReader pairs(corpora[c], what);
    while (pairs.next(a, b)) {
      if (++total % 65536 == 0) progress.update(static_cast<int64_t>(total));
    }
    if (pairs.line_number() == 0) throw InputError(what + ": '" + corpora[c].src + "' is empty");
    counts.push_back(pairs.line_number());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("[data] counted {} pairs in {:.1f}s ({} pairs/s)", group_thousands(static_cast<int64_t>(total)), seconds,
               group_thousands(static_cast<int64_t>(static_cast<double>(total) / std::max(seconds, 1e-3))));
  return counts;
}

std::string executable_dir() {
  try {
    return fs::path(self_executable()).parent_path().string();
  } catch (const Error&) {
    return ".";
  }
}

// The directory of the file this code is in: the program (linked statically), or libattnmt.so /
// the Python module when one of those loaded it.
std::string code_dir() {
  Dl_info info;
  if (!::dladdr(reinterpret_cast<void*>(&code_dir), &info) || !info.dli_fname) return executable_dir();
  return fs::path(info.dli_fname).parent_path().string();
}

// Loads libattnmt_spm.so once: $ATTNMT_SPM_PLUGIN; beside the code (an installed libattnmt.so:
// <libdir>/attnmt/); next to the executable, its parent (tests live in build/tests), or, installed,
// <libdir>/attnmt/ from <bindir> (ATTNMT_PLUGIN_FROM_BIN); or the build directory it was compiled in.
using CreateFn = TokenizerBackend* (*)();
// AddressSanitizer refuses RTLD_DEEPBIND. Sanitized builds (scripts/fuzz.sh, scripts/sanitize.sh)
// load the module without it: fine in processes without LibTorch (the fuzzers), while sanitized
// LibTorch processes must not load SentencePiece (sanitize.sh leaves those tests out).
#if defined(__SANITIZE_ADDRESS__)
#define ATTNMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNMT_ASAN 1
#endif
#endif
#ifdef ATTNMT_ASAN
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL;
#else
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
CreateFn spm_factory() {
  static CreateFn create = [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("ATTNMT_SPM_PLUGIN")) candidates.emplace_back(env);
    const auto code = code_dir();
    candidates.push_back(code + "/libattnmt_spm.so");
    candidates.push_back(code + "/attnmt/libattnmt_spm.so");
    const auto exe = executable_dir();
    candidates.push_back(exe + "/libattnmt_spm.so");
    candidates.push_back(exe + "/../libattnmt_spm.so");
    candidates.push_back(exe + "/" ATTNMT_PLUGIN_FROM_BIN "/libattnmt_spm.so");
    candidates.push_back(std::string(ATTNMT_PLUGIN_DIR) + "/libattnmt_spm.so");
    std::string errors;
    for (const auto& path : candidates) {
      if (!fs::exists(path)) continue;
      void* handle = ::dlopen(path.c_str(), kDlopenFlags);
      if (!handle) {
        errors += std::string(" ") + ::dlerror();
        continue;
      }
      if (auto fn = reinterpret_cast<CreateFn>(::dlsym(handle, "attnmt_spm_create"))) return fn;
    }
    throw RuntimeError("cannot load the SentencePiece module libattnmt_spm.so (looked next to the program and in " +
                       std::string(ATTNMT_PLUGIN_DIR) + ")" + errors);
    return CreateFn{nullptr};
  }();
  return create;
}

// tokenizer.type's backend.
std::unique_ptr<TokenizerBackend> new_backend(TokenizerType type) {
  if (type == TokenizerType::none) return std::make_unique<WordVocab>();
  return std::unique_ptr<TokenizerBackend>(spm_factory()());
}

// The backend that reads a model starting with `head`.
std::unique_ptr<TokenizerBackend> backend_for(const std::string& head) {
  if (ToolkitVocab::is_toolkit_vocab(head)) {
    return std::make_unique<ToolkitVocab>([] { return new_backend(TokenizerType::sentencepiece); });
  }
  return new_backend(WordVocab::is_word_vocab(head) ? TokenizerType::none : TokenizerType::sentencepiece);
}

std::string file_head(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(64, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

}  // namespace

void load_sentencepiece_module() { spm_factory(); }

struct Tokenizer::Impl {
  std::unique_ptr<TokenizerBackend> processor;
};

Tokenizer::Tokenizer(const std::string& model_path) : impl_(std::make_unique<Impl>()), model_path_(model_path) {
  if (!fs::exists(model_path)) throw InputError("tokenizer model '" + model_path + "' does not exist");
  impl_->processor = backend_for(file_head(model_path));
  if (auto error = impl_->processor->load(model_path); !error.empty()) {
    throw InputError("tokenizer model '" + model_path + "' cannot be loaded: " + error);
  }
}

Tokenizer Tokenizer::from_bytes(const std::string& bytes, const std::string& name) {
  Tokenizer t;
  t.impl_ = std::make_unique<Impl>();
  t.impl_->processor = backend_for(bytes);
  t.model_path_ = name;
  if (auto error = t.impl_->processor->load_serialized(bytes); !error.empty()) {
    throw InputError("tokenizer model in " + name + " cannot be loaded: " + error);
  }
  return t;
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

void Tokenizer::train(const std::vector<std::string>& sentences, const std::string& model_prefix,
                      const TokenizerConfig& config, uint64_t seed) {
  std::vector<std::string> nonempty;
  nonempty.reserve(sentences.size());
  for (const auto& s : sentences)
    if (!s.empty()) nonempty.push_back(s);
  if (nonempty.empty()) throw InputError("cannot train a tokenizer: no non-empty sentences");
  (void)seed;  // neither backend draws at random (see the SentencePiece module)
  if (auto error = new_backend(config.type)->train(model_prefix, config, nonempty); !error.empty()) {
    throw RuntimeError("tokenizer training (" + name_string(config.type) + ") failed: " + error);
  }
}

std::vector<int> Tokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  impl_->processor->encode(text, &ids);
  return ids;
}

std::vector<Tokenizer::PieceSpan> Tokenizer::encode_with_offsets(std::string_view text) const {
  std::vector<int> ids;
  std::vector<std::pair<size_t, size_t>> offsets;
  impl_->processor->encode_with_offsets(text, &ids, &offsets);
  std::vector<PieceSpan> spans(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) spans[i] = {ids[i], offsets[i].first, offsets[i].second};
  return spans;
}

std::vector<std::string> Tokenizer::encode_pieces(std::string_view text) const {
  std::vector<std::string> pieces;
  impl_->processor->encode_pieces(text, &pieces);
  return pieces;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (int id : ids)
    if (id != kPad && id != kBos && id != kEos) kept.push_back(id);
  return impl_->processor->decode(kept);
}

std::string Tokenizer::piece(int id) const { return impl_->processor->id_to_piece(id); }
float Tokenizer::piece_score(int id) const { return impl_->processor->piece_score(id); }
bool Tokenizer::piece_is_normal(int id) const { return impl_->processor->piece_is_normal(id); }
int Tokenizer::vocab_size() const { return impl_->processor->piece_size(); }
TokenizerType Tokenizer::type() const {
  if (const auto* converted = dynamic_cast<const ToolkitVocab*>(impl_->processor.get())) {
    return converted->has_sentencepiece() ? TokenizerType::sentencepiece : TokenizerType::none;
  }
  return dynamic_cast<const WordVocab*>(impl_->processor.get()) ? TokenizerType::none : TokenizerType::sentencepiece;
}
std::string Tokenizer::serialized() const { return impl_->processor->serialized(); }

bool Tokenizer::same_vocabulary(const Tokenizer& other) const {
  if (type() != other.type() || vocab_size() != other.vocab_size()) return false;
  for (int id = 0; id < vocab_size(); ++id) {
    if (piece(id) != other.piece(id)) return false;
  }
  return true;
}

namespace {

// Loads SAVE_DIR/spm*.model, training the missing ones first on `lines(prefix)`.
Tokenizers load_or_train(const TokenizerConfig& config, const std::string& save_dir, bool can_train,
                         const std::function<TrainingLines(const std::string& side)>& lines, uint64_t seed) {
  std::error_code ec;
  fs::create_directories(save_dir, ec);
  if (ec) throw InputError("cannot create '" + save_dir + "': " + ec.message());
  auto path = [&](const std::string& name) { return (fs::path(save_dir) / name).string(); };
  auto ensure = [&](const std::string& prefix, const std::string& side) {
    const auto model = path(prefix + ".model");
    if (fs::exists(model)) {
      auto tok = std::make_shared<Tokenizer>(model);
      if (tok->type() != config.type) {
        throw InputError("tokenizer model '" + model + "' is of tokenizer.type " + name_string(tok->type()) +
                         ", the config says " + name_string(config.type) + ": choose another train.save_dir or remove the model");
      }
      return tok;
    }
    if (!can_train) throw InputError("no tokenizer model in '" + save_dir + "' (expected '" + model + "')");
    size_t lines_total = 0;
    const size_t sample = config.type == TokenizerType::sentencepiece ? static_cast<size_t>(config.input_sentence_size) : 0;
    std::vector<std::string> all = lines(side)(sample, seed, lines_total);
    const auto start = std::chrono::steady_clock::now();
    // Trained under a temporary name and renamed into place (.vocab first, .model last): a run
    // killed meanwhile leaves no half-written model that the next run would take for a real one.
    const auto temp = path(prefix + ".tmp." + std::to_string(::getpid()));
    {
      WaitingProgress waiting("[data] training the " + std::string(config.type == TokenizerType::none ? "word vocabulary" : "SentencePiece model") +
                              " on " + group_thousands(static_cast<int64_t>(all.size())) + " lines");
      Tokenizer::train(all, temp, config, seed);
    }
    const size_t trained_on = all.size();
    std::vector<std::string>().swap(all);
    release_free_memory();  // what SentencePiece's trainer held should not stay under what follows
    fs::rename(temp + ".vocab", path(prefix + ".vocab"), ec);
    fs::rename(temp + ".model", model, ec);
    if (ec) throw RuntimeError("cannot write '" + model + "': " + ec.message());
    auto tok = std::make_shared<Tokenizer>(model);
    const auto kind = config.type == TokenizerType::none ? std::string("word vocabulary (tokenizer.type none)")
                                                         : "SentencePiece " + name_string(config.model_type) + " model";
    const std::string sampled = trained_on < lines_total ? " (a sample of the " + group_thousands(static_cast<int64_t>(lines_total)) +
                                                               ", tokenizer.input_sentence_size)"
                                                         : "";
    spdlog::info("[data] trained {}, {} pieces, on {} lines{} in {:.1f}s -> {}", kind,
                 tok->vocab_size(), trained_on, sampled,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), model);
    return tok;
  };
  Tokenizers t;
  if (config.shared) {
    t.src = ensure("spm", "both");
    t.tgt = t.src;
  } else {
    t.src = ensure("spm.src", "src");
    t.tgt = ensure("spm.tgt", "tgt");
  }
  return t;
}

}  // namespace

Tokenizers load_or_train_tokenizers(const TokenizerConfig& config, const std::string& save_dir,
                                    const ParallelText* train_text, uint64_t seed) {
  return load_or_train(
      config, save_dir, train_text != nullptr,
      [&](const std::string& side) {
        std::vector<const std::vector<std::string>*> sides;
        if (side != "tgt") sides.push_back(&train_text->src);
        if (side != "src") sides.push_back(&train_text->tgt);
        return lines_in_memory(sides);
      },
      seed);
}

Tokenizers load_or_train_tokenizers(const TokenizerConfig& config, const std::string& save_dir,
                                    const std::vector<CorpusConfig>& corpora, uint64_t seed) {
  std::optional<size_t> pairs;  // counted (and checked) once, when a model is to be trained
  return load_or_train(
      config, save_dir, true,
      [&](const std::string& side) {
        if (!pairs) {
          const auto counts = count_pairs(corpora);
          pairs = std::accumulate(counts.begin(), counts.end(), size_t{0});
        }
        std::vector<std::string> files;
        if (side != "tgt")
          for (const auto& c : corpora) files.push_back(c.src);
        if (side != "src")
          for (const auto& c : corpora) files.push_back(c.tgt);
        return lines_in_files(files, side == "both" ? 2 * *pairs : *pairs);
      },
      seed);
}

}  // namespace attnmt
