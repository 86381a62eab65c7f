#include "compiler/partition/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <random>

#include "sim/common/error.h"

namespace tessera::partition {

namespace {

constexpr std::uint32_t kMaxChips = 64;  // a domain is a 64-bit set

// Longest paths in the chip graph (edges only go from lower to higher chips once Eq. 2 holds):
// `far[a][b]` the longest path from a to b in edges (0: none), `via[a][b]` the chip before b on it.
struct ChipPaths {
  std::vector<std::vector<std::uint32_t>> far, via;
};

ChipPaths longest_paths(const std::vector<std::uint64_t>& succ, std::uint32_t chips) {
  ChipPaths p{std::vector<std::vector<std::uint32_t>>(chips, std::vector<std::uint32_t>(chips, 0)),
              std::vector<std::vector<std::uint32_t>>(chips, std::vector<std::uint32_t>(chips, 0))};
  for (std::uint32_t a = 0; a < chips; ++a)
    for (std::uint32_t c = a; c < chips; ++c) {
      if (c != a && p.far[a][c] == 0) continue;  // not reached from a
      for (std::uint32_t b = c + 1; b < chips; ++b)
        if ((succ[c] >> b & 1) && p.far[a][c] + 1 > p.far[a][b]) {
          p.far[a][b] = p.far[a][c] + 1;
          p.via[a][b] = c;
        }
    }
  return p;
}

// The first cross-chip edge whose chips are also joined by a longer path, in words.
std::optional<Violation> triangle(const Graph& g, const Placement& f, std::uint32_t chips,
                                  const std::vector<bool>* fixed) {
  std::vector<std::uint64_t> succ(chips, 0);
  for (const auto& [u, v] : g.edges)
    if ((!fixed || ((*fixed)[u] && (*fixed)[v])) && f[u] < f[v]) succ[f[u]] |= std::uint64_t{1} << f[v];
  const ChipPaths p = longest_paths(succ, chips);
  for (const auto& [u, v] : g.edges) {
    if (fixed && !((*fixed)[u] && (*fixed)[v])) continue;
    const std::uint32_t a = f[u], b = f[v];
    if (a >= b || p.far[a][b] <= 1) continue;
    std::vector<std::uint32_t> path{b};
    for (std::uint32_t c = b; c != a;) path.push_back(c = p.via[a][c]);
    std::string walk;
    for (auto it = path.rbegin(); it != path.rend(); ++it) walk += fmt::format("{}{}", walk.empty() ? "" : " -> ", *it);
    return Violation{Violation::Triangle,
                     fmt::format("edge {} -> {} joins chip {} to chip {} directly, and the chips are also joined "
                                 "through others ({}): a cross-chip edge may only join chips with no longer path "
                                 "between them",
                                 g.name_of(u), g.name_of(v), a, b, walk)};
  }
  return std::nullopt;
}

std::optional<Violation> memory(const Graph& g, const Placement& f, std::uint32_t chips, const std::vector<bool>* fixed) {
  if (g.chip_capacity_bytes == 0 || g.node_bytes.empty()) return std::nullopt;
  std::vector<std::uint64_t> load(chips, 0);
  for (std::uint32_t n = 0; n < g.nodes; ++n)
    if (!fixed || (*fixed)[n]) load[f[n]] += g.node_bytes[n];
  for (std::uint32_t c = 0; c < chips; ++c)
    if (load[c] > g.chip_capacity_bytes)
      return Violation{Violation::Memory, fmt::format("chip {} holds {} bytes of operators, more than its {}", c,
                                                      load[c], g.chip_capacity_bytes)};
  return std::nullopt;
}

void validate(const Graph& g, std::uint32_t chips) {
  if (chips == 0 || chips > kMaxChips)
    throw Error(fmt::format("partition: {} chips; expected 1..{}", chips, kMaxChips));
  for (const auto& [u, v] : g.edges)
    if (u >= g.nodes || v >= g.nodes)
      throw Error(fmt::format("partition: edge {} -> {} names a node that does not exist ({} nodes)", u, v, g.nodes));
  if (!g.node_bytes.empty() && g.node_bytes.size() != g.nodes)
    throw Error(fmt::format("partition: {} node sizes for {} nodes", g.node_bytes.size(), g.nodes));
}

std::uint32_t lowest(std::uint64_t d) { return static_cast<std::uint32_t>(__builtin_ctzll(d)); }
std::uint32_t highest(std::uint64_t d) { return 63u - static_cast<std::uint32_t>(__builtin_clzll(d)); }
std::uint64_t at_least(std::uint32_t c) { return c >= 64 ? 0 : ~std::uint64_t{0} << c; }
std::uint64_t at_most(std::uint32_t c) { return c >= 63 ? ~std::uint64_t{0} : (std::uint64_t{1} << (c + 1)) - 1; }

// The search behind both modes: finite domains (a bit per chip), bounds propagation along the
// edges (Eq. 2), partial checks of the other constraints on what is decided, chronological
// backtracking with a trail.
class Search {
 public:
  // `choose(node, domain, first_try)`: the chip to try.
  using Chooser = std::function<std::uint32_t(std::uint32_t, std::uint64_t, bool, std::mt19937_64&)>;
  Search(const Graph& g, std::uint32_t chips, const SolverOptions& o, Chooser choose)
      : g_(g), chips_(chips), opt_(o), choose_(std::move(choose)), rng_(o.seed) {
    validate(g, chips);
    out_.resize(g.nodes);
    in_.resize(g.nodes);
    for (const auto& [u, v] : g.edges) {
      out_[u].push_back(v);
      in_[v].push_back(u);
    }
    dom_.assign(g.nodes, chips == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << chips) - 1);
    order_.resize(g.nodes);
    for (std::uint32_t n = 0; n < g.nodes; ++n) order_[n] = n;
    std::shuffle(order_.begin(), order_.end(), rng_);
  }

