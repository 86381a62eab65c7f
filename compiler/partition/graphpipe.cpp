#include "compiler/partition/graphpipe.h"

#include "compiler/partition/pipeline_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "sim/common/error.h"

namespace tessera::partition {

namespace {

constexpr std::uint64_t kInf = std::numeric_limits<std::uint64_t>::max();

// ---- series-parallel decomposition ----

class SpBuilder {
 public:
  explicit SpBuilder(const PipeModel& m) : m_(m), mark_(m.layers.size(), 0) {
    for (std::uint32_t v = 0; v < m.layers.size(); ++v)
      for (std::uint32_t u : m.layers[v].inputs) edges_.emplace_back(u, v);
  }

  SpTree build() {
    std::vector<std::uint32_t> all(m_.layers.size());
    std::iota(all.begin(), all.end(), 0u);
    tree_.root = node(all);
    return std::move(tree_);
  }
  SpTree take(std::uint32_t root) {
    tree_.root = root;
    return std::move(tree_);
  }

  std::uint32_t leaf(std::uint32_t layer) {
    SpNode n;
    n.kind = SpNode::Leaf;
    n.layer = layer;
    n.layers = {layer};
    tree_.nodes.push_back(std::move(n));
    return static_cast<std::uint32_t>(tree_.nodes.size() - 1);
  }

  // A series or parallel node over `parts`; a child of the same kind is spliced in (a range of a
  // series' children is convex however the series was found).
  std::uint32_t compose(SpNode::Kind kind, const std::vector<std::uint32_t>& parts) {
    if (parts.size() == 1) return parts[0];
    SpNode n;
    n.kind = kind;
    for (std::uint32_t p : parts) {
      const SpNode& c = tree_.nodes[p];
      if (c.kind == kind && !c.join)  // a join keeps its own node: its children are not independent
        n.children.insert(n.children.end(), c.children.begin(), c.children.end());
      else
        n.children.push_back(p);
      n.layers.insert(n.layers.end(), c.layers.begin(), c.layers.end());
    }
    std::sort(n.layers.begin(), n.layers.end());
    tree_.nodes.push_back(std::move(n));
    return static_cast<std::uint32_t>(tree_.nodes.size() - 1);
  }

 private:
  // `set` ascending, which is a topological order (layers come after their inputs).
  std::uint32_t node(const std::vector<std::uint32_t>& set) {
    if (set.size() == 1) return leaf(set[0]);
    const std::vector<std::vector<std::uint32_t>> comps = components(set);
    std::vector<std::uint32_t> parts;
    if (comps.size() > 1) {
      for (const auto& c : comps) parts.push_back(node(c));
      return compose(SpNode::Parallel, parts);
    }
    const std::vector<std::size_t> cuts = series_cuts(set);
    if (cuts.empty()) {  // not series-parallel: its layers as a chain
      ++tree_.linearised_parts;
      for (std::uint32_t l : set) parts.push_back(leaf(l));
      return compose(SpNode::Series, parts);
    }
    std::size_t from = 0;
    for (std::size_t c : cuts) {
      parts.push_back(node({set.begin() + static_cast<std::ptrdiff_t>(from), set.begin() + static_cast<std::ptrdiff_t>(c)}));
      from = c;
    }
    parts.push_back(node({set.begin() + static_cast<std::ptrdiff_t>(from), set.end()}));
    return series_with_joins(parts);
  }

  // A series whose parallel part is followed by more: the parts after it join its last branch
  // (Series(P(B1..Bn), T...) becomes P(B1..Bn-1, Series(Bn, T...))), so that the layers where
  // the branches meet can share a stage with the end of a branch instead of taking a device of
  // their own. The other branches then send to whichever stage of that chain holds the join.
  std::uint32_t series_with_joins(const std::vector<std::uint32_t>& parts) {
    std::vector<std::uint32_t> flat;
    for (std::uint32_t p : parts) {
      const SpNode& n = tree_.nodes[p];
      if (n.kind == SpNode::Series)
        flat.insert(flat.end(), n.children.begin(), n.children.end());
      else
        flat.push_back(p);
    }
    for (std::size_t c = 0; c + 1 < flat.size(); ++c) {
      // a join already made stays one: its branches send to its own join layer
      if (tree_.nodes[flat[c]].kind != SpNode::Parallel || tree_.nodes[flat[c]].join) continue;
      std::vector<std::uint32_t> branches = tree_.nodes[flat[c]].children;
      std::vector<std::uint32_t> tail = {branches.back()};
      tail.insert(tail.end(), flat.begin() + static_cast<std::ptrdiff_t>(c) + 1, flat.end());
      branches.back() = series_with_joins(tail);
      std::vector<std::uint32_t> head(flat.begin(), flat.begin() + static_cast<std::ptrdiff_t>(c));
      const std::uint32_t meet = tree_.nodes[flat[c + 1]].layers.front();
      const std::uint32_t join = compose(SpNode::Parallel, branches);
      tree_.nodes[join].join = true;
      tree_.nodes[join].join_layer = meet;
      head.push_back(join);
      return compose(SpNode::Series, head);
    }
    return compose(SpNode::Series, flat);
  }

