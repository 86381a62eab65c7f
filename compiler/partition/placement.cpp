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

std::optional<Violation> memory(const Graph& g, const Placement& f, std::uint32_t chips) {
  if (g.chip_capacity_bytes == 0 || g.node_bytes.empty()) return std::nullopt;
  std::vector<std::uint64_t> load(chips, 0);
  for (std::uint32_t n = 0; n < g.nodes; ++n) load[f[n]] += g.node_bytes[n];
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
    find_spans();
    draw_order();
  }

  SolveResult run() {
    SolveResult r;
    std::vector<std::uint32_t> all(g_.nodes);
    for (std::uint32_t n = 0; n < g_.nodes; ++n) all[n] = n;
    if (!propagate(all)) return r;  // Unsat: a cycle in the edges leaves no chip for some node
    const std::size_t root = trail_.size();
    std::size_t i = 0;
    bool first = true;  // the first chip tried for order_[i]
    std::uint64_t limit = opt_.restart_failures, attempt_start = 0;
    for (;;) {
      if (failures_ > opt_.max_failures) {
        r.status = SolveResult::GaveUp;
        r.failures = failures_;
        return r;
      }
      if (limit > 0 && failures_ - attempt_start > limit) {
        // A restart: everything decided is undone, the order drawn again, the limit doubled (so
        // that some attempt eventually runs to the end: an Unsat is still a proof).
        undo(root);
        decisions_.clear();
        i = 0;
        first = true;
        attempt_start = failures_;
        limit *= 2;
        draw_order();
        continue;
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
  struct Span {
    std::uint32_t u, v;
    std::vector<std::uint32_t> between;
  };
  struct Decision {
    std::size_t index;
    std::uint32_t chip;
    std::size_t mark;
  };

  SolveResult& done(SolveResult& r) {
    r.status = heuristic_pruned_ ? SolveResult::GaveUp : SolveResult::Unsat;
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
  // The nodes on some path from u to v other than the edge itself, for every edge (u, v) that
  // has any (a residual connection, say). Once u and v are decided on chips a and b, Eq. 4
  // leaves those nodes only a or b: a node on a chip between would make a longer path.
  // Nothing is found for a graph with a cycle (propagation proves it unsatisfiable anyway).
  void find_spans() {
    const std::uint32_t n = g_.nodes;
    touching_.resize(n);
    std::vector<std::uint32_t> indeg(n, 0), topo;
    for (const auto& [u, v] : g_.edges) ++indeg[v];
    for (std::uint32_t x = 0; x < n; ++x)
      if (indeg[x] == 0) topo.push_back(x);
    for (std::size_t i = 0; i < topo.size(); ++i)
      for (std::uint32_t v : out_[topo[i]])
        if (--indeg[v] == 0) topo.push_back(v);
    if (topo.size() != n) return;
    const std::size_t words = (n + 63) / 64;
    std::vector<std::uint64_t> desc(n * words, 0), anc(n * words, 0);
    for (auto it = topo.rbegin(); it != topo.rend(); ++it)
      for (std::uint32_t v : out_[*it]) {
        desc[*it * words + v / 64] |= std::uint64_t{1} << (v % 64);
        for (std::size_t k = 0; k < words; ++k) desc[*it * words + k] |= desc[v * words + k];
      }
    for (std::uint32_t x : topo)
      for (std::uint32_t u : in_[x]) {
        anc[x * words + u / 64] |= std::uint64_t{1} << (u % 64);
        for (std::size_t k = 0; k < words; ++k) anc[x * words + k] |= anc[u * words + k];
      }
    for (const auto& [u, v] : g_.edges) {
      Span sp{u, v, {}};
      for (std::size_t k = 0; k < words; ++k)
        for (std::uint64_t b = desc[u * words + k] & anc[v * words + k]; b; b &= b - 1)
          sp.between.push_back(static_cast<std::uint32_t>(k * 64 + lowest(b)));
      if (sp.between.empty()) continue;
      touching_[u].push_back(static_cast<std::uint32_t>(spans_.size()));
      touching_[v].push_back(static_cast<std::uint32_t>(spans_.size()));
      for (std::uint32_t w : sp.between) touching_[w].push_back(static_cast<std::uint32_t>(spans_.size()));
      spans_.push_back(std::move(sp));
    }
  }
  void draw_order() {
    if (opt_.order == SolverOptions::Topological && topo_order()) return;
    order_.resize(g_.nodes);
    for (std::uint32_t n = 0; n < g_.nodes; ++n) order_[n] = n;
    std::shuffle(order_.begin(), order_.end(), rng_);
  }
  // A random topological order (among the nodes whose producers are all ordered, one drawn at
  // random). False for a graph with a cycle.
  bool topo_order() {
    std::vector<std::uint32_t> indeg(g_.nodes, 0), ready;
    for (const auto& [u, v] : g_.edges) ++indeg[v];
    for (std::uint32_t n = 0; n < g_.nodes; ++n)
      if (indeg[n] == 0) ready.push_back(n);
    order_.clear();
    while (!ready.empty()) {
      const auto k = std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng_);
      const std::uint32_t n = ready[k];
      ready[k] = ready.back();
      ready.pop_back();
      order_.push_back(n);
      for (std::uint32_t v : out_[n])
        if (--indeg[v] == 0) ready.push_back(v);
    }
    return order_.size() == g_.nodes;
  }
  bool restrict(std::uint32_t n, std::uint64_t d, std::vector<std::uint32_t>& work) {
    if ((dom_[n] & d) == dom_[n]) return true;
    set(n, dom_[n] & d);
    work.push_back(n);
    return dom_[n] != 0;
  }
  // Eq. 4 on a span (u, v, between): with u on chip a, a node w between that is surely above a
  // puts v on w's chip (v higher still would make the path a -> f(w) -> f(v) longer than the
  // edge), so their domains meet; likewise with v on chip b and w surely below b for u; with both
  // decided, the nodes between are on a or b.
  bool span(const Span& sp, std::vector<std::uint32_t>& work) {
    const bool u1 = single(dom_[sp.u]), v1 = single(dom_[sp.v]);
    if (!u1 && !v1) return true;
    if (u1 && v1) {
      const std::uint64_t ends = dom_[sp.u] | dom_[sp.v];
      for (std::uint32_t w : sp.between)
        if (!restrict(w, ends, work)) return false;
    }
    for (std::uint32_t w : sp.between) {
      std::uint32_t other = sp.u;
      if (u1 && lowest(dom_[w]) > lowest(dom_[sp.u])) other = sp.v;
      else if (!(v1 && highest(dom_[w]) < lowest(dom_[sp.v]))) continue;
      const std::uint64_t both = dom_[w] & dom_[other];
      if (!restrict(w, both, work) || !restrict(other, both, work)) return false;
    }
    return true;
  }
  static bool single(std::uint64_t d) { return d != 0 && (d & (d - 1)) == 0; }

  // Eq. 2 as bounds: a node's chip is at least its producers' lowest, at most its consumers'
  // highest; and Eq. 4 on the spans of decided edges. False when a domain empties.
  bool propagate(std::vector<std::uint32_t> work) {
    while (!work.empty()) {
      const std::uint32_t n = work.back();
      work.pop_back();
      if (dom_[n] == 0) return false;
      for (std::uint32_t s : touching_[n])
        if (!span(spans_[s], work)) return false;
      const std::uint64_t lo = at_least(lowest(dom_[n])), hi = at_most(highest(dom_[n]));
      for (std::uint32_t v : out_[n])
        if (!restrict(v, lo, work)) return false;
      for (std::uint32_t u : in_[n])
        if (!restrict(u, hi, work)) return false;
    }
    return true;
  }
  // The other constraints on the nodes decided so far (a single chip left): no triangle among
  // them, no chip over capacity, and every chip below the highest in use can still be filled.
  bool consistent() {
    std::vector<bool> fixed(g_.nodes);
    Placement f(g_.nodes, 0);
    std::vector<std::uint64_t> load(chips_, 0);  // bytes of the decided nodes per chip
    std::uint64_t used = 0, open = 0, pending = 0;  // pending: bytes of the undecided nodes
    std::uint32_t top = 0;
    const bool sized = g_.chip_capacity_bytes > 0 && !g_.node_bytes.empty();
    for (std::uint32_t n = 0; n < g_.nodes; ++n) {
      fixed[n] = single(dom_[n]);
      const std::uint64_t bytes = sized ? g_.node_bytes[n] : 0;
      if (fixed[n]) {
        f[n] = lowest(dom_[n]);
        used |= dom_[n];
        top = std::max(top, f[n]);
        load[f[n]] += bytes;
      } else {
        open |= dom_[n];
        pending += bytes;
      }
    }
    const std::uint64_t below = at_most(top), empty = below & ~used;
    if ((empty & ~open) != 0) return false;  // a chip below one in use that nothing can fill
    if (!fillable(empty, fixed)) return false;  // ... or not enough undecided nodes to fill them all
    if (triangle(g_, f, chips_, &fixed)) return false;
    if (!sized) return true;
    for (std::uint64_t l : load)
      if (l > g_.chip_capacity_bytes) return false;
    return room_left(load, open, pending) && next_fit(fixed, load[top], top);
  }
  // Topological order only, a heuristic: the undecided nodes, in the order they will be
  // decided, packed from the highest chip in use onwards (next fit) need no chip past the last.
  // On a chain that is exact; on a DAG whose branches could go back to lower chips it may
  // prune a placement that exists, so a search it pruned ends GaveUp, never Unsat.
  bool next_fit(const std::vector<bool>& fixed, std::uint64_t used, std::uint32_t top) {
    if (opt_.order != SolverOptions::Topological) return true;
    std::uint32_t chip = top;
    for (std::uint32_t n : order_) {
      if (fixed[n]) continue;
      const std::uint64_t b = g_.node_bytes[n];
      if (used + b > g_.chip_capacity_bytes) {
        ++chip;
        used = 0;
      }
      used += b;
      if (chip >= chips_) {
        heuristic_pruned_ = true;
        return false;
      }
    }
    return true;
  }
  // Every chip of `empty` can get its own undecided node. Domains are widened to intervals
  // [lowest, highest], for which the greedy matching (each chip, ascending, takes the candidate
  // whose interval ends first) is exact; so a failure here is a proof for the real domains too.
  bool fillable(std::uint64_t empty, const std::vector<bool>& fixed) const {
    if (empty == 0) return true;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;  // (lowest, highest) of undecided nodes
    for (std::uint32_t n = 0; n < g_.nodes; ++n)
      if (!fixed[n] && (dom_[n] & empty)) spans.emplace_back(lowest(dom_[n]), highest(dom_[n]));
    if (static_cast<std::size_t>(__builtin_popcountll(empty)) > spans.size()) return false;
    std::sort(spans.begin(), spans.end());
    std::vector<std::uint32_t> ends;  // a min-heap of the highest chips of candidates so far
    std::size_t next = 0;
    for (std::uint64_t e = empty; e; e &= e - 1) {
      const std::uint32_t c = lowest(e);
      while (next < spans.size() && spans[next].first <= c) {
        ends.push_back(spans[next++].second);
        std::push_heap(ends.begin(), ends.end(), std::greater<>());
      }
      while (!ends.empty() && ends.front() < c) {
        std::pop_heap(ends.begin(), ends.end(), std::greater<>());
        ends.pop_back();
      }
      if (ends.empty()) return false;
      std::pop_heap(ends.begin(), ends.end(), std::greater<>());
      ends.pop_back();
    }
    return true;
  }
  // The undecided nodes' bytes fit in what is left on the chips they may still use (a
  // necessary condition: it sees the room as one pool).
  bool room_left(const std::vector<std::uint64_t>& load, std::uint64_t open, std::uint64_t pending) const {
    std::uint64_t room = 0;
    for (std::uint32_t c = 0; c < chips_; ++c)
      if ((open >> c & 1) && load[c] < g_.chip_capacity_bytes) room += g_.chip_capacity_bytes - load[c];
    return pending <= room;
  }

  const Graph& g_;
  std::uint32_t chips_;
  SolverOptions opt_;
  Chooser choose_;
  std::mt19937_64 rng_;
  std::vector<std::vector<std::uint32_t>> out_, in_;
  std::vector<Span> spans_;
  std::vector<std::vector<std::uint32_t>> touching_;  // per node, the spans it ends or lies in
  std::vector<std::uint64_t> dom_;
  std::vector<std::uint32_t> order_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> trail_;
  std::vector<Decision> decisions_;
  std::uint64_t failures_ = 0;
  bool heuristic_pruned_ = false;
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
  return memory(g, f, chips);
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
