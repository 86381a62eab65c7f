// The MCM paper's static constraints (docs/partition.md): its Fig. 2 counterexamples rejected by
// the validator and repaired by the solver, and the solver held to brute force on small graphs.
#include <catch2/catch.hpp>

#include <random>

#include "compiler/partition/placement.h"

using namespace tessera;
using partition::Graph;
using partition::Placement;
using partition::SolveResult;
using partition::Violation;
using Catch::Matchers::Contains;

namespace {
Graph graph(std::uint32_t n, std::vector<std::pair<std::uint32_t, std::uint32_t>> edges) {
  Graph g;
  g.nodes = n;
  g.edges = std::move(edges);
  return g;
}
// Repairs `bad` in FIX mode and checks the result passes; returns it.
Placement repaired(const Graph& g, std::uint32_t chips, const Placement& bad) {
  const SolveResult r = partition::solve_fix(g, chips, bad);
  REQUIRE(r.status == SolveResult::Solved);
  CHECK_FALSE(partition::check(g, r.placement, chips));
  return r.placement;
}
}  // namespace

TEST_CASE("Fig. 2(c): an edge back to a lower chip is rejected and repaired", "[partition]") {
  const Graph g = graph(5, {{0, 1}, {0, 2}, {2, 4}, {1, 3}, {3, 4}});
  const Placement bad{0, 0, 1, 1, 0};  // node 4 on chip 0, fed by node 2 on chip 1
  const auto v = partition::check(g, bad, 2);
  REQUIRE(v);
  CHECK(v->kind == Violation::Backward);
  CHECK_THAT(v->what, Contains("edge node 2 -> node 4 goes from chip 1 back to chip 0"));
  const Placement f = repaired(g, 2, bad);
  CHECK(f[0] == 0);  // kept where it was legal
}

TEST_CASE("Fig. 2(d): a skipped chip is rejected and repaired", "[partition]") {
  const Graph g = graph(3, {{0, 1}, {1, 2}});
  const Placement bad{0, 0, 2};
  const auto v = partition::check(g, bad, 3);
  REQUIRE(v);
  CHECK(v->kind == Violation::SkippedChip);
  CHECK_THAT(v->what, Contains("chip 1 holds no operator, but chip 2 does (node 2)"));
  repaired(g, 3, bad);
  CHECK_FALSE(partition::check(g, {0, 1, 2}, 3));
  CHECK_FALSE(partition::check(g, {0, 0, 0}, 3));  // fewer chips than there are is fine
}

TEST_CASE("Fig. 2(e): a direct edge beside a longer path between the same chips is rejected and repaired", "[partition]") {
  // node 0 -> node 2 from chip 0 to chip 2, and node 0 -> node 1 -> node 3 through chip 1
  const Graph g = graph(4, {{0, 2}, {0, 1}, {1, 3}});
  const Placement bad{0, 1, 2, 2};
  const auto v = partition::check(g, bad, 3);
  REQUIRE(v);
  CHECK(v->kind == Violation::Triangle);
  CHECK_THAT(v->what, Contains("edge node 0 -> node 2 joins chip 0 to chip 2 directly") && Contains("(0 -> 1 -> 2)"));
  repaired(g, 3, bad);
  CHECK_FALSE(partition::check(g, {0, 1, 1, 2}, 3));  // 0 -> 1 -> 2 only: fine
}

TEST_CASE("Fig. 2(f): a chip over its memory is rejected and repaired", "[partition]") {
  Graph g = graph(4, {{0, 1}, {1, 2}, {2, 3}});
  g.node_bytes = {10, 40, 40, 10};
  g.chip_capacity_bytes = 60;
  const Placement bad{0, 1, 1, 1};  // chip 1 holds 90
  const auto v = partition::check(g, bad, 2);
  REQUIRE(v);
  CHECK(v->kind == Violation::Memory);
  CHECK_THAT(v->what, Contains("chip 1 holds 90 bytes of operators, more than its 60"));
  const Placement f = repaired(g, 2, bad);
  CHECK(f == Placement{0, 0, 1, 1});  // the only split in order that fits: 50 and 50
  g.chip_capacity_bytes = 45;         // 100 bytes on 2 chips of 45: none fits
  CHECK(partition::solve_fix(g, 2, bad).status == SolveResult::Unsat);
}