  // Weakly connected components of the subgraph on `set`, each ascending, by first layer.
  std::vector<std::vector<std::uint32_t>> components(const std::vector<std::uint32_t>& set) {
    std::vector<std::uint32_t> parent(m_.layers.size());
    std::iota(parent.begin(), parent.end(), 0u);
    const auto find = [&](std::uint32_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (std::uint32_t l : set) mark_[l] = 1;
    for (const auto& [u, v] : edges_)
      if (mark_[u] && mark_[v]) parent[std::max(find(u), find(v))] = std::min(find(u), find(v));
    for (std::uint32_t l : set) mark_[l] = 0;
    std::vector<std::vector<std::uint32_t>> out;
    std::vector<std::int64_t> slot(m_.layers.size(), -1);
    for (std::uint32_t l : set) {
      const std::uint32_t r = find(l);
      if (slot[r] < 0) {
        slot[r] = static_cast<std::int64_t>(out.size());
        out.emplace_back();
      }
      out[static_cast<std::size_t>(slot[r])].push_back(l);
    }
    return out;
  }

  // Positions p (1 .. size-1) where set[0..p) | set[p..) is a series cut: every source of the
  // subgraph (no input inside it) is before the cut and every sink after it, and the edges across
  // it all leave one layer or all enter one layer.
  std::vector<std::size_t> series_cuts(const std::vector<std::uint32_t>& set) {
    std::vector<std::size_t> pos(m_.layers.size(), kNone);
    for (std::size_t i = 0; i < set.size(); ++i) pos[set[i]] = i;
    std::vector<char> has_in(set.size(), 0), has_out(set.size(), 0);
    for (const auto& [u, v] : edges_)
      if (pos[u] != kNone && pos[v] != kNone) has_out[pos[u]] = has_in[pos[v]] = 1;
    std::size_t last_source = 0, first_sink = set.size();
    for (std::size_t i = 0; i < set.size(); ++i) {
      if (!has_in[i]) last_source = i;
      if (!has_out[i]) first_sink = std::min(first_sink, i);
    }
    std::vector<std::size_t> cuts;
    for (std::size_t p = last_source + 1; p <= first_sink && p < set.size(); ++p) {
      std::uint32_t src = kNoLayer, dst = kNoLayer;
      bool one_src = true, one_dst = true, any = false;
      for (const auto& [u, v] : edges_) {
        if (pos[u] == kNone || pos[v] == kNone || pos[u] >= p || pos[v] < p) continue;
        any = true;
        if (src != kNoLayer && src != u) one_src = false;
        if (dst != kNoLayer && dst != v) one_dst = false;
        src = u;
        dst = v;
      }
      if (any && (one_src || one_dst)) cuts.push_back(p);
    }
    return cuts;
  }

  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  static constexpr std::uint32_t kNoLayer = std::numeric_limits<std::uint32_t>::max();
  const PipeModel& m_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges_;
  std::vector<char> mark_;
  SpTree tree_;
};

// ---- the search ----

// The schedule configuration of the stage a sub-plan's data goes to (its successor) or comes
// from (its entry): micro-batch, kFkB k, in-flight samples. b = 0: none (the model's end).
struct Config {
  std::uint64_t b = 0, i = 0;
  std::uint32_t k = 1;
};

// How a DP value was reached: the range as one stage; a first stage [lo, split] then the rest on
// the other devices; the first child decomposed on `d1` devices then the rest; the one child
// decomposed.
// JoinTail: in a join, the children from `split` to the last (which holds the join) as a tail
// on `d1` devices — one stage, or (`tail_child`) the last child decomposed — and the others
// side by side on the rest, sending to the tail.
enum class How : std::uint8_t { None, Stage, StageThenRest, ChildThenRest, Child, JoinTail };

struct Value {
  Config entry{0, kInf, 1};  // i = kInf: infeasible
  How how = How::None;
  std::uint32_t split = 0, d1 = 0;
  std::uint32_t replicas = 0;  // How::Stage
  bool tail_child = false;     // How::JoinTail
  double tps = 0;
};

struct Key {
  std::uint32_t node, lo, hi, d;
  Config succ;
  bool operator==(const Key& o) const {
    return node == o.node && lo == o.lo && hi == o.hi && d == o.d && succ.b == o.succ.b && succ.i == o.succ.i &&
           succ.k == o.succ.k;
  }
};
struct KeyHash {
  std::size_t operator()(const Key& k) const {
    std::uint64_t h = k.node;
    for (std::uint64_t x : {std::uint64_t(k.lo), std::uint64_t(k.hi), std::uint64_t(k.d), k.succ.b, k.succ.i,
                            std::uint64_t(k.succ.k)})
      h = (h ^ x) * 0x100000001b3ull + (h >> 29);
    return static_cast<std::size_t>(h);
  }
};

// Per position p of the layer order (0 .. layers): the bytes per sample of the tensors made
// before p and read at or after p, which a chain of stages cut at p passes on.
std::vector<double> chain_cut_bytes(const PipeModel& m) {
  const std::size_t n = m.layers.size();
  std::vector<std::uint32_t> last_use(n, 0);
  for (std::uint32_t v = 0; v < n; ++v)
    for (std::uint32_t u : m.layers[v].inputs) last_use[u] = std::max(last_use[u], v);
  std::vector<double> cut(n + 1, 0);
  for (std::uint32_t u = 0; u < n; ++u)
    for (std::uint32_t p = u + 1; p <= last_use[u]; ++p) cut[p] += m.layers[u].out_bytes;
  return cut;
}

// Per device of a stage: its parameters' state, and the activations its in-flight samples keep,
// shared out over its replicas.
double stage_memory(const PipeModel& m, double params, double stash, std::uint64_t in_flight, std::uint32_t replicas) {
  return params * m.state_bytes_per_param + stash * double(in_flight) / replicas;
}

// Structurally identical nodes of the decomposition (MMT's and CANDLE-Uno's branches, DLRM's
// dense and its embedding branches) pose the same subproblems: the DP reads of a node only its
// layers' figures, how its layers connect to each other and to the outside, which child holds
// which layer, and its children's shape. Each node gets a class; nodes of one class have the
// same signature of exactly those, so the DP solves a class once (the thesis's point that
// GraphPipe solves branches, not one long chain, taken one step further for equal branches).
std::vector<std::uint32_t> node_classes(const PipeModel& m, const SpTree& t) {
  std::vector<std::uint32_t> cls(t.nodes.size(), 0);
  std::map<std::vector<double>, std::uint32_t> ids;
  std::vector<std::int64_t> pos(m.layers.size(), -1), owner(m.layers.size(), -1);
  std::vector<std::vector<std::uint32_t>> consumers(m.layers.size());
  for (std::uint32_t v = 0; v < m.layers.size(); ++v)
    for (std::uint32_t u : m.layers[v].inputs) consumers[u].push_back(v);
  // children before parents: a node's index is larger than its children's (SpBuilder's order)
  for (std::uint32_t x = 0; x < t.nodes.size(); ++x) {
    const SpNode& n = t.nodes[x];
    std::vector<double> sig = {double(n.kind), double(n.join), double(n.children.size())};
    for (std::size_t i = 0; i < n.layers.size(); ++i) pos[n.layers[i]] = static_cast<std::int64_t>(i);
    for (std::size_t c = 0; c < n.children.size(); ++c) {
      sig.push_back(cls[n.children[c]]);
      for (std::uint32_t l : t.nodes[n.children[c]].layers) owner[l] = static_cast<std::int64_t>(c);
    }
    if (n.join) sig.push_back(double(pos[n.join_layer]));
    for (std::uint32_t l : n.layers) {
      const PipeLayer& L = m.layers[l];
      sig.insert(sig.end(), {double(owner[l]), L.flops, L.params, L.weight_read_bytes, L.sample_bytes, L.out_bytes,
                             L.stash_bytes, double(L.inputs.size())});
      for (std::uint32_t u : L.inputs)  // inside: where; outside: what it sends
        sig.insert(sig.end(), {double(pos[u]), pos[u] < 0 ? m.layers[u].out_bytes : 0.0});
      bool outside = false;
      for (std::uint32_t v : consumers[l]) outside = outside || pos[v] < 0;
      sig.push_back(double(outside));
    }
    for (std::uint32_t l : n.layers) pos[l] = owner[l] = -1;
    cls[x] = ids.emplace(std::move(sig), static_cast<std::uint32_t>(ids.size())).first->second;
  }
  return cls;
}

// What a candidate stage (a range of a node's children) is made of, computed once.
struct RangeInfo {
  std::vector<std::uint32_t> layers;
  double params = 0, stash = 0;   // per sample: stash
  double boundary_bytes = 0;      // per sample: activations in plus activations out
  std::unordered_map<std::uint64_t, double> pass_s;  // samples per replica -> forward + backward
};

class Search {
 public:
  Search(const PipeModel& m, const SpTree& t, const DeviceSpec& dev, const PipeOptions& o)
      : m_(m), t_(t), dev_(dev), o_(o), chain_(o.planner == PipePlanner::Sequential), cut_(chain_cut_bytes(m)),
        class_(o.share_equal_subproblems ? node_classes(m, t) : std::vector<std::uint32_t>{}) {
    if (class_.empty()) {  // every node and range a class of its own
      class_.resize(t.nodes.size());
      std::iota(class_.begin(), class_.end(), 0u);
    }
    for (std::uint64_t b = o.min_micro_batch; b <= o.mini_batch; b *= 2) batches_.push_back(b);
    consumers_.resize(m.layers.size());
    for (std::uint32_t v = 0; v < m.layers.size(); ++v)
      for (std::uint32_t u : m.layers[v].inputs) consumers_[u].push_back(v);
  }

