// attnmt train CONFIG.yaml [--set key=value ...] [--resume] [--nproc N | --distributed]
#include <string>
#include <vector>

#include "cli/commands.h"
#include "config/loader.h"
#include "train/distributed.h"
#include "train/trainer.h"
#include "util/logging.h"

namespace attnmt::cli {

namespace {

struct TrainOptions {
  std::string config;
  std::vector<std::string> overrides;
  bool resume = false;
  int threads = -1;
  std::string device;
  int nproc = 1;
  bool distributed = false;
};

// `join_timeout` is set from the config once it is read (a rank that fails tells the others for
// at most that long).
void run_train(const TrainOptions& opts, const GlobalOptions& global, double& join_timeout) {
  auto overrides = opts.overrides;
  if (opts.threads >= 0) overrides.push_back("threads=" + std::to_string(opts.threads));
  if (!opts.device.empty()) overrides.push_back("device=" + opts.device);
  TrainRequest request;
  request.config = load_config_file(opts.config, overrides);
  join_timeout = request.config.distributed.join_timeout;
  request.config_source = opts.config;
  request.resume = opts.resume;
  request.distributed = opts.distributed;
  request.nproc = opts.nproc;
  if (opts.nproc > 1) {  // each rank runs this command line without --nproc, with --distributed
    const auto& args = global.args;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--nproc") {
        ++i;
        continue;
      }
      if (args[i].rfind("--nproc=", 0) == 0) continue;
      request.worker_args.push_back(args[i]);
    }
    request.worker_args.push_back("--distributed");
  }
  train(request);
}

}  // namespace

void add_train_command(CLI::App& app, const GlobalOptions& global) {
  auto opts = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand("train", "Train a model from a YAML experiment config");
  cmd->add_option("config", opts->config, "Experiment config (YAML)")->required();
  cmd->add_option("--set", opts->overrides, "Override a config key: --set train.max_steps=100 (repeatable)")
      ->take_all();
  cmd->add_flag("--resume", opts->resume, "Continue from the newest checkpoint in train.save_dir");
  cmd->add_option("--threads", opts->threads, "Intra-op threads (default: config 'threads', 0 = all cores)");
  cmd->add_option("--device", opts->device, "cpu | cuda | cuda:N (default: config 'device')");
  cmd->add_option("--nproc", opts->nproc,
                  "Data-parallel training with N processes on this machine (train.batch_size is per process)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--distributed", opts->distributed,
                "Be one rank of a data-parallel run: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (as torchrun sets them)")
      ->excludes("--nproc");
  cmd->callback([opts, &global] {
    setup_logging(global.debug);
    // One rank of a multi-host run: whatever stops it before it has joined (a bad config, missing
    // data) is told to the other ranks, which would otherwise wait for it.
    double join_timeout = DistributedConfig{}.join_timeout;
    try {
      run_train(*opts, global, join_timeout);
    } catch (const std::exception& e) {
      if (opts->distributed) tell_peers_of_failure(e, join_timeout);
      throw;
    }
  });
}

}  // namespace attnmt::cli
