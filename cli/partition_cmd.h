#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "cli/compile_cmd.h"

namespace tessera::cli {

struct PartitionArgs {
  CompileArgs model;               // --config, --workload, --batch, ...
  std::string search = "greedy";   // greedy | random | sa
  std::string score_by = "simulate";  // simulate | model
  std::uint64_t budget_samples = 20;
  double budget_seconds = 0;
  std::uint64_t seed = 1;
  std::uint32_t micro_batches = 4;
  std::string chips_per_device = "1";  // the placement's unit: groups of this many consecutive chips, or "auto"
  double weights_share = 0.6;      // of a chip's scratchpads, for weights in the static check
  std::string placement;           // evaluate this placement instead of searching
  std::string out, results, program;
  bool one_chip = false;           // also run the whole model on one chip, for the ratio
  bool serve = false;              // answer proposals on stdin (FIX repair and score), one JSON line each
};

void add_partition_options(CLI::App* cmd, PartitionArgs& a);
// `tessera partition`: place a model's operators on the chips of a system (greedy, random
// search, annealing around the repair solver), compile every chip's share and run the pipeline on
// the simulator; convergence, per-chip times, interval and latency (docs/partition.md).
int partition_cmd(const PartitionArgs& a);

}  // namespace tessera::cli