  // The least in-flight samples at the model's entry with every stage at most `tps` per sample
  // and every data-parallel stage's gradient all-reduce at most `allreduce_cap` seconds, or kInf.
  std::uint64_t probe(double tps, double allreduce_cap) {
    tps_ = tps;
    cap_ = allreduce_cap;
    memo_.clear();
    stage_memo_.clear();
    return solve(t_.root, 0, last_child(t_.root), dev_.devices, Config{}).entry.i;
  }

  std::vector<PipeStage> stages() {
    std::vector<PipeStage> out;
    std::uint32_t next_device = 0;
    const auto all = [](std::uint32_t, std::uint32_t, std::uint32_t) { return true; };
    const auto emit = [&](std::uint32_t node, std::uint32_t lo, std::uint32_t hi, const Value& v) {
      PipeStage st = describe(info(node, lo, hi), v.replicas, v.entry.b, v.entry.k, v.entry.i);
      st.first_device = next_device;
      next_device += v.replicas;
      out.push_back(std::move(st));
    };
    walk(t_.root, 0, last_child(t_.root), dev_.devices, Config{}, all, emit);
    return out;
  }

  std::uint64_t states() const { return states_; }

  // The figures of one stage on `r` replicas with micro-batch b (fills the plan's stage).
  PipeStage describe(RangeInfo& info, std::uint32_t r, std::uint64_t b, std::uint32_t k, std::uint64_t i) {
    PipeStage s;
    s.layers = info.layers;
    s.replicas = r;
    s.micro_batch = b;
    s.k = k;
    s.in_flight = i;
    const double per = double(b) / r;
    s.forward_s = pass_seconds(m_, info.layers, per, dev_, false);
    s.backward_s = pass_seconds(m_, info.layers, per, dev_, true);
    s.allreduce_s = allreduce_s(info, r);
    s.tps_s = stage_tps(info, r, b);
    s.memory_bytes = memory(info, r, i);
    return s;
  }

 private:
  RangeInfo& info(std::uint32_t node, std::uint32_t lo, std::uint32_t hi) {
    const std::uint64_t key = (std::uint64_t(node) << 40) | (std::uint64_t(lo) << 20) | hi;
    auto it = ranges_.find(key);
    if (it != ranges_.end()) return it->second;
    RangeInfo r;
    const SpNode& n = t_.nodes[node];
    if (n.kind == SpNode::Leaf) {
      r.layers = n.layers;
    } else {
      for (std::uint32_t c = lo; c <= hi; ++c) {
        const auto& ls = t_.nodes[n.children[c]].layers;
        r.layers.insert(r.layers.end(), ls.begin(), ls.end());
      }
      std::sort(r.layers.begin(), r.layers.end());
    }
    std::vector<char> in(m_.layers.size(), 0);
    for (std::uint32_t l : r.layers) in[l] = 1;
    if (chain_) r.boundary_bytes = cut_[r.layers.front()] + cut_[r.layers.back() + 1];
    for (std::uint32_t l : r.layers) {
      const PipeLayer& L = m_.layers[l];
      r.params += L.params;
      r.stash += L.stash_bytes;
      if (chain_) continue;  // a chain stage passes on everything live across its ends
      for (std::uint32_t u : L.inputs)
        if (!in[u]) r.boundary_bytes += m_.layers[u].out_bytes;
      for (std::uint32_t v : consumers_[l])
        if (!in[v]) {  // once per layer that leaves (consumers of one stage share the message)
          r.boundary_bytes += L.out_bytes;
          break;
        }
    }
    return ranges_.emplace(key, std::move(r)).first->second;
  }

