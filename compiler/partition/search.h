#pragma once
// Searches for a placement around the repair solver (docs/partition.md, "Searches"): the greedy
// O(N) heuristic, random search and simulated annealing (both through the solver's SAMPLE
// mode, as in the MCM paper). What a placement is worth is the caller's: an evaluation that
// returns its throughput, or 0 when it cannot run (out of memory on a chip), which the search
// counts. The searches know nothing of the compiler or the simulator.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/partition/placement.h"

namespace tessera::partition {

struct Score {
  double throughput = 0;  // higher is better; 0: the placement cannot run
  bool fits = true;       // false: out of memory on some chip (the dynamic check)
  double predicted = 0;   // optional: a second opinion (the cost model's), kept beside it
};
using Evaluate = std::function<Score(const Placement&)>;

struct SearchOptions {
  std::string method = "random";   // greedy | random | sa
  std::uint64_t budget_samples = 100;
  double budget_seconds = 0;       // > 0: also stop when this much wall-clock time has passed
  std::uint64_t seed = 1;
  // Simulated annealing: nodes given a new random distribution per step, the starting
  // temperature (relative to the best throughput so far) and its decay per step.
  double sa_node_share = 0.05;
  double sa_start_temperature = 0.05;
  double sa_cooling = 0.98;
};

struct Sample {
  std::uint64_t index = 0;  // 1-based
  double throughput = 0;
  double best = 0;          // best throughput up to and including this sample
  bool fits = true;
  double predicted = 0;     // Score::predicted
  double seconds = 0;       // wall-clock time since the search started
};

struct SearchResult {
  Placement best;                 // empty when no sample could run
  double best_throughput = 0;
  std::vector<Sample> samples;    // every evaluation, in order (the convergence curve)
  std::uint64_t out_of_memory = 0;
  std::uint64_t unsat = 0;        // solver runs that found no valid placement
};

// How the searches run the solver: nodes in a random topological order, restarts after 200
// undone assignments (doubling), at most 10^5 in all.
SolverOptions solver_options(std::uint64_t seed);

// The greedy heuristic (memory first, the fewest chips): operators in order, each chip filled
// until the next operator's bytes would pass `fill` x `g.chip_capacity_bytes` (or, with no
// capacity, an even share of the nodes), then the solver's FIX mode repairs what the cut broke
// (a triangle). As a search (`method` greedy) it starts at fill 1 and backs off by 0.1 while the
// evaluation says a chip is out of memory, each try a sample.
Placement greedy(const Graph& g, std::uint32_t chips, double fill = 1.0, std::uint64_t seed = 1);

SearchResult search(const Graph& g, std::uint32_t chips, const Evaluate& evaluate, const SearchOptions& options);

}  // namespace tessera::partition
