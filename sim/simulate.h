#pragma once
// Entry point of the simulator library. SystemC allows one elaboration per process, so each
// simulation runs in a forked child process and hands its results back as JSON; callers can run
// as many simulations as they like, one after another or side by side.
#include <functional>
#include <string>

#include "sim/common/json_reader.h"
#include "sim/config/config.h"
#include "sim/program/program.h"

namespace tessera::sim {

struct SimOptions {
  std::string trace_path;  // empty: no trace
  // Simulate in this process instead of a forked child. Only for a process that simulates once
  // (SystemC elaborates once per process); saves forking a process that holds a huge program.
  bool in_process = false;
  std::string collective_engine = "ideal";  // what runs the program's collective items
  // Reference for tests: each core runs its relayout steps as the items they stand for on its
  // own thread, matched with the plain messages (slower; same timing).
  bool relayouts_by_items = false;
  // Replay the stretches between global barriers that repeat from an idle state instead of
  // simulating them again (sim/system/fast_forward.h): the same results, field for field, but
  // the results' "fast_forward" counts. Off: the reference.
  bool fast_forward = true;
};

struct SimOutcome {
  Json results;                   // docs/results.md; deterministic
  double host_cpu_seconds = 0;    // CPU time of the simulation proper (not in results: not deterministic)
};

SimOutcome simulate(const Config& cfg, const Program& prog, const SimOptions& options = {});

// Runs `fn` in a child process; its JSON comes back, its exceptions are rethrown with their type
// (Error, ProgramError, SimulationError) and message.
Json run_isolated(const std::function<Json()>& fn);

// CPU seconds used by this process so far.
double process_cpu_seconds();

}  // namespace tessera::sim