  double allreduce_s(const RangeInfo& r, std::uint32_t replicas) const {
    if (replicas < 2) return 0;
    const double p = replicas;
    return 2 * (p - 1) / p * r.params * m_.param_bytes / dev_.link_bytes_per_s;
  }

  double stage_tps(RangeInfo& r, std::uint32_t replicas, std::uint64_t b) {
    const std::uint64_t per = b / replicas;
    auto it = r.pass_s.find(per);
    if (it == r.pass_s.end())
      it = r.pass_s
               .emplace(per, pass_seconds(m_, r.layers, double(per), dev_, false) +
                                 pass_seconds(m_, r.layers, double(per), dev_, true))
               .first;
    const double compute = it->second / double(b);
    // activations in and gradients out (and the reverse) share each replica's link both ways
    const double network = r.boundary_bytes / (replicas * dev_.link_bytes_per_s);
    return std::max(compute, network);
  }

  double memory(const RangeInfo& r, std::uint32_t replicas, std::uint64_t in_flight) const {
    return stage_memory(m_, r.params, r.stash, in_flight, replicas);
  }

  // The range as one stage: the least in-flight (then TPS) over replicas, micro-batch and k.
  // Devices matter only through the most replicas they allow (a power of two), so the value is
  // memoised by that (per probe): a series' first stage on 16 to 31 devices is priced once.
  Value one_stage(std::uint32_t node, std::uint32_t lo, std::uint32_t hi, std::uint32_t d, const Config& succ) {
    std::uint32_t most = o_.max_replicas ? std::min(d, o_.max_replicas) : d;
    while (most & (most - 1)) most &= most - 1;
    const Key key = key_of(node, lo, hi, most, succ);
    if (auto it = stage_memo_.find(key); it != stage_memo_.end()) return it->second;
    return stage_memo_.emplace(key, price_stage(node, lo, hi, most, succ)).first->second;
  }

  Value price_stage(std::uint32_t node, std::uint32_t lo, std::uint32_t hi, std::uint32_t most, const Config& succ) {
    RangeInfo& r = info(node, lo, hi);
    Value best;
    for (std::uint32_t rep = 1; rep <= most; rep *= 2)
      for (std::uint64_t b : batches_) {
        if (b < rep) continue;
        const double tps = stage_tps(r, rep, b);
        if (tps > tps_ || allreduce_s(r, rep) > cap_) continue;
        for (std::uint32_t k : o_.ks) {
          if (b * k > o_.mini_batch) continue;
          const std::uint64_t i = succ.b ? kfkb_in_flight(k, b, succ.k, succ.b, succ.i) : k * b;
          if (memory(r, rep, i) > dev_.capacity_bytes) continue;
          if (i < best.entry.i || (i == best.entry.i && tps < best.tps)) {
            best.entry = {b, i, k};
            best.how = How::Stage;
            best.replicas = rep;
            best.tps = tps;
          }
        }
      }
    return best;
  }

  // Fewer samples in flight at the entry; on a tie the smaller entry micro-batch, which costs
  // the stages before it less (Table 3.2).
  static bool better(const Value& a, const Value& b) {
    return a.entry.i < b.entry.i || (a.entry.i == b.entry.i && a.entry.b < b.entry.b);
  }

  // Whether a first part before (series) or beside (parallel) `rest` cannot beat `best`: a stage
  // holds more in flight than its successor (Table 3.2 adds to i_y), and parts side by side hold
  // the larger count. Skips pricing the first part; the DP's values are unchanged.
  static bool cannot_win(const Value& rest, const Value& best, bool series) {
    return series ? rest.entry.i >= best.entry.i : rest.entry.i > best.entry.i;
  }

  // Two parts of a parallel node side by side: the larger in-flight count at their shared entry.
  static Value side_by_side(const Value& a, const Value& b) {
    Value v = a.entry.i >= b.entry.i ? a : b;
    if (a.entry.i == kInf || b.entry.i == kInf) v.entry.i = kInf;
    return v;
  }

  std::uint32_t last_child(std::uint32_t node) const {
    const SpNode& c = t_.nodes[node];
    return c.kind == SpNode::Leaf ? 0u : static_cast<std::uint32_t>(c.children.size() - 1);
  }

  // The tail of a join: children [k, last] as one stage on d1 devices, or the last child
  // decomposed (k = last).
  Value join_tail(std::uint32_t node, std::uint32_t k, std::uint32_t d1, const Config& succ, bool child) {
    const SpNode& n = t_.nodes[node];
    if (!child) return one_stage(node, k, last_child(node), d1, succ);
    const std::uint32_t c = n.children[k];
    return solve(c, 0, last_child(c), d1, succ);
  }

  // What the other children of a join send to: the stage of the tail that holds the join layer.
  Config join_target(std::uint32_t node, std::uint32_t k, std::uint32_t d1, const Config& succ, bool child) {
    const Value tail = join_tail(node, k, d1, succ, child);
    if (!child || tail.entry.i == kInf) return tail.entry;
    const std::uint32_t c = t_.nodes[node].children[k];
    return stage_config(c, 0, last_child(c), d1, succ, t_.nodes[node].join_layer);
  }

