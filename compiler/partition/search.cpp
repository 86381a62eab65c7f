#include "compiler/partition/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

#include "sim/common/error.h"

namespace tessera::partition {

SolverOptions solver_options(std::uint64_t seed) {
  SolverOptions so;
  so.seed = seed;
  so.order = SolverOptions::Topological;
  so.restart_failures = 200;
  so.max_failures = 100000;
  return so;
}

Placement greedy(const Graph& g, std::uint32_t chips, double fill, std::uint64_t seed) {
  if (chips == 0) throw Error("greedy placement: no chips");
  if (!(fill > 0 && fill <= 1)) throw Error(fmt::format("greedy placement: fill {} is not in (0, 1]", fill));
  Placement f(g.nodes, 0);
  std::uint32_t chip = 0;
  if (g.chip_capacity_bytes > 0 && !g.node_bytes.empty()) {
    const double cap = fill * static_cast<double>(g.chip_capacity_bytes);
    double used = 0;
    for (std::uint32_t v = 0; v < g.nodes; ++v) {
      const auto b = static_cast<double>(g.node_bytes[v]);
      if (used > 0 && used + b > cap && chip + 1 < chips) { ++chip; used = 0; }
      used += b;
      f[v] = chip;
    }
  } else {
    const std::uint32_t per = (g.nodes + chips - 1) / chips;
    for (std::uint32_t v = 0; v < g.nodes; ++v) f[v] = std::min(chips - 1, v / std::max(per, 1u));
  }
  if (!check(g, f, chips)) return f;
  const SolveResult r = solve_fix(g, chips, f, solver_options(seed));
  if (r.status != SolveResult::Solved)
    throw Error(fmt::format("greedy placement on {} chips: the solver found no valid placement near it ({})", chips,
                            r.status == SolveResult::Unsat ? "none exists" : "gave up"));
  return r.placement;
}

namespace {

using Clock = std::chrono::steady_clock;

class Searcher {
 public:
  Searcher(const Graph& g, std::uint32_t chips, const Evaluate& eval, const SearchOptions& o)
      : g_(g), chips_(chips), eval_(eval), o_(o), rng_(o.seed), start_(Clock::now()) {}

  bool budget_left() const {
    if (o_.budget_samples > 0 && r_.samples.size() >= o_.budget_samples) return false;
    if (o_.budget_seconds > 0 && seconds() >= o_.budget_seconds) return false;
    return true;
  }

  // A placement from the solver in SAMPLE mode, or none (counted) when it finds none.
  std::optional<Placement> sample(const std::vector<std::vector<double>>& p) {
    SolveResult s = solve_sample(g_, chips_, p, solver_options(rng_()));
    if (s.status != SolveResult::Solved) {
      ++r_.unsat;
      ++misses_;
      if (misses_ > 1000) throw Error("placement search: the solver found no valid placement 1000 times in a row");
      return std::nullopt;
    }
    misses_ = 0;
    return std::move(s.placement);
  }

  const Sample& evaluate(const Placement& f) {
    const Score s = eval_(f);
    Sample x;
    x.index = r_.samples.size() + 1;
    x.throughput = s.fits ? s.throughput : 0.0;
    x.fits = s.fits;
    x.predicted = s.predicted;
    if (!s.fits) ++r_.out_of_memory;
    if (x.throughput > r_.best_throughput) {
      r_.best = f;
      r_.best_throughput = x.throughput;
    }
    x.best = r_.best_throughput;
    x.seconds = seconds();
    r_.samples.push_back(x);
    return r_.samples.back();
  }

  void random() {
    while (budget_left())
      if (auto f = sample({})) evaluate(*f);
  }

  // Annealing in distribution space (the paper's SA): a step gives a random share of the nodes a
  // new random distribution over the chips; the solver samples a placement from it; the step is
  // kept when it is better, or with probability exp(gain / (T * best)).
  void anneal() {
    std::vector<std::vector<double>> p(g_.nodes, std::vector<double>(chips_, 1.0 / chips_));
    double current = -1, temperature = o_.sa_start_temperature;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::exponential_distribution<double> expo(1.0);
    const auto changes = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(o_.sa_node_share * g_.nodes));
    while (budget_left()) {
      std::vector<std::vector<double>> q = p;
      if (current >= 0)
        for (std::uint32_t k = 0; k < changes; ++k) {
          auto& row = q[std::uniform_int_distribution<std::uint32_t>(0, g_.nodes - 1)(rng_)];
          double sum = 0;
          for (auto& x : row) sum += (x = expo(rng_));
          for (auto& x : row) x /= sum;
        }
      auto f = sample(q);
      if (!f) continue;
      const double t = evaluate(*f).throughput;
      const double scale = std::max(temperature * r_.best_throughput, 1e-300);
      if (current < 0 || t >= current || unit(rng_) < std::exp((t - current) / scale)) {
        p = std::move(q);
        current = t;
      }
      temperature *= o_.sa_cooling;
    }
  }

  SearchResult result() { return std::move(r_); }

 private:
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  const Graph& g_;
  std::uint32_t chips_;
  const Evaluate& eval_;
  SearchOptions o_;
  std::mt19937_64 rng_;
  Clock::time_point start_;
  SearchResult r_;
  std::uint64_t misses_ = 0;
};

}  // namespace

SearchResult search(const Graph& g, std::uint32_t chips, const Evaluate& evaluate, const SearchOptions& o) {
  if (o.budget_samples == 0 && o.budget_seconds <= 0) throw Error("placement search: no budget (samples or seconds)");
  Searcher s(g, chips, evaluate, o);
  if (o.method == "greedy") {
    // The heuristic backs off: a tenth less fill each time the chips' compiler says no.
    for (int k = 10; k >= 1 && s.budget_left(); --k) {
      if (s.evaluate(greedy(g, chips, k / 10.0, o.seed)).fits) break;
    }
  } else if (o.method == "random") {
    s.random();
  } else if (o.method == "sa") {
    if (o.sa_node_share <= 0 || o.sa_node_share > 1 || o.sa_cooling <= 0 || o.sa_cooling > 1 || o.sa_start_temperature <= 0)
      throw Error("simulated annealing: expected 0 < node share <= 1, 0 < cooling <= 1 and a positive temperature");
    s.anneal();
  } else {
    throw Error(fmt::format("placement search '{}': expected greedy, random or sa", o.method));
  }
  return s.result();
}

}  // namespace tessera::partition