  SolveResult run() {
    SolveResult r;
    std::vector<std::uint32_t> all(g_.nodes);
    for (std::uint32_t n = 0; n < g_.nodes; ++n) all[n] = n;
    if (!propagate(all)) return r;  // Unsat: a cycle in the edges leaves no chip for some node
    std::size_t i = 0;
    bool first = true;  // the first chip tried for order_[i]
    for (;;) {
      if (failures_ > opt_.max_failures) {
        r.status = SolveResult::GaveUp;
        r.failures = failures_;
        return r;
      }
      if (i == g_.nodes) {
        Placement f(g_.nodes);
        for (std::uint32_t n = 0; n < g_.nodes; ++n) f[n] = lowest(dom_[n]);
        if (!check(g_, f, chips_)) {
          r.status = SolveResult::Solved;
          r.placement = std::move(f);
          r.failures = failures_;
          return r;
        }
        if (!backtrack(i)) return done(r);
        first = false;
        continue;
      }
      const std::uint32_t u = order_[i];
      const std::uint32_t chip = choose_(u, dom_[u], first, rng_);
      const std::size_t mark = trail_.size();
      decisions_.push_back({i, chip, mark});
      set(u, std::uint64_t{1} << chip);
      if (propagate({u}) && consistent()) {
        ++i;
        first = true;
        continue;
      }
      if (!backtrack(i)) return done(r);
      first = false;
    }
  }

 private:
  struct Decision {
    std::size_t index;
    std::uint32_t chip;
    std::size_t mark;
  };

  SolveResult& done(SolveResult& r) {
    r.status = SolveResult::Unsat;
    r.failures = failures_;
    return r;
  }
  void set(std::uint32_t n, std::uint64_t d) {
    if (d == dom_[n]) return;
    trail_.push_back({n, dom_[n]});
    dom_[n] = d;
  }
  void undo(std::size_t mark) {
    while (trail_.size() > mark) {
      dom_[trail_.back().first] = trail_.back().second;
      trail_.pop_back();
    }
  }
  // Undoes the last decision and rules its chip out; again while that leaves nothing. `i`
  // becomes the index of the node to decide next. False: no decision left (unsatisfiable).
  bool backtrack(std::size_t& i) {
    for (;;) {
      if (decisions_.empty()) return false;
      const Decision d = decisions_.back();
      decisions_.pop_back();
      ++failures_;
      undo(d.mark);
      const std::uint32_t u = order_[d.index];
      set(u, dom_[u] & ~(std::uint64_t{1} << d.chip));
      i = d.index;
      if (dom_[u] != 0 && propagate({u}) && consistent()) return true;
      // the chips left for u fail too: this level's exclusions stay on the trail of the
      // decision before, which the next round undoes
    }
  }
  // Eq. 2 as bounds: a node's chip is at least its producers' lowest, at most its consumers'
  // highest. False when a domain empties.
  bool propagate(std::vector<std::uint32_t> work) {
    while (!work.empty()) {
      const std::uint32_t n = work.back();
      work.pop_back();
      if (dom_[n] == 0) return false;
      const std::uint64_t lo = at_least(lowest(dom_[n])), hi = at_most(highest(dom_[n]));
      for (std::uint32_t v : out_[n])
        if ((dom_[v] & lo) != dom_[v]) {
          set(v, dom_[v] & lo);
          if (dom_[v] == 0) return false;
          work.push_back(v);
        }
      for (std::uint32_t u : in_[n])
        if ((dom_[u] & hi) != dom_[u]) {
          set(u, dom_[u] & hi);
          if (dom_[u] == 0) return false;
          work.push_back(u);
        }
    }
    return true;
  }
  // The other constraints on the nodes decided so far (a single chip left): no triangle among
  // them, no chip over capacity, and every chip below the highest in use can still be filled.
  bool consistent() {
    std::vector<bool> fixed(g_.nodes);
    Placement f(g_.nodes, 0);
    std::uint64_t used = 0, open = 0;
    std::uint32_t top = 0;
    for (std::uint32_t n = 0; n < g_.nodes; ++n) {
      fixed[n] = (dom_[n] & (dom_[n] - 1)) == 0;
      if (fixed[n]) {
        f[n] = lowest(dom_[n]);
        used |= dom_[n];
        top = std::max(top, f[n]);
      } else {
        open |= dom_[n];
      }
    }
    const std::uint64_t below = at_most(top);
    if ((below & ~used & ~open) != 0) return false;  // a chip below one in use that nothing can fill
    return !triangle(g_, f, chips_, &fixed) && !memory(g_, f, chips_, &fixed);
  }