  bool holds(std::uint32_t node, std::uint32_t lo, std::uint32_t hi, std::uint32_t layer) {
    const auto& ls = info(node, lo, hi).layers;
    return std::binary_search(ls.begin(), ls.end(), layer);
  }

  // The configuration of the stage that holds `layer` in the sub-plan solve() chose.
  Config stage_config(std::uint32_t node, std::uint32_t lo, std::uint32_t hi, std::uint32_t d, const Config& succ,
                      std::uint32_t layer) {
    Config found;
    walk(node, lo, hi, d, succ,
         [&](std::uint32_t n, std::uint32_t a, std::uint32_t b) { return holds(n, a, b, layer); },
         [&](std::uint32_t, std::uint32_t, std::uint32_t, const Value& v) { found = v.entry; });
    return found;
  }

  // Calls stage(node, lo, hi, value) for each stage of the sub-plan solve() chose, in topological
  // order (a join's other children before its tail); a part for which enter(node, lo, hi) is
  // false is skipped with its stages.
  template <class Enter, class Stage>
  void walk(std::uint32_t node, std::uint32_t lo, std::uint32_t hi, std::uint32_t d, const Config& succ,
            const Enter& enter, const Stage& stage) {
    const Value v = solve(node, lo, hi, d, succ);
    if (v.entry.i == kInf) throw Error("pipeline planner: internal: walking an infeasible plan");
    const SpNode& n = t_.nodes[node];
    const bool series = n.kind == SpNode::Series;
    const auto child = [&](std::uint32_t c, std::uint32_t dc, const Config& after) {
      if (enter(node, c, c)) walk(n.children[c], 0, last_child(n.children[c]), dc, after, enter, stage);
    };
    const std::uint32_t split = lo + v.split;  // stored relative to lo: equal ranges share values
    switch (v.how) {
      case How::None: break;
      case How::Stage: stage(node, lo, hi, v); break;
      case How::Child: child(lo, d, succ); break;
      case How::StageThenRest: {
        const Value rest = solve(node, split + 1, hi, d - v.d1, succ);
        if (enter(node, lo, split))
          stage(node, lo, split, one_stage(node, lo, split, v.d1, series ? rest.entry : succ));
        if (enter(node, split + 1, hi)) walk(node, split + 1, hi, d - v.d1, succ, enter, stage);
        break;
      }
      case How::ChildThenRest: {
        const Value rest = solve(node, lo + 1, hi, d - v.d1, succ);
        child(lo, v.d1, series ? rest.entry : succ);
        if (enter(node, lo + 1, hi)) walk(node, lo + 1, hi, d - v.d1, succ, enter, stage);
        break;
      }
      case How::JoinTail: {
        if (enter(node, lo, split - 1))
          walk(node, lo, split - 1, d - v.d1, join_target(node, split, v.d1, succ, v.tail_child), enter, stage);
        if (v.tail_child)
          child(split, v.d1, succ);
        else if (enter(node, split, hi))
          stage(node, split, hi, join_tail(node, split, v.d1, succ, false));
        break;
      }
    }
  }

  // A parallel node's range of children poses the same subproblem as any other range of the
  // same node with the same sequence of child classes (its children share no edge, and a join's
  // ranges that hold the join are told apart by their length): CANDLE-Uno's branches 1-3 and 2-4.
  Key key_of(std::uint32_t node, std::uint32_t lo, std::uint32_t hi, std::uint32_t d, const Config& succ) {
    const SpNode& n = t_.nodes[node];
    if (n.kind != SpNode::Parallel || !o_.share_equal_subproblems) return Key{class_[node], lo, hi, d, succ};
    auto [it, fresh] = range_ids_.try_emplace(node);
    std::vector<std::uint32_t>& ids = it->second;
    const std::size_t c = n.children.size();
    if (fresh) {
      ids.assign(c * c, 0);
      for (std::size_t a = 0; a < c; ++a)
        for (std::size_t b = a; b < c; ++b) {
          std::vector<std::uint32_t> seq = {class_[node]};
          for (std::size_t x = a; x <= b; ++x) seq.push_back(class_[n.children[x]]);
          ids[a * c + b] = range_classes_.emplace(std::move(seq), std::uint32_t(range_classes_.size())).first->second;
        }
    }
    return Key{class_[node], ids[lo * c + hi], kRangeClass, d, succ};
  }

  Value solve(std::uint32_t node, std::uint32_t lo, std::uint32_t hi, std::uint32_t d, const Config& succ) {
    const Key key = key_of(node, lo, hi, d, succ);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    ++states_;
    Value best = one_stage(node, lo, hi, d, succ);
    const SpNode& n = t_.nodes[node];
    if (n.kind == SpNode::Leaf) {
    } else if (lo == hi) {
      if (t_.nodes[n.children[lo]].kind != SpNode::Leaf) {
        Value v = solve(n.children[lo], 0, last_child(n.children[lo]), d, succ);
        v.how = How::Child;
        if (better(v, best)) best = v;
      }
    } else if (n.join && hi == last_child(node)) {
      // the tail first: the other children send to the stage of it that holds the join
      for (std::uint32_t k = lo + 1; k <= hi; ++k)
        for (std::uint32_t d1 = 1; d1 < d; ++d1)
          for (bool child : {false, true}) {
            if (child && (k != hi || t_.nodes[n.children[k]].kind == SpNode::Leaf)) continue;
            const Value tail = join_tail(node, k, d1, succ, child);
            if (tail.entry.i == kInf) continue;
            const Value side = solve(node, lo, k - 1, d - d1, join_target(node, k, d1, succ, child));
            if (side.entry.i == kInf) continue;
            Value v = side_by_side(side, tail);
            v.how = How::JoinTail;
            v.split = k - lo;
            v.d1 = d1;
            v.tail_child = child;
            if (better(v, best)) best = v;
          }
    } else {
      const bool series = n.kind == SpNode::Series;
      for (std::uint32_t d1 = 1; d1 < d; ++d1) {
        // the rest first: in a series its entry is what the first part sends to
        for (std::uint32_t split = lo; split < hi; ++split) {
          const Value rest = solve(node, split + 1, hi, d - d1, succ);
          if (rest.entry.i == kInf || cannot_win(rest, best, series)) continue;
          const Config after = series ? rest.entry : succ;
          Value first = one_stage(node, lo, split, d1, after);
          if (first.entry.i == kInf) continue;
          Value v = series ? first : side_by_side(first, rest);
          v.how = How::StageThenRest;
          v.split = split - lo;
          v.d1 = d1;
          if (better(v, best)) best = v;
        }
        const std::uint32_t child = n.children[lo];
        if (t_.nodes[child].kind == SpNode::Leaf) continue;
        const Value rest = solve(node, lo + 1, hi, d - d1, succ);
        if (rest.entry.i == kInf || cannot_win(rest, best, series)) continue;
        const Value first = solve(child, 0, last_child(child), d1, series ? rest.entry : succ);
        if (first.entry.i == kInf) continue;
        Value v = series ? first : side_by_side(first, rest);
        v.how = How::ChildThenRest;
        v.d1 = d1;
        if (better(v, best)) best = v;
      }
    }
    memo_.emplace(key, best);
    return best;
  }

