// attnmt train CONFIG.yaml [--set key=value ...] [--resume]
//              [--nproc K [--nnodes M --node-rank R] [--max-restarts N] | --distributed]
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "config/loader.h"
#include "train/distributed.h"
#include "train/launcher.h"
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
  int nnodes = 1;
  int node_rank = 0;
  int max_restarts = 0;
  bool distributed = false;
};

// The launcher's options, which its ranks' command line leaves out (each with a value).
const std::vector<std::string> kLauncherOptions = {"--nproc", "--nproc-per-node", "--nnodes", "--node-rank", "--max-restarts"};

bool is_launcher_option(const std::string& arg) {
  for (const auto& name : kLauncherOptions) {
    if (arg == name || arg.rfind(name + "=", 0) == 0) return true;
  }
  return false;
}

// Set when the command line asks for a launcher (train/launcher.h).
std::optional<LaunchOptions> launch_options(const TrainOptions& opts, const GlobalOptions& global) {
  if (opts.nproc <= 1 && opts.nnodes <= 1 && opts.node_rank == 0 && opts.max_restarts == 0) return std::nullopt;
  LaunchOptions launch;
  launch.nproc_per_node = opts.nproc;
  launch.nnodes = opts.nnodes;
  launch.node_rank = opts.node_rank;
  launch.max_restarts = opts.max_restarts;
  // each rank runs this command line without the launcher's options, with --distributed
  const auto& args = global.args;
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_launcher_option(args[i])) {
      if (args[i].find('=') == std::string::npos) ++i;  // and its value
      continue;
    }
    launch.worker_args.push_back(args[i]);
  }
  launch.worker_args.push_back("--distributed");
  return launch;
}

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
  request.launch = launch_options(opts, global);
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
  auto* nproc = cmd->add_option("--nproc,--nproc-per-node", opts->nproc,
                                "Data-parallel training with K processes on this machine (train.batch_size is per process)")
                    ->check(CLI::Range(1, 1024));
  auto* nnodes = cmd->add_option("--nnodes", opts->nnodes,
                                 "Machines (nodes) in the run, each running this command with its own --node-rank; "
                                 "MASTER_ADDR / MASTER_PORT: node 0's address and a port there")
                     ->check(CLI::Range(1, 1024));
  auto* node_rank = cmd->add_option("--node-rank", opts->node_rank, "This machine's index, 0..nnodes-1 (node 0 has rank 0)");
  auto* max_restarts = cmd->add_option("--max-restarts", opts->max_restarts,
                                       "Restart every rank from the newest checkpoint up to N times when one fails (default 0)");
  cmd->add_flag("--distributed", opts->distributed,
                "Be one rank of a data-parallel run: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (as torchrun sets them)")
      ->excludes(nproc)
      ->excludes(nnodes)
      ->excludes(node_rank)
      ->excludes(max_restarts);
  cmd->callback([opts, &global] {
    setup_logging(global.debug);
    // One rank or launcher of a multi-host run: whatever stops it before it has joined (a bad
    // config, missing data) is told to the others, which would otherwise wait for it.
    double join_timeout = DistributedConfig{}.join_timeout;
    try {
      run_train(*opts, global, join_timeout);
    } catch (const std::exception& e) {
      if (opts->distributed) {
        tell_peers_of_failure(e, join_timeout);
      } else if (auto launch = launch_options(*opts, global)) {
        launch->join_timeout = join_timeout;
        tell_launchers_of_failure(*launch, e);
      }
      throw;
    }
  });
}

}  // namespace attnmt::cli
