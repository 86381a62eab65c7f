#include "cli/sweep_cmd.h"

#include <fmt/format.h>

#include <filesystem>
#include <thread>

#include "cli/sweep/runner.h"
#include "cli/sweep/slurm.h"
#include "cli/sweep/spec.h"
#include "cli/sweep/store.h"
#include "sim/common/error.h"

namespace tessera::cli {
namespace fs = std::filesystem;
using namespace tessera::sweep;

void add_sweep_options(CLI::App* cmd, SweepArgs& a) {
  cmd->add_option("spec", a.spec, "sweep spec, JSON or YAML (docs/sweep.md)")->required();
  cmd->add_option("--out", a.out, "results directory: results.jsonl, results.csv, per-point configs, results and logs")
      ->required();
  cmd->add_option("--jobs", a.jobs, "points at once (default: one per core)");
  cmd->add_flag("--resume", a.resume, "continue a sweep in --out: finished points are not run again");
  cmd->add_flag("--retry-failed", a.retry_failed, "with --resume: run again the points that ended in an error, "
                                                  "timeout or crash");
  cmd->add_option("--backend", a.backend, "local (processes on this machine) or slurm (one sbatch job array)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  cmd->add_option("--chunk-points", a.chunk_points, "slurm: points per array task (default: at most 100 tasks)");
  cmd->add_option("--sbatch-arg", a.sbatch_args, "slurm: an argument for sbatch, e.g. --sbatch-arg=--partition=debug "
                                                 "(repeatable)");
  cmd->add_flag("--dry-run", a.dry_run, "list the points (index, key, values) and run nothing");
  cmd->add_flag("--quiet", a.quiet, "no progress output");
  cmd->add_option("--worker-chunks", a.worker_chunks)->group("");  // Slurm array tasks only
  cmd->add_option("--worker-task", a.worker_task)->group("");
}

namespace {

unsigned default_jobs(unsigned jobs) {
  return jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
}

int finish(const Store& store, const std::vector<Point>& points, bool interrupted) {
  const auto done = store.load();
  store.finalize(points, done);
  std::size_t ok = 0, failed = 0, missing = 0;
  for (const Point& p : points) {
    auto it = done.find(p.key);
    if (it == done.end()) ++missing;
    else (it->second["status"] == "ok" ? ok : failed)++;
  }
  fmt::print("{} points: {} ok, {} failed{}; {} and {}\n", points.size(), ok, failed,
             missing ? fmt::format(", {} not run", missing) : "", store.path("results.jsonl"),
             store.path("results.csv"));
  if (interrupted) fmt::print("interrupted: run again with --resume to finish the sweep\n");
  else if (missing) fmt::print("{} points did not run: run again with --resume to submit only those\n", missing);
  return interrupted || missing ? 1 : 0;
}

}  // namespace

int sweep_cmd(const SweepArgs& a) {
  // options of the other backend would be ignored without a word
  if (a.worker_chunks.empty() && a.backend != "slurm" && (a.chunk_points || !a.sbatch_args.empty()))
    throw Error("--chunk-points and --sbatch-arg apply to --backend slurm; the local backend would ignore them");
  if (a.worker_chunks.empty() && a.backend == "slurm" && a.jobs)
    throw Error("--jobs applies to --backend local; on Slurm each array task runs its points on the CPUs sbatch gives "
                "it (--sbatch-arg=--cpus-per-task=N)");
  const Spec spec = load_spec(a.spec);
  RunOptions ro;
  ro.tessera = self_executable();
  ro.jobs = default_jobs(a.jobs);
  ro.progress = !a.quiet;
  const std::vector<Point> points = expand(spec, build_id(ro.tessera));
  if (!a.worker_chunks.empty()) {
    const char* cpus = std::getenv("SLURM_CPUS_PER_TASK");
    ro.jobs = cpus ? std::max(1, std::atoi(cpus)) : 1;
    const RunSummary s = run_worker(spec, points, a.out, a.worker_chunks, a.worker_task, ro);
    return s.interrupted ? 1 : 0;
  }
  if (a.dry_run) {
    for (const Point& p : points) fmt::print("{} {} {}\n", p.index, p.key, p.values.dump());
    fmt::print("{} points\n", points.size());
    return 0;
  }
  if (a.retry_failed && !a.resume) throw Error("--retry-failed goes with --resume (it re-runs points of an earlier run)");
  Store store(a.out);
  const auto done = store.load();
  if (!a.resume && (!done.empty() || fs::exists(store.path("results.jsonl"))))
    throw Error(fmt::format("{} already holds a sweep's results: --resume continues it, or choose another --out", a.out));
  std::vector<Point> todo;
  for (const Point& p : points) {
    auto it = done.find(p.key);
    if (it == done.end() || (a.retry_failed && it->second["status"] != "ok")) todo.push_back(p);
  }
  if (a.resume && !a.quiet)
    fmt::print(stderr, "{} of {} points finished earlier; {} to run\n", points.size() - todo.size(), points.size(),
               todo.size());
  if (todo.empty()) return finish(store, points, false);
  if (a.backend == "slurm") {
    SlurmOptions so{a.spec, a.out, ro.tessera, a.chunk_points, a.sbatch_args};
    const int rc = submit_array(todo, store, so);
    if (rc != 0) fmt::print(stderr, "sbatch exited with status {}; gathering what the tasks wrote\n", rc);
    return finish(store, points, false);
  }
  const RunSummary s = run_points(spec, todo, store, ro);
  return finish(store, points, s.interrupted);
}

}  // namespace tessera::cli