  const PipeModel& m_;
  const SpTree& t_;
  const DeviceSpec& dev_;
  const PipeOptions& o_;
  const bool chain_;
  const std::vector<double> cut_;
  std::vector<std::uint32_t> class_;  // node -> its structural class (node_classes)
  static constexpr std::uint32_t kRangeClass = std::numeric_limits<std::uint32_t>::max();  // Key::hi of a range class
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> range_ids_;  // parallel node -> [lo * c + hi]
  std::map<std::vector<std::uint32_t>, std::uint32_t> range_classes_;
  std::vector<std::uint64_t> batches_;
  std::vector<std::vector<std::uint32_t>> consumers_;
  std::unordered_map<std::uint64_t, RangeInfo> ranges_;
  std::unordered_map<Key, Value, KeyHash> memo_, stage_memo_;
  double tps_ = 0, cap_ = 0;
  std::uint64_t states_ = 0;
};

bool power_of_two(std::uint64_t x) { return x && (x & (x - 1)) == 0; }

// Stage edges: from layer edges, or (a chain) each stage to the next with what is live across
// the cut; and the longest path in stages.
void link_stages(const PipeModel& m, PipePlan& p, bool chain) {
  const auto connect = [&](std::uint32_t a, std::uint32_t b, double bytes) {
    auto& succ = p.stages[a].succs;
    const auto it = std::find(succ.begin(), succ.end(), b);
    if (it != succ.end()) {
      p.stages[a].succ_bytes[static_cast<std::size_t>(it - succ.begin())] += bytes;
      return;
    }
    succ.push_back(b);
    p.stages[a].succ_bytes.push_back(bytes);
    p.stages[b].preds.push_back(a);
  };
  if (chain) {
    const std::vector<double> cut = chain_cut_bytes(m);
    for (std::uint32_t s = 0; s + 1 < p.stages.size(); ++s) connect(s, s + 1, cut[p.stages[s + 1].layers.front()]);
  } else {
    std::vector<std::uint32_t> stage_of(m.layers.size());
    for (std::uint32_t s = 0; s < p.stages.size(); ++s)
      for (std::uint32_t l : p.stages[s].layers) stage_of[l] = s;
    std::vector<std::vector<std::uint32_t>> readers(m.layers.size());  // per layer, the stages reading it, each once
    for (std::uint32_t v = 0; v < m.layers.size(); ++v)
      for (std::uint32_t u : m.layers[v].inputs) {
        auto& r = readers[u];
        if (stage_of[v] != stage_of[u] && std::find(r.begin(), r.end(), stage_of[v]) == r.end()) r.push_back(stage_of[v]);
      }
    for (std::uint32_t u = 0; u < m.layers.size(); ++u)
      for (std::uint32_t b : readers[u]) {
        if (b < stage_of[u]) throw Error("pipeline planner: internal: a stage edge goes backward");
        connect(stage_of[u], b, m.layers[u].out_bytes);
      }
  }
  std::vector<std::uint32_t> depth(p.stages.size(), 1);
  for (std::size_t s = p.stages.size(); s-- > 0;)
    for (std::uint32_t t : p.stages[s].succs) depth[s] = std::max(depth[s], depth[t] + 1);
  p.depth = p.stages.empty() ? 0 : *std::max_element(depth.begin(), depth.end());
  for (PipeStage& s : p.stages) {
    s.name = m.layers[s.layers.front()].name;
    if (s.layers.size() > 1) s.name += ".." + m.layers[s.layers.back()].name;
  }
}

// Devices for the stages: each stage's replicas on a block of consecutive devices aligned to
// its size (a power of two), largest stages first, lowest free block first, so that a group of
// replicas shares the fastest dimensions it can (4 devices in a node of 4 are one node, not two
// halves of neighbours). False (and nothing changed) when no aligned block is free. The search
// leaves stages on consecutive devices in its order, which keeps a branch's stages together;
// the planner keeps whichever of the two its estimate prefers.
bool assign_devices(PipePlan& p, std::uint32_t devices) {
  std::vector<std::uint32_t> order(p.stages.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return p.stages[a].replicas > p.stages[b].replicas; });
  std::vector<char> used(devices, 0);
  std::vector<std::uint32_t> first(p.stages.size());
  for (std::uint32_t x : order) {
    const std::uint32_t r = p.stages[x].replicas;
    bool placed = false;
    for (std::uint32_t at = 0; at + r <= devices && !placed; at += r) {
      if (std::any_of(used.begin() + at, used.begin() + at + r, [](char u) { return u != 0; })) continue;
      std::fill(used.begin() + at, used.begin() + at + r, 1);
      first[x] = at;
      placed = true;
    }
    if (!placed) return false;
  }
  for (std::size_t x = 0; x < p.stages.size(); ++x) p.stages[x].first_device = first[x];
  return true;
}

// The in-flight samples of every stage from the final stage graph (Table 3.2 against each
// successor, the largest), last stage first, and the memory that follows. The search used the
// same rule along its decomposition; this also covers a stage with successors in two places.
void settle_in_flight(const PipeModel& m, const DeviceSpec& dev, PipePlan& p) {
  for (std::size_t x = p.stages.size(); x-- > 0;) {
    PipeStage& s = p.stages[x];
    std::uint64_t i = s.succs.empty() ? s.k * s.micro_batch : 0;
    for (std::uint32_t y : s.succs) {
      const PipeStage& t = p.stages[y];
      i = std::max(i, kfkb_in_flight(s.k, s.micro_batch, t.k, t.micro_batch, t.in_flight));
    }
    s.in_flight = i;
    double params = 0, stash = 0;
    for (std::uint32_t l : s.layers) {
      params += m.layers[l].params;
      stash += m.layers[l].stash_bytes;
    }
    s.memory_bytes = stage_memory(m, params, stash, s.in_flight, s.replicas);
    if (s.memory_bytes > dev.capacity_bytes)
      throw Error(fmt::format("pipeline planner: stage {} ({}) needs {:.3g} GB for {} samples in flight, more than "
                              "a device's {:.3g} GB",
                              x, s.name, s.memory_bytes / 1e9, s.in_flight, dev.capacity_bytes / 1e9));
  }
}

}  // namespace

SpTree sp_decompose(const PipeModel& m) {
  validate(m);
  return SpBuilder(m).build();
}

SpTree chain_tree(const PipeModel& m) {
  validate(m);
  SpBuilder b(m);
  std::vector<std::uint32_t> leaves;
  for (std::uint32_t l = 0; l < m.layers.size(); ++l) leaves.push_back(b.leaf(l));
  const std::uint32_t root = b.compose(SpNode::Series, leaves);
  return b.take(root);
}

const char* pipe_planner_name(PipePlanner p) { return p == PipePlanner::GraphPipe ? "graphpipe" : "sequential"; }

PipePlanner parse_pipe_planner(const std::string& name) {
  if (name == "graphpipe") return PipePlanner::GraphPipe;
  if (name == "sequential") return PipePlanner::Sequential;
  throw Error(fmt::format("unknown pipeline planner '{}': expected graphpipe or sequential", name));
}

DeviceSpec device_spec(const sim::Config& cfg, std::uint32_t devices) {
  if (!cfg.system.npu)
    throw Error(fmt::format("config '{}' has no system.npu: the pipeline planner prices stages on it (docs/config.md)",
                            cfg.name));
  if (devices == 0 || devices > cfg.system.chips)
    throw Error(fmt::format("devices = {}: config '{}' has {} chips", devices, cfg.name, cfg.system.chips));
  if (cfg.chip.offchip.capacity_bytes == 0)
    throw Error(fmt::format("config '{}': chip.offchip.capacity_bytes is 0: the devices' memory", cfg.name));
  DeviceSpec d;
  d.devices = devices;
  d.clock_hz = cfg.clock_ghz * 1e9;
  d.flops_per_s = cfg.system.npu->fp16_flops_per_cycle * d.clock_hz;
  d.memory_bytes_per_s = cfg.system.npu->memory_bytes_per_cycle * d.clock_hz;
  d.capacity_bytes = static_cast<double>(cfg.chip.offchip.capacity_bytes);
  double slowest = std::numeric_limits<double>::infinity();
  for (const sim::Dimension& dim : cfg.system.dimensions) {
    slowest = std::min(slowest, dim.bytes_per_cycle());
    d.dims.emplace_back(dim.size, dim.bytes_per_cycle() * d.clock_hz);
  }
  if (!std::isfinite(slowest))
    throw Error(fmt::format("config '{}' has no system.dimensions: pipeline stages need links", cfg.name));
  d.link_bytes_per_s = slowest * d.clock_hz;
  return d;
}

double DeviceSpec::link_between(std::uint32_t a, std::uint32_t b) const {
  double rate = std::numeric_limits<double>::infinity();
  for (const auto& [size, bytes_per_s] : dims) {
    if (a % size != b % size) rate = std::min(rate, bytes_per_s);
    a /= size;
    b /= size;
  }
  return std::isfinite(rate) ? rate : link_bytes_per_s;
}

std::uint64_t kfkb_in_flight(std::uint32_t kx, std::uint64_t bx, std::uint32_t ky, std::uint64_t by, std::uint64_t iy) {
  const std::uint64_t X = kx * bx;
  if (by == 0) return X;
  const std::uint64_t Y = ky * by, M = std::max(bx, by);
  if (M < X && X < Y) return iy + 2 * M;
  if (M == X && X < Y) return iy + M;
  if (bx <= by && by < Y && Y < X) return iy + X - Y + 2 * by;
  if (bx <= by && by == Y && Y < X) return iy + X;
  if (by <= bx && bx < Y && Y < X) return iy + X - Y + 2 * bx;
  if (by <= bx && bx == Y && Y < X) return iy + X;
  if (M == Y && Y == X) return iy + Y;
  if (M < Y && Y == X) return iy + 2 * M;
  if (X < by) return iy + by;            // b_x <= k_x b_x < b_y <= k_y b_y
  if (Y < bx) return iy + X - Y + bx;    // b_y <= k_y b_y < b_x <= k_x b_x
  return iy + X + Y;                     // not reached: the table covers every order
}

double pass_seconds(const PipeModel& m, const std::vector<std::uint32_t>& layers, double samples,
                    const DeviceSpec& dev, bool backward) {
  const double x = backward ? 2 : 1;
  double t = 0;
  for (std::uint32_t l : layers) {
    const PipeLayer& L = m.layers[l];
    t += x * std::max(L.flops * samples / dev.flops_per_s,
                      (L.weight_read_bytes + L.sample_bytes * samples) / dev.memory_bytes_per_s);
  }
  return t;
}

PipePlan plan_pipeline(const PipeModel& m, const DeviceSpec& dev, const PipeOptions& o) {
  validate(m);
  if (!power_of_two(o.mini_batch) || !power_of_two(o.min_micro_batch) || o.min_micro_batch > o.mini_batch)
    throw Error(fmt::format("pipeline planner: mini-batch {} and smallest micro-batch {} must be powers of two, "
                            "the micro-batch no larger", o.mini_batch, o.min_micro_batch));
  // every micro-batch is a pass per stage in the schedule and messages in the program
  if (o.mini_batch > 65536)
    throw Error(fmt::format("pipeline planner: mini-batch {}: at most 65536 samples", o.mini_batch));
  if (!(o.tolerance > 0 && o.tolerance < 1))
    throw Error(fmt::format("pipeline planner: tolerance {}: expected between 0 and 1", o.tolerance));
  if (o.ks.empty() || std::find(o.ks.begin(), o.ks.end(), 0u) != o.ks.end())
    throw Error("pipeline planner: kFkB k must be at least 1");
  if (o.max_replicas != 0 && !power_of_two(o.max_replicas))
    throw Error(fmt::format("pipeline planner: at most {} replicas per stage: expected a power of two (0: no limit)",
                            o.max_replicas));
  // The DP splits devices at every node: its time grows about as devices^2.5 (MMT on 128 devices:
  // 4 CPU-s for GraphPipe, 28 for the chain); beyond that it would look like a hang.
  if (dev.devices == 0 || dev.devices > 128)
    throw Error(fmt::format("pipeline planner: {} devices: expected 1 to 128 (the search grows as about devices^2.5; "
                            "the chain takes half a minute on 128)", dev.devices));
  const SpTree tree = o.planner == PipePlanner::GraphPipe ? sp_decompose(m) : chain_tree(m);
  Search search(m, tree, dev, o);
  // A stage's gradient all-reduce runs after its last backward pass, at the end of the
  // iteration, so it adds to the bottleneck rather than sharing its time: the iteration is
  // about B x (bottleneck time per sample) + (the longest all-reduce). The search bisects the
  // time per sample with no cap on the all-reduce, then again with the cap just below the
  // longest all-reduce of the plan it found (and at most half the cap before), and so on (the
  // trade-off's frontier, at most kFrontier plans), and keeps the plan whose schedule (kFkB with
  // the searched k; 1F1B where k is 1) is estimated fastest.
  constexpr int kFrontier = 12;
  constexpr double kNoLimit = std::numeric_limits<double>::infinity();
  const std::string no_fit = fmt::format("pipeline planner: no plan of {} fits {} devices of {:.3g} GB: a stage's "
                                         "parameter state ({} B per parameter) and activations do not fit",
                                         m.name, dev.devices, dev.capacity_bytes / 1e9, m.state_bytes_per_param);
  std::uint32_t probes = 1;
  if (search.probe(kNoLimit, kNoLimit) == kInf) throw Error(no_fit);  // memory rules every plan out
  std::vector<std::uint32_t> all(m.layers.size());
  std::iota(all.begin(), all.end(), 0u);
  const double start = pass_seconds(m, all, 1, dev, false) + pass_seconds(m, all, 1, dev, true) + 1e-12;
  std::optional<PipePlan> best;
  double best_s = 0;
  std::string rejected;  // why the last plan found was not kept, if none was
  double cap = kNoLimit;
  for (int round = 0; round < kFrontier && cap >= 0; ++round) {
    ++probes;
    if (search.probe(kNoLimit, cap) == kInf) break;  // the cap is too tight for any time per sample
    double hi = start;  // an upper end, widened until the search finds a plan
    for (int widen = 0; search.probe(hi, cap) == kInf && widen < 64; ++widen, ++probes) hi *= 2;
    ++probes;
    double lo = 0;
    while (hi - lo > o.tolerance * hi) {
      const double mid = (lo + hi) / 2;
      ++probes;
      if (search.probe(mid, cap) == kInf)
        lo = mid;
      else
        hi = mid;
    }
    ++probes;
    if (search.probe(hi, cap) == kInf) break;  // not reached: hi was feasible
    PipePlan plan;
    plan.model = m.name;
    plan.planner = o.planner;
    plan.mini_batch = o.mini_batch;
    plan.linearised_parts = tree.linearised_parts;
    plan.stages = search.stages();
    double longest = 0;
    for (const PipeStage& s : plan.stages) {
      plan.devices_used += s.replicas;
      plan.tps_s = std::max(plan.tps_s, s.tps_s);
      longest = std::max(longest, s.allreduce_s);
    }
    cap = longest > 0 ? std::min(longest * (1 - 1e-9), cap / 2) : -1;  // at least halving: the walk ends
    double t = 0;
    try {  // a plan whose settled memory or schedule fails is passed over, not the search
      link_stages(m, plan, o.planner == PipePlanner::Sequential);
      settle_in_flight(m, dev, plan);
      t = schedule_pipeline(plan, dev, MicroSchedule::KFKB).iteration_s;
      // the same stages on aligned blocks of devices, if the estimate prefers them
      PipePlan aligned = plan;
      if (assign_devices(aligned, dev.devices)) {
        const double ta = schedule_pipeline(aligned, dev, MicroSchedule::KFKB).iteration_s;
        if (ta < t) {
          plan = std::move(aligned);
          t = ta;
        }
      }
    } catch (const Error& e) {
      rejected = e.what();
      continue;
    }
    if (!best || t < best_s) {
      best = std::move(plan);
      best_s = t;
    }
  }
  if (!best) throw Error(rejected.empty() ? no_fit : rejected);
  best->binary_search_probes = probes;
  best->dp_states = search.states();
  return *best;
}

}  // namespace tessera::partition
