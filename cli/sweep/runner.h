#pragma once
// Runs sweep points, each as its own tessera process with a wall-clock and an address-space
// limit; a crash, hang, out-of-memory or bad point is recorded with its error and the sweep goes
// on (docs/sweep.md).
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "cli/sweep/spec.h"
#include "cli/sweep/store.h"

namespace tessera::sweep {

struct RunOptions {
  std::string tessera;      // the executable run per point (this one)
  unsigned jobs = 1;        // points at once
  bool progress = true;     // a status line (a terminal) or a line per point
};

struct RunSummary {
  std::size_t ran = 0, ok = 0, failed = 0;
  bool interrupted = false;  // SIGINT or SIGTERM: children killed, finished points kept
};

// Runs `points` (already without the finished ones), appending each to the store as it ends.
// Points with the same key run once.
RunSummary run_points(const Spec& spec, const std::vector<Point>& points, Store& store, const RunOptions& opt);

// The address space each point may use: the spec's limit, or 90% of RAM shared by the jobs.
double point_memory_gb(const Spec& spec, unsigned jobs);

// Forks and runs args[0] (looked up on PATH when it has no '/'); `in_child` runs in the child
// just before the exec (limits, redirections). A failed exec exits 127 with the reason on stderr.
pid_t spawn(std::vector<std::string> args, const std::function<void()>& in_child);

// The path of this executable and a hash of its bytes (a point's key includes the build).
std::string self_executable();
std::string build_id(const std::string& executable);

}  // namespace tessera::sweep
