// attnmt serve --model [NAME=]MODEL [--model ...] [--host H] [--port P] [--max-batch-sentences N]
//              [--max-wait-ms M] [--workers W] [--max-queue N] [--timeout S] [--api-key KEY | --api-key-file F]
//              [--cors ORIGIN] [--set decode.key=value ...]
// Trained models behind HTTP + JSON with dynamic batching (serve/server.h for the endpoints).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/decode_flags.h"
#include "serve/serve_options.h"
#include "util/error.h"
#include "util/logging.h"

#include "build_features.h"
#ifdef ATTNMT_WITH_HTTP
#include "attention/registry.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/streaming.h"
#include "io/model_file.h"
#include "runtime/compute.h"
#include "serve/server.h"
#endif

namespace attnmt::cli {

void add_serve_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::vector<std::string> models;
    ServeOptions serve;  // its defaults are the help's (serve/serve_options.h)
    std::string api_key, api_key_file;
  };
  auto o = std::make_shared<Options>();
  const ServeOptions defaults;
  auto& so = o->serve;
  auto* cmd = app.add_subcommand("serve", "Serve models over HTTP + JSON, with dynamic batching");
  cmd->add_option("--model", o->models,
                  "[NAME=]MODEL: a model file or save dir, named NAME (default: the file's or dir's name); repeatable")
      ->required();
  cmd->add_option("--host", so.host, fmt::format("Address to listen on (default {}: this machine only)", defaults.host));
  cmd->add_option("--port", so.port, fmt::format("Port (default {}; 0 = any free port, printed)", defaults.port))
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--max-batch-sentences", so.batching.max_batch_sentences,
                  fmt::format("Sentences per search batch, from all requests (default 0: {} on a CPU, where small "
                              "batches of mixed lengths decode faster, {} on a GPU)",
                              kCpuBatchSentences, kGpuBatchSentences))
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--max-wait-ms", so.batching.max_wait_ms,
                  fmt::format("Static batching: how long the oldest waiting sentence waits for others to batch with (default {})",
                              defaults.batching.max_wait_ms))
      ->check(CLI::Range(0, 10000));
  cmd->add_option_function<std::string>(
         "--batching", [&so](const std::string& v) { so.batching.continuous = v == "continuous"; },
         std::string("continuous: sentences join a running search between decoder steps and leave it when done; "
                     "static: a batch is decoded whole before the next starts (default ") +
             (defaults.batching.continuous ? "continuous" : "static") + ")")
      ->check(CLI::IsMember({"continuous", "static"}));
  cmd->add_option("--workers", so.batching.workers,
                  "Batches decoded at once, each on its share of the threads (default 0: one per thread on a CPU)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--max-queue", so.batching.max_queue_sentences,
                  fmt::format("Sentences waiting at most; beyond: 503 (default {})", defaults.batching.max_queue_sentences))
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--max-request-sentences", so.max_request_sentences,
                  fmt::format("Sentences per request at most; beyond: 413 (default {})", defaults.max_request_sentences))
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--max-body-bytes", so.max_body_bytes,
                  fmt::format("Request body size at most; beyond: 413 (default {} bytes)", defaults.max_body_bytes))
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--timeout", so.request_timeout_s,
                  fmt::format("Seconds a request may wait for its translations; then 504 (default {})",
                              defaults.request_timeout_s))
      ->check(CLI::Range(0.001, 86400.0));
  auto* key = cmd->add_option("--api-key", o->api_key,
                              "Require `Authorization: Bearer KEY` on every endpoint but /health and the page "
                              "(default: none; visible in `ps`: prefer --api-key-file)");
  cmd->add_option("--api-key-file", o->api_key_file, "--api-key, read from the first line of this file")
      ->excludes(key);
  cmd->add_option("--cors", so.access.cors_origin,
                  "Let a web page from ORIGIN (e.g. https://example.org, or *) call the API from a browser "
                  "(default: no CORS headers)");
  const auto settings = add_decode_flags(cmd, {{"decode.beam_size", "the default: a request may ask for another"},
                                               {"decode.n_best", "the default: a request may ask for another"},
                                               {"threads"},
                                               {"decode.precision"},
                                               {"device"}});
  cmd->callback([o, settings, &global] {
    setup_logging(global.debug);
#ifdef ATTNMT_WITH_HTTP
    std::vector<LoadedModel> loaded;
    std::vector<std::unique_ptr<Seq2SeqStepModel>> steps;
    std::vector<ServedModel> served;
    loaded.reserve(o->models.size());
    for (const auto& spec : o->models) {
      const auto eq = spec.find('=');
      std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
      const std::string path = eq == std::string::npos ? spec : spec.substr(eq + 1);
      if (eq != std::string::npos && name.empty()) throw InputError("--model " + spec + ": empty NAME before '='");
      if (name.empty()) {
        const std::filesystem::path p(path);
        name = std::filesystem::is_directory(p) ? std::filesystem::absolute(p).lexically_normal().filename().string()
                                                : p.stem().string();
        if (name.empty()) name = std::filesystem::absolute(p).parent_path().filename().string();
      }
      for (const auto& s : served) {
        if (s.name == name) throw InputError("--model " + spec + ": a model named '" + name + "' is already served");
      }
      loaded.push_back(load_model(path, "", "", *settings));
      const auto& m = loaded.back();
      steps.push_back(make_step_model(m.model, m.config.decode, m.lexicon));
      served.push_back({name, m.checkpoint, steps.back().get(), &m.tokenizers, translate_options(m.config.decode)});
      served.back().attention = m.config.model.attention.type;
      served.back().streams = attention_streams(m.config.model.attention);
      served.back().wait_k = default_wait_k(m.config.decode.wait_k, m.config.train.wait_k, /*lookahead=*/0);
      served.back().wait_k_policy = resolve_wait_k_policy(m.config.decode.wait_k_policy, m.config.train.wait_k,
                                                          m.model->streams_source() && !m.config.decode.shortlist);
    }
    configure_compute(loaded.front().config.threads, loaded.front().config.gemm);
    ServeOptions options = o->serve;
    options.batching.cpu = steps.front()->device().is_cpu();
    if (!o->api_key.empty()) validate_api_key(o->api_key);
    options.access.api_key = o->api_key_file.empty() ? o->api_key : read_api_key_file(o->api_key_file);
    serve(served, options);
#else
    throw InputError("serve: this attnmt was built without cpp-httplib (Debian: libcpp-httplib-dev)");
#endif
  });
}

}  // namespace attnmt::cli
