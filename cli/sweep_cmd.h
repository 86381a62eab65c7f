#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tessera::cli {

struct SweepArgs {
  std::string spec, out, backend = "local";
  unsigned jobs = 0;  // 0: one per core
  bool resume = false, retry_failed = false, dry_run = false, quiet = false;
  std::size_t chunk_points = 0;
  std::vector<std::string> sbatch_args;
  std::string worker_chunks;  // an array task of the Slurm backend (internal)
  std::size_t worker_task = 0;
};

void add_sweep_options(CLI::App* cmd, SweepArgs& a);
// `tessera sweep SPEC --out DIR`: every point of a sweep spec as its own tessera process, locally
// or as a Slurm job array; results.jsonl and results.csv in DIR (docs/sweep.md).
int sweep_cmd(const SweepArgs& a);

}  // namespace tessera::cli
