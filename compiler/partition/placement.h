#pragma once
// Placing a model's operators on chips (or chiplets) of a ring: the MCM partitioning paper's
// static constraints (its §3, docs/partition.md) as a validator that says which one failed and
// where, and a repair solver that turns any proposal into a placement that passes them, or
// proves that none exists.
//
// First part of issue 16: the graph, the constraints, the solver (SAMPLE and FIX modes). Not
// yet: placements from the compiler's own graphs and schedules, per-chip programs, pipelined
// execution on the simulator, and the searches around the solver.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::partition {

// A DAG of operators: nodes 0..nodes-1, edges (u, v) with data flowing from u to v. Memory is
// optional: when `chip_capacity_bytes` > 0 the nodes placed on a chip may hold at most that much
// in all (a static stand-in for the per-chip memory check; the compiler's schedule decides it
// in full).
struct Graph {
  std::uint32_t nodes = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  std::vector<std::string> names;          // optional, for messages
  std::vector<std::uint64_t> node_bytes;   // optional, per node
  std::uint64_t chip_capacity_bytes = 0;   // 0: no memory constraint
  std::string name_of(std::uint32_t n) const;
};

using Placement = std::vector<std::uint32_t>;  // node -> chip

struct Violation {
  enum Kind : std::uint8_t { Backward, SkippedChip, Triangle, Memory } kind;
  std::string what;  // which nodes and chips, in words
};

// The constraints on chips 0..chips-1 joined one way (data flows from a lower chip to a higher
// one): no edge goes back (Eq. 2), the chips in use are 0..k with none skipped (Eq. 3), a
// cross-chip edge joins two chips with no longer path between them in the chip graph (Eq. 4),
// and no chip holds more than its capacity. Returns the first that fails. Throws Error for a
// placement of the wrong length, a chip out of range, or an edge to a node that does not exist.
std::optional<Violation> check(const Graph& g, const Placement& f, std::uint32_t chips);

struct SolverOptions {
  std::uint64_t seed = 1;
  // The order nodes are decided in: a random permutation, or a random topological order (a node
  // after its producers; decisions then stay local on chain-like models such as BERT, where a
  // random permutation backtracks without end).
  enum Order : std::uint8_t { Random, Topological } order = Random;
  // > 0: after this many undone assignments the search starts over with a new order, the limit
  // doubling each time (randomised restarts; a dead end deep down is not worked through).
  std::uint64_t restart_failures = 0;
  std::uint64_t max_failures = 1000000;  // then it gives up (GaveUp), rather than search on
};

struct SolveResult {
  enum Status : std::uint8_t { Solved, Unsat, GaveUp } status = Unsat;
  Placement placement;          // when Solved: passes check()
  std::uint64_t failures = 0;   // assignments undone
};

// SAMPLE mode: nodes in a random order (from the seed), each given a chip drawn from its
// distribution (`probabilities[node][chip]`; empty: uniform) restricted to the chips still
// possible; propagation after each; chronological backtracking on a dead end.
SolveResult solve_sample(const Graph& g, std::uint32_t chips, const std::vector<std::vector<double>>& probabilities,
                         const SolverOptions& options = {});
// FIX mode: a proposal's chip is kept wherever it is still possible, other nodes get a random
// possible chip; the same search.
SolveResult solve_fix(const Graph& g, std::uint32_t chips, const Placement& proposal, const SolverOptions& options = {});

}  // namespace tessera::partition
