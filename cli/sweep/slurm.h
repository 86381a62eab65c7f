#pragma once
// The Slurm backend (docs/sweep.md): the points still to run go out as one sbatch job array over
// chunks of points; each array task runs its chunk with the local runner and writes its own part
// file (parts/<submission>-<task>.jsonl), which the submitting sweep gathers into results.jsonl.
#include <string>
#include <vector>

#include "cli/sweep/runner.h"

namespace tessera::sweep {

struct SlurmOptions {
  std::string spec_path, out_dir, tessera;
  std::size_t chunk_points = 0;            // points per array task; 0: at most 100 tasks
  std::vector<std::string> sbatch_args;    // passed through (--partition=..., --time=...)
};

// Writes the chunk file and job script, runs `sbatch --wait --array`, returns its exit status.
int submit_array(const std::vector<Point>& todo, const Store& store, const SlurmOptions& opt);

// An array task: runs chunk `task` of `chunks_file` (keys) into its own part file.
RunSummary run_worker(const Spec& spec, const std::vector<Point>& points, const std::string& out_dir,
                      const std::string& chunks_file, std::size_t task, const RunOptions& opt);

}  // namespace tessera::sweep
