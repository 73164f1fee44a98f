// attnmt train's launcher: torchrun's elastic agent with its static rendezvous, for `--nproc K`,
// `--nnodes M --node-rank R` and `--max-restarts N` (docs/training.md, "Restarts").
//
// One launcher per node (host), each starting that node's K ranks. Node 0's launcher hosts a c10d
// TCPStore on MASTER_ADDR:MASTER_PORT (one node: 127.0.0.1 and a free port); the other launchers
// and every rank connect to it. The group runs in rounds, k = 0, 1, ...:
//   1. every launcher joins round k: it waits at most distributed.join_timeout for the others,
//      and refuses one started with other --nnodes / --nproc / --max-restarts or another attnmt;
//   2. each starts its ranks (RANK = R*K + local rank) with torchrun's variables, plus
//      TORCHELASTIC_USE_AGENT_STORE=True and TORCHELASTIC_RESTART_COUNT=k, as torchrun's agent
//      does: the ranks rendezvous on the launchers' store, under the round's own prefix;
//   3. each watches its ranks and the store. The round's failure is a rank killed by a signal, or
//      one that failed with an error of its own (the line it published, train/distributed.h);
//      the launcher that sees it publishes it. Ranks that fail only because another rank did
//      (their collectives break) are named only if nothing else is published within 2 s. Every
//      launcher then stops its ranks (they have usually failed already at their next
//      collective): 2 s, then SIGTERM, then SIGKILL 3 s later;
//   4. with restarts left, every launcher goes to round k+1, whose ranks resume from the newest
//      checkpoint (--resume; node 0's launcher reads its step in train.save_dir, where rank 0
//      writes them, and tells the others); a run with no checkpoint yet starts over. Without
//      restarts left, after bad input (exit code 2: a restart cannot mend it) or after a stop
//      signal, every launcher exits non-zero naming the rank.
// A round ends well when every node's ranks have exited 0.
//
// What a static rendezvous cannot do (torchrun's neither): a node whose launcher is gone cannot
// come back (the others wait for it at the next round for distributed.join_timeout, then stop,
// naming it), and node 0's launcher is the store: if it is killed, every launcher stops.
#pragma once
#include <exception>
#include <string>
#include <vector>

namespace attnmt {

struct LaunchOptions {
  int nproc_per_node = 1;  // ranks on this node (--nproc / --nproc-per-node)
  int nnodes = 1;          // nodes, each running one launcher (--nnodes); > 1 needs MASTER_ADDR / MASTER_PORT
  int node_rank = 0;       // this node, 0..nnodes-1 (--node-rank); node 0 hosts the rendezvous and rank 0
  int max_restarts = 0;    // restarts of the whole group from the newest checkpoint after a rank fails
  // The ranks' command line (argv[1..]): the launcher's options removed, --distributed added.
  std::vector<std::string> worker_args;
  std::string save_dir;       // train.save_dir: where node 0 looks for the step a restart resumes from
  double join_timeout = 300;  // distributed.join_timeout: each round's wait for the other launchers
};

// InputError naming the option when a value is out of range (--node-rank not below --nnodes, a
// negative --max-restarts) or, with --nnodes > 1, MASTER_ADDR / MASTER_PORT are missing or malformed.
void validate(const LaunchOptions& options);

// Runs this node's ranks until the group ends: returns when every rank of every node exited 0;
// an Error naming the rank that failed otherwise (exit code 2 if it failed on bad input, else 1).
// SIGINT / SIGTERM are forwarded to the ranks (they stop together, rank 0 saves) and end the
// restarts.
void launch_workers(const LaunchOptions& options);

// A launcher of a run on several nodes that failed before it reached the rendezvous (a bad config,
// missing data): its error's first line goes to the launchers' store, and the others stop at their
// join with `distributed: node 1 of 2 failed to start: <line>` (exit code 2 for bad input).
// Node 0's launcher hosts the store for it, until the others have read it (at most
// options.join_timeout). Nothing with one node, for invalid options, or once this process's
// launcher has started (it tells the others itself); never throws.
void tell_launchers_of_failure(const LaunchOptions& options, const std::exception& error);

}  // namespace attnmt