TEST_CASE("the solver finds a valid placement exactly when brute force does, and only valid ones", "[partition]") {
  std::mt19937_64 rng(7);
  int solved = 0, unsat = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::uint32_t n = 2 + rng() % 6, chips = 1 + rng() % 4;
    Graph g;
    g.nodes = n;
    for (std::uint32_t u = 0; u < n; ++u)
      for (std::uint32_t v = u + 1; v < n; ++v)
        if (rng() % 10 < 4) g.edges.push_back({u, v});
    if (rng() % 2) {  // memory that sometimes cannot fit
      for (std::uint32_t i = 0; i < n; ++i) g.node_bytes.push_back(1 + rng() % 10);
      g.chip_capacity_bytes = 5 + rng() % 20;
    }
    bool exists = false;  // every placement, chips^n of them
    Placement f(n, 0);
    for (std::uint64_t code = 0, total = 1; !exists && code < (total = [&] { std::uint64_t t = 1; for (std::uint32_t i = 0; i < n; ++i) t *= chips; return t; }()); ++code) {
      std::uint64_t x = code;
      for (std::uint32_t i = 0; i < n; ++i, x /= chips) f[i] = static_cast<std::uint32_t>(x % chips);
      exists = !partition::check(g, f, chips);
    }
    partition::SolverOptions o;
    o.seed = static_cast<std::uint64_t>(trial);
    const SolveResult s = partition::solve_sample(g, chips, {}, o);
    INFO("trial " << trial << ": " << n << " nodes, " << chips << " chips");
    REQUIRE(s.status != SolveResult::GaveUp);
    CHECK((s.status == SolveResult::Solved) == exists);
    if (s.status == SolveResult::Solved) {
      CHECK_FALSE(partition::check(g, s.placement, chips));
      ++solved;
    } else {
      ++unsat;
    }
    // The searches' settings: topological order, restarts after 2 undone assignments. Without
    // memory nothing heuristic prunes and the answer is exact; with it, the next-fit heuristic
    // may give up on a placement that exists, but never claims Unsat for one or solves none.
    o.order = partition::SolverOptions::Topological;
    o.restart_failures = 2;
    const SolveResult t = partition::solve_sample(g, chips, {}, o);
    if (g.chip_capacity_bytes == 0) {
      REQUIRE(t.status != SolveResult::GaveUp);
      CHECK((t.status == SolveResult::Solved) == exists);
    } else {
      CHECK(t.status != (exists ? SolveResult::Unsat : SolveResult::Solved));
    }
    if (t.status == SolveResult::Solved) CHECK_FALSE(partition::check(g, t.placement, chips));
  }
  CHECK(solved > 50);  // both outcomes are exercised
  CHECK(unsat > 10);
}

TEST_CASE("SAMPLE mode follows the distribution where it can; bad input is named", "[partition][bad-input]") {
  const Graph g = graph(4, {{0, 1}, {1, 2}, {2, 3}});
  // every node would rather be on chip 2; the chain keeps them in order with none skipped
  const std::vector<std::vector<double>> p(4, std::vector<double>{0.0, 0.0, 1.0});
  const SolveResult r = partition::solve_sample(g, 3, p);
  REQUIRE(r.status == SolveResult::Solved);
  CHECK_FALSE(partition::check(g, r.placement, 3));
  CHECK_THROWS_WITH(partition::check(g, {0, 0, 5, 0}, 3), Contains("node 2 is on chip 5; there are 3 chips"));
  CHECK_THROWS_WITH(partition::check(graph(2, {{0, 7}}), {0, 0}, 3), Contains("edge 0 -> 7 names a node that does not exist"));
  CHECK_THROWS_WITH(partition::check(g, {0, 0, 0}, 3), Contains("a placement of 3 nodes for a graph of 4"));
  CHECK_THROWS_WITH(partition::solve_fix(g, 65, {0, 0, 0, 0}), Contains("65 chips; expected 1..64"));
}