  const Graph& g_;
  std::uint32_t chips_;
  SolverOptions opt_;
  Chooser choose_;
  std::mt19937_64 rng_;
  std::vector<std::vector<std::uint32_t>> out_, in_;
  std::vector<std::uint64_t> dom_;
  std::vector<std::uint32_t> order_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> trail_;
  std::vector<Decision> decisions_;
  std::uint64_t failures_ = 0;
};

std::uint32_t uniform(std::uint64_t d, std::mt19937_64& rng) {
  const int count = __builtin_popcountll(d);
  int k = static_cast<int>(std::uniform_int_distribution<int>(0, count - 1)(rng));
  for (std::uint32_t c = 0;; ++c)
    if ((d >> c & 1) && k-- == 0) return c;
}

}  // namespace

std::string Graph::name_of(std::uint32_t n) const {
  return n < names.size() && !names[n].empty() ? names[n] : fmt::format("node {}", n);
}

std::optional<Violation> check(const Graph& g, const Placement& f, std::uint32_t chips) {
  validate(g, chips);
  if (f.size() != g.nodes)
    throw Error(fmt::format("partition: a placement of {} nodes for a graph of {}", f.size(), g.nodes));
  for (std::uint32_t n = 0; n < g.nodes; ++n)
    if (f[n] >= chips) throw Error(fmt::format("partition: {} is on chip {}; there are {} chips", g.name_of(n), f[n], chips));
  for (const auto& [u, v] : g.edges)
    if (f[u] > f[v])
      return Violation{Violation::Backward,
                       fmt::format("edge {} -> {} goes from chip {} back to chip {} (data flows one way, to higher "
                                   "chips)", g.name_of(u), g.name_of(v), f[u], f[v])};
  std::vector<std::int64_t> holder(chips, -1);
  std::uint32_t top = 0;
  for (std::uint32_t n = 0; n < g.nodes; ++n) {
    if (holder[f[n]] < 0) holder[f[n]] = n;
    top = std::max(top, f[n]);
  }
  for (std::uint32_t c = 0; c < top; ++c)
    if (holder[c] < 0)
      return Violation{Violation::SkippedChip,
                       fmt::format("chip {} holds no operator, but chip {} does ({}): the chips in use must be 0, "
                                   "1, ... with none skipped", c, top, g.name_of(static_cast<std::uint32_t>(holder[top])))};
  if (auto t = triangle(g, f, chips, nullptr)) return t;
  return memory(g, f, chips, nullptr);
}

SolveResult solve_sample(const Graph& g, std::uint32_t chips, const std::vector<std::vector<double>>& p,
                         const SolverOptions& options) {
  if (!p.empty() && p.size() != g.nodes)
    throw Error(fmt::format("partition: {} distributions for {} nodes", p.size(), g.nodes));
  Search s(g, chips, options, [&](std::uint32_t n, std::uint64_t d, bool, std::mt19937_64& rng) {
    if (p.empty() || p[n].size() != chips) return uniform(d, rng);
    double sum = 0;
    for (std::uint32_t c = 0; c < chips; ++c)
      if (d >> c & 1) sum += std::max(0.0, p[n][c]);
    if (!(sum > 0)) return uniform(d, rng);
    double x = std::uniform_real_distribution<double>(0, sum)(rng);
    std::uint32_t last = 0;
    for (std::uint32_t c = 0; c < chips; ++c)
      if (d >> c & 1) {
        last = c;
        x -= std::max(0.0, p[n][c]);
        if (x < 0 && p[n][c] > 0) return c;
      }
    return last;
  });
  return s.run();
}

SolveResult solve_fix(const Graph& g, std::uint32_t chips, const Placement& proposal, const SolverOptions& options) {
  if (proposal.size() != g.nodes)
    throw Error(fmt::format("partition: a proposal of {} nodes for a graph of {}", proposal.size(), g.nodes));
  Search s(g, chips, options, [&](std::uint32_t n, std::uint64_t d, bool first, std::mt19937_64& rng) {
    if (first && proposal[n] < chips && (d >> proposal[n] & 1)) return proposal[n];
    return uniform(d, rng);
  });
  return s.run();
}

}  // namespace tessera::partition
