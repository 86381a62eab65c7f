#include "compiler/lower/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <map>
#include <unordered_map>

#include "sim/common/error.h"
#include "sim/core/compute_model.h"
#include "sim/functional/data.h"

namespace tessera::lower {

namespace {

using sim::Box;
using sim::View;
using Coords = std::vector<std::int64_t>;

// Clips a box to a tensor's shape; false when nothing is left.
bool clip(Box& b, const std::vector<std::int64_t>& shape) {
  for (std::size_t d = 0; d < shape.size(); ++d) {
    std::int64_t lo = std::max<std::int64_t>(b.origin[d], 0), hi = std::min(b.origin[d] + b.extent[d], shape[d]);
    if (hi <= lo) return false;
    b.origin[d] = lo;
    b.extent[d] = hi - lo;
  }
  return true;
}

// Splits a box into pieces of at most `max_elems` elements, outer dimensions first.
void split(const Box& b, std::int64_t max_elems, std::vector<Box>& out) {
  if (b.elements() <= max_elems) { out.push_back(b); return; }
  std::size_t d = 0;
  while (d < b.extent.size() && b.extent[d] == 1) ++d;
  std::int64_t inner = 1;
  for (std::size_t e = d + 1; e < b.extent.size(); ++e) inner *= b.extent[e];
  const std::int64_t rows = std::max<std::int64_t>(1, max_elems / inner);
  for (std::int64_t r = 0; r < b.extent[d]; r += rows) {
    Box s = b;
    s.origin[d] = b.origin[d] + r;
    s.extent[d] = std::min(rows, b.extent[d] - r);
    if (inner > max_elems) split(s, max_elems, out);
    else out.push_back(s);
  }
}

// split()'s pieces of a box of `extent`, counted by their elements (times `mult`), in the
// same recursion without making them.
void split_counts(std::vector<std::int64_t> extent, std::int64_t max_elems, std::int64_t mult,
                  std::map<std::int64_t, std::int64_t>& out) {
  std::int64_t elems = 1;
  for (auto e : extent) elems *= e;
  if (elems <= max_elems) {
    out[elems] += mult;
    return;
  }
  std::size_t d = 0;
  while (d < extent.size() && extent[d] == 1) ++d;
  std::int64_t inner = 1;
  for (std::size_t e = d + 1; e < extent.size(); ++e) inner *= extent[e];
  const std::int64_t rows = std::max<std::int64_t>(1, max_elems / inner);
  const std::int64_t whole = extent[d] / rows, rest = extent[d] % rows;
  for (const auto& [len, n] : {std::pair{rows, whole}, std::pair{rest, std::int64_t{rest > 0 ? 1 : 0}}}) {
    if (n == 0) continue;
    extent[d] = len;
    if (inner > max_elems) split_counts(extent, max_elems, mult * n, out);
    else out[len * inner] += mult * n;
  }
}

struct Home {
  std::string buffer;
  std::vector<View> views;  // per core; empty tensor name: the core holds none of it
};

// Geometry of a plan on cores 0..cores-1: mixed-radix coordinates over the plan's axes.
class Geometry {
 public:
  Geometry(const plan::Plan& p, const ir::Operator& op) : p_(p), op_(op), offset_(p.axes.size(), 0) {}
  // VGM rounds: the slice [offset, offset + len) of a reduction axis.
  void set_offset(std::size_t a, std::int64_t v) { offset_[a] = v; }

  Coords coords(std::int64_t c) const {
    Coords idx(p_.axes.size());
    for (std::size_t a = p_.axes.size(); a-- > 0;) { idx[a] = c % p_.fop[a]; c /= p_.fop[a]; }
    return idx;
  }
  std::int64_t core(const Coords& idx) const {
    std::int64_t c = 0;
    for (std::size_t a = 0; a < p_.axes.size(); ++a) c = c * p_.fop[a] + idx[a];
    return c;
  }
  std::int64_t axis_lo(const Coords& idx, std::size_t a) const { return idx[a] * p_.len[a] + offset_[a]; }
  // Ring coordinate of a part: (block, q) from the part's share axes.
  std::int64_t j(const plan::Part& x, const Coords& idx) const {
    std::int64_t v = 0;
    for (int a : x.share_axes) v = v * p_.fop[static_cast<std::size_t>(a)] + idx[static_cast<std::size_t>(a)];
    return v;
  }
  std::int64_t q(const plan::Part& x, const Coords& idx) const { return j(x, idx) % x.ft[static_cast<std::size_t>(x.rot_dim)]; }
  // c0 on a rotating axis: the chunk this core computes at step 0 (skewed so that every ring
  // holds ascending partitions and every core's operands meet, generalising Cannon).
  std::int64_t c0(std::size_t a, const Coords& idx) const {
    const std::int64_t n = p_.steps_on[a];
    std::int64_t v = 0;
    for (const auto& x : p_.parts)
      if (x.rot_axis == static_cast<int>(a)) v += x.window_chunks * q(x, idx);
    return v % n;
  }
  std::int64_t ring_pos(const plan::Part& x, const Coords& idx) const {
    return c0(static_cast<std::size_t>(x.rot_axis), idx) / x.window_chunks;
  }
  // The core at ring position +delta of `x`'s ring.
  std::int64_t neighbour(const plan::Part& x, const Coords& idx, std::int64_t delta) const {
    const std::int64_t ft = x.ft[static_cast<std::size_t>(x.rot_dim)];
    std::int64_t jj = j(x, idx);
    jj = (jj / ft) * ft + (((jj % ft) + delta) % ft + ft) % ft;
    Coords n = idx;
    for (std::size_t i = x.share_axes.size(); i-- > 0;) {
      const auto a = static_cast<std::size_t>(x.share_axes[i]);
      n[a] = jj % p_.fop[a];
      jj /= p_.fop[a];
    }
    return core(n);
  }
  // The sub-tensor box a core's sub-operator covers (before windowing).
  Box sub_box(const ir::Access& acc, const Coords& idx) const {
    Box b;
    for (const auto& ix : acc.indices) {
      std::int64_t lo = ix.offset, hi = ix.offset;
      for (const auto& t : ix.terms) {
        const std::size_t a = axis(t.axis);
        lo += t.coeff * axis_lo(idx, a);
        hi += t.coeff * (axis_lo(idx, a) + p_.len[a] - 1);
      }
      b.origin.push_back(lo);
      b.extent.push_back(hi - lo + 1);
    }
    return b;
  }
  View view(std::size_t part, const Coords& idx) const {
    const plan::Part& x = p_.parts[part];
    const ir::Access& acc = part < op_.expr.inputs.size() ? op_.expr.inputs[part] : op_.expr.output;
    Box b = sub_box(acc, idx);
    View v{x.tensor, b.origin, b.extent, std::vector<bool>(b.origin.size(), false)};
    if (x.rot_dim >= 0) {
      const auto d = static_cast<std::size_t>(x.rot_dim);
      const std::int64_t rp = p_.pace[static_cast<std::size_t>(x.rot_axis)];
      v.origin[d] += ring_pos(x, idx) * x.window_chunks * rp;
      v.extent[d] = x.window_chunks * rp;
      v.cyclic[d] = true;
    }
    return v;
  }
  std::size_t axis(const std::string& name) const {
    return static_cast<std::size_t>(std::find(p_.axes.begin(), p_.axes.end(), name) - p_.axes.begin());
  }

 private:
  const plan::Plan& p_;
  const ir::Operator& op_;
  std::vector<std::int64_t> offset_;
};

// Operand `part`'s box on every core of the plan (`cores` entries; the others hold nothing).
std::vector<View> views_of(const Geometry& g, std::int64_t plan_cores, std::size_t part, std::size_t cores) {
  std::vector<View> v(cores);
  for (std::int64_t c = 0; c < plan_cores; ++c) v[static_cast<std::size_t>(c)] = g.view(part, g.coords(c));
  return v;
}

// The chunk of rotating operand k that the core at `idx` sends after `shifted` shifts on its
// axis: the one at the front of its window.
Box shift_box(const Geometry& g, const plan::Plan& p, const ir::Operator& op, std::size_t k, const Coords& idx,
              std::int64_t shifted) {
  const plan::Part& x = p.parts[k];
  const auto d = static_cast<std::size_t>(x.rot_dim);
  const auto axis = static_cast<std::size_t>(x.rot_axis);
  const std::int64_t rp = p.pace[axis];
  const std::int64_t chunk = (g.ring_pos(x, idx) * x.window_chunks + shifted) % p.steps_on[axis];
  const View v = g.view(k, idx);
  Box b{v.origin, v.extent};
  b.origin[d] = g.sub_box(op.expr.inputs[k], idx).origin[d] + chunk * rp;
  b.extent[d] = rp;
  return b;
}

// What that shift moves: the chunk in pieces that fit the shift buffer.
std::vector<Box> shift_boxes(const Geometry& g, const plan::Plan& p, const ir::Operator& op, std::size_t k,
                             const Coords& idx, std::int64_t shifted, Bytes shift_buffer_bytes) {
  std::vector<Box> pieces;
  split(shift_box(g, p, op, k, idx, shifted), static_cast<std::int64_t>(shift_buffer_bytes / 2), pieces);
  return pieces;
}

}  // namespace

std::vector<View> stripes(const ir::Tensor& t, std::size_t ncores) {
  const std::vector<std::int64_t> parts = plan::stripe_parts(t, ncores);
  std::vector<View> v(ncores);
  std::int64_t total = 1;
  for (auto p : parts) total *= p;
  for (std::int64_t c = 0; c < total; ++c) {
    std::int64_t r = c;
    View view{t.name, std::vector<std::int64_t>(t.shape.size()), std::vector<std::int64_t>(t.shape.size()),
              std::vector<bool>(t.shape.size(), false)};
    bool empty = false;
    for (std::size_t d = t.shape.size(); d-- > 0;) {
      const std::int64_t i = r % parts[d];
      r /= parts[d];
      const std::int64_t len = (t.shape[d] + parts[d] - 1) / parts[d];
      view.origin[d] = i * len;
      view.extent[d] = std::min(len, t.shape[d] - i * len);
      empty = empty || view.extent[d] <= 0;
    }
    if (!empty) v[static_cast<std::size_t>(c)] = view;
  }
  return v;
}

Bytes stripe_bytes(const ir::Tensor& t, std::size_t cores) {
  std::int64_t most = 0;
  for (const auto& v : stripes(t, cores)) most = std::max(most, v.tensor.empty() ? 0 : v.elements());
  return static_cast<Bytes>(most) * dtype_bytes(t.dtype);
}

namespace {

class Lowerer {
 public:
  Lowerer(const ir::Workload& w, const schedule::Schedule& s, const sim::Config& cfg, const Options& o)
      : w_(w), s_(s), cfg_(cfg), o_(o), ncores_(cfg.total_cores()), live_(ncores_, 0), sizes_(ncores_) {
    out_.name = fmt::format("{} ({})", w.name, s.planner);
    out_.functional = o.functional;
    out_.cores.resize(ncores_);
    out_.peak_bytes.assign(ncores_, 0);
    std::vector<std::uint32_t> all(ncores_);
    for (std::size_t c = 0; c < ncores_; ++c) all[c] = static_cast<std::uint32_t>(c);
    out_.groups.push_back({"all", all});
    if (o.functional)
      for (const auto& t : w.tensors()) {
        out_.data_tensors.push_back({t.name, t.shape});
        if (!t.values.empty()) out_.data_values[t.name] = &t.values;
      }
  }

  Lowered run() {
    // T10: the bounded buffer every rotation goes through, reserved once per core.
    bool shifts = false;  // any T10 operator
    for (std::size_t i = 0; i < s_.ops.size(); ++i) shifts = shifts || schedule::planner_of(s_, i) == "t10";
    if (shifts)
      for (std::size_t c = 0; c < ncores_; ++c) alloc(c, "shift", o_.shift_buffer_bytes, "the shift buffer");
    for (const auto& t : w_.tensors()) {
      if (t.role == ir::TensorRole::Input) place_input(t);
      if (t.role == ir::TensorRole::Weight) place_weight(t);
    }
    for (std::size_t i = 0; i < w_.ops().size(); ++i) run_op(i);
    return std::move(out_);
  }

 private:
  // ---- items -------------------------------------------------------------------------------
  // A buffer of `bytes` on core c; with a view (functional mode) it holds values.
  void alloc(std::size_t c, const std::string& buf, Bytes bytes, const std::string& where,
             const View* view = nullptr) {
    LItem it{K::Alloc};
    it.buf = name(buf);
    const int id = it.buf;
    it.bytes = static_cast<std::int64_t>(bytes);
    if (view && o_.functional) { it.aux = static_cast<int>(out_.views.size()); out_.views.push_back(*view); }
    out_.cores[c].push_back(it);
    live_[c] += bytes;
    out_.peak_bytes[c] = std::max(out_.peak_bytes[c], live_[c]);
    sizes_[c][id] = bytes;
    check_fit(c, where);
  }
  // `buf` on every core that has a view in `views`, sized by its view.
  void alloc_all(const std::string& buf, const std::vector<View>& views, const std::string& where) {
    for (std::size_t c = 0; c < ncores_; ++c)
      if (!views[c].tensor.empty()) alloc(c, buf, static_cast<Bytes>(views[c].elements()) * 2, where, &views[c]);
  }
  void free_all(const std::string& buf) {
    const int id = name(buf);
    for (std::size_t c = 0; c < ncores_; ++c)
      if (sizes_[c].count(id)) free(c, id);
  }
  void init(std::size_t c, const std::string& buf) {
    LItem it{K::Init};
    it.buf = name(buf);
    out_.cores[c].push_back(it);
  }
  void check_fit(std::size_t c, const std::string& where) const {
    const Bytes sram = cfg_.chip.core.sram_bytes;
    if (live_[c] > sram)
      throw FitError(fmt::format("workload '{}' does not fit ({} planner): at {}, core {} needs {} bytes of "
                                 "scratchpad but has {}; short by {} bytes", w_.name, s_.planner, where, c,
                                 live_[c], sram, live_[c] - sram), live_[c] - sram);
  }
  void free(std::size_t c, int id) {
    LItem it{K::Free};
    it.buf = id;
    out_.cores[c].push_back(it);
    if (auto at = sizes_[c].find(id); at != sizes_[c].end()) {
      live_[c] -= at->second;
      sizes_[c].erase(at);
    }
  }
  int tag(const std::string& op, const std::string& phase) {
    auto key = op + "\n" + phase;
    auto it = tag_index_.find(key);
    if (it != tag_index_.end()) return it->second;
    out_.tags.push_back(sim::Tag{op, phase});
    return tag_index_[key] = static_cast<int>(out_.tags.size()) - 1;
  }
  std::uint32_t group(std::int64_t cores) {
    if (cores >= static_cast<std::int64_t>(ncores_)) return 0;
    auto it = group_index_.find(cores);
    if (it != group_index_.end()) return it->second;
    std::vector<std::uint32_t> m;
    for (std::int64_t c = 0; c < cores; ++c) m.push_back(static_cast<std::uint32_t>(c));
    out_.groups.push_back({fmt::format("cores{}", cores), m});
    return group_index_[cores] = static_cast<std::uint32_t>(out_.groups.size() - 1);
  }
  int name(const std::string& n) {
    auto it = name_ids_.find(n);
    if (it != name_ids_.end()) return it->second;
    out_.names.push_back(n);
    return name_ids_[n] = static_cast<int>(out_.names.size()) - 1;
  }
  // The off-chip copy of a tensor in the memory of core c's chip.
  std::uint32_t offchip(const ir::Tensor& t, std::size_t c) {
    const std::uint32_t chip = cfg_.chip_of(static_cast<std::uint32_t>(c));
    const std::string n = chip == 0 ? t.name : fmt::format("{}@chip{}", t.name, chip);
    for (std::size_t i = 0; i < out_.offchip.size(); ++i)
      if (out_.offchip[i].name == n) return static_cast<std::uint32_t>(i);
    out_.offchip.push_back({n, chip, t.bytes()});
    return static_cast<std::uint32_t>(out_.offchip.size() - 1);
  }
  LItem msg(K k, std::size_t peer, const std::string& buf, std::int64_t bytes, int tg, const Box* box = nullptr) {
    LItem it{k};
    it.arg = static_cast<std::uint32_t>(peer);
    it.buf = name(buf);
    it.bytes = bytes;
    it.tag = tg;
    if (box && o_.functional) { it.aux = static_cast<int>(out_.boxes.size()); out_.boxes.push_back(*box); }
    return it;
  }
  LItem sync_item(std::uint32_t grp, int tg) {
    LItem it{K::Sync};
    it.arg = grp;
    it.tag = tg;
    return it;
  }
  LItem comp_item(CompItem ci, int tg) {
    LItem it{K::Compute};
    it.tag = tg;
    it.aux = static_cast<int>(out_.comps.size());
    out_.comps.push_back(std::move(ci));
    return it;
  }
  LItem copy_item(std::int64_t elements, const std::string& from, const std::string& to, int tg, int expr,
                  std::vector<std::pair<std::int64_t, std::int64_t>> ranges) {
    CompItem ci;
    ci.kind = "copy";
    ci.elements = elements;
    ci.cycles = sim::elementwise_cycles(cfg_.chip.core, sim::VecOp::Copy, static_cast<std::uint64_t>(elements));
    ci.ins = {name(from)};
    ci.out = name(to);
    ci.expr = expr;
    ci.ranges = std::move(ranges);
    return comp_item(std::move(ci), tg);
  }

  // ---- layouts -----------------------------------------------------------------------------
  std::vector<View> stripes(const ir::Tensor& t) const { return lower::stripes(t, ncores_); }

  std::vector<View> part_views(std::size_t op, std::size_t part, const plan::Plan& p,
                               int offset_axis = -1, std::int64_t offset = 0) const {
    Geometry g(p, w_.ops()[op]);
    if (offset_axis >= 0) g.set_offset(static_cast<std::size_t>(offset_axis), offset);
    return views_of(g, p.cores, part, ncores_);
  }

  void place_input(const ir::Tensor& t) {
    Home h{t.name, stripes(t)};
    alloc_all(h.buffer, h.views, fmt::format("model input '{}'", t.name));
    const int tg = tag("(load inputs)", "main");
    for (std::size_t c = 0; c < ncores_; ++c) {
      if (h.views[c].tensor.empty()) continue;
      if (o_.offchip_io) {
        LItem it = msg(K::Load, 0, h.buffer, h.views[c].elements() * 2, tg);
        it.arg = offchip(t, c);
        out_.cores[c].push_back(it);
      } else if (o_.functional) {
        init(c, h.buffer);
      }
    }
    homes_[t.name] = std::move(h);
  }

  using Interval = std::pair<std::int64_t, std::int64_t>;  // [lo, hi)

  // The boxes a view holds of a tensor of `shape`, clipped to it: one, or more where a cyclic
  // window wraps (two intervals in that dimension); none when it holds nothing.
  static std::vector<std::vector<Interval>> held_boxes(const View& v, const std::vector<std::int64_t>& shape) {
    std::vector<std::vector<Interval>> boxes{{}};
    for (std::size_t d = 0; d < shape.size(); ++d) {
      const std::int64_t n = shape[d], lo = v.origin[d], len = v.extent[d];
      std::vector<Interval> parts;
      if (d < v.cyclic.size() && v.cyclic[d] && len > 0) {
        const std::int64_t start = ((lo % n) + n) % n;
        if (len >= n) parts = {{0, n}};
        else if (start + len <= n) parts = {{start, start + len}};
        else parts = {{start, n}, {0, start + len - n}};
      } else if (std::min(lo + len, n) > std::max<std::int64_t>(lo, 0)) {
        parts = {{std::max<std::int64_t>(lo, 0), std::min(lo + len, n)}};
      }
      std::vector<std::vector<Interval>> grown;
      for (const auto& b : boxes)
        for (const Interval& x : parts) {
          grown.push_back(b);
          grown.back().push_back(x);
        }
      boxes = std::move(grown);
    }
    return boxes;
  }

  // Whether the views hold every element of t: the union of their boxes over a grid of the
  // boxes' edges (coordinate compression). A grid too fine to check says no (then stripes).
  static bool covers(const std::vector<View>& views, const ir::Tensor& t) {
    const std::size_t rank = t.shape.size();
    std::vector<std::vector<Interval>> boxes;
    for (const View& v : views)
      if (!v.tensor.empty())
        for (auto& b : held_boxes(v, t.shape)) boxes.push_back(std::move(b));
    std::vector<std::vector<std::int64_t>> edges(rank);
    std::size_t cells = 1;
    for (std::size_t d = 0; d < rank; ++d) {
      std::set<std::int64_t> e{0, t.shape[d]};
      for (const auto& b : boxes) e.insert({b[d].first, b[d].second});
      edges[d].assign(e.begin(), e.end());
      cells *= edges[d].size() - 1;
      if (cells > (std::size_t{1} << 22)) return false;
    }
    const auto cell = [&](std::size_t d, std::int64_t x) {
      return std::lower_bound(edges[d].begin(), edges[d].end(), x) - edges[d].begin();
    };
    std::vector<bool> held(cells, false);
    std::vector<std::int64_t> idx(rank);
    for (const auto& b : boxes) {  // mark the box's cells (an odometer over its cell ranges)
      for (std::size_t d = 0; d < rank; ++d) idx[d] = cell(d, b[d].first);
      for (bool done = false; !done;) {
        std::size_t flat = 0;
        for (std::size_t d = 0; d < rank; ++d) flat = flat * (edges[d].size() - 1) + static_cast<std::size_t>(idx[d]);
        held[flat] = true;
        done = true;
        for (std::size_t d = rank; d-- > 0;) {
          if (++idx[d] < cell(d, b[d].second)) { done = false; break; }
          idx[d] = cell(d, b[d].first);
        }
      }
    }
    return std::all_of(held.begin(), held.end(), [](bool h) { return h; });
  }

  void place_weight(const ir::Tensor& t) {
    // T10: the idle plan of the (first) operator that reads it; VGM: stripes.
    Home h{"w." + t.name, {}};
    auto cons = w_.consumers(t.name);
    if (cons.empty()) return;  // a weight nothing reads takes no space
    if (schedule::planner_of(s_, static_cast<std::size_t>(cons.front())) == "t10") {
      const auto op = static_cast<std::size_t>(cons.front());
      const auto& idle = s_.ops[op].idle;
      if (idle.weights_striped) h.views = stripes(t);
      else
        for (std::size_t i = 0; i < idle.parts.size(); ++i)
          if (idle.parts[i].tensor == t.name) { h.views = part_views(op, i, idle); break; }
      // An operator that reads only part of the weight (a constant index: a recurrent layer's
      // per-direction state) would leave the rest nowhere for the other readers: then stripes.
      if (!covers(h.views, t)) h.views = stripes(t);
    } else {
      h.views = stripes(t);
    }
    alloc_all(h.buffer, h.views, fmt::format("weight '{}' at rest", t.name));
    if (o_.functional)
      for (std::size_t c = 0; c < ncores_; ++c)
        if (!h.views[c].tensor.empty()) init(c, h.buffer);
    homes_[t.name] = std::move(h);
  }

  // Re-layouts before an operator, collected over all its operands and then emitted together as
  // one relayout (sim/program/relayout.h): on every core its sends first, then its local copies,
  // then its receives, so that no core holds back what others wait for while it waits for its
  // own operands.
  struct Gathering {
    std::vector<sim::Move> moves;
  };

  // The index of a layout in the program's table: layouts are shared (a tensor's home is read by
  // every consumer), so equal ones are stored once.
  std::uint32_t layout_index(sim::Layout l) {
    std::size_t h = std::hash<std::size_t>{}(l.cores.size());
    for (auto v : l.shape) h = h * 1099511628211ull ^ static_cast<std::size_t>(v);
    for (auto v : l.cores) h = h * 1099511628211ull ^ v;
    for (auto v : l.boxes) h = h * 1099511628211ull ^ static_cast<std::size_t>(v);
    for (std::uint32_t i : layout_ids_[h])
      if (out_.layouts[i] == l) return i;
    out_.layouts.push_back(std::move(l));
    const auto i = static_cast<std::uint32_t>(out_.layouts.size() - 1);
    layout_ids_[h].push_back(i);
    return i;
  }

  // Adds the move of tensor `t` from its home layout into `dst` views (buffer `buf`, already
  // allocated) to `g`.
  void redistribute(const ir::Tensor& t, const Home& src, const std::vector<View>& dst,
                    const std::string& buf, int tg, Gathering& g) {
    sim::Move m;
    m.from = layout_index(sim::layout_of(t.shape, src.views));
    m.to = layout_index(sim::layout_of(t.shape, dst));
    m.tag = tg >= 0 ? static_cast<std::uint32_t>(tg) : sim::kNoTag;
    m.element_bytes = 2;
    m.tensor = t.name;
    m.source = src.buffer;
    m.target = buf;
    g.moves.push_back(std::move(m));
  }

  // One relayout item on every core that holds a box of it.
  void emit(Gathering& g) {
    if (g.moves.empty()) return;
    std::vector<std::uint32_t> cores;
    for (const auto& m : g.moves)
      for (auto l : {m.from, m.to}) cores.insert(cores.end(), out_.layouts[l].cores.begin(), out_.layouts[l].cores.end());
    std::sort(cores.begin(), cores.end());
    cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
    LItem it{K::Relayout};
    it.arg = static_cast<std::uint32_t>(out_.relayouts.size());
    out_.relayouts.push_back(sim::Relayout{std::move(g.moves)});
    for (auto c : cores) out_.cores[c].push_back(it);
  }

  // ---- operators ---------------------------------------------------------------------------
  // What every core's items of one operator (or one VGM round) share.
  struct OpEmit {
    const ir::Operator& op;
    const plan::Plan& p;
    const Geometry& g;
    const std::vector<std::string>& bufs;  // inputs in expression order, then the output
    plan::StepCompute step;                // the same sub-task on every core
    int tag;
    std::uint32_t group;                   // the plan's cores, for the syncs of its shifts
  };

  void run_op(std::size_t i) {
    const ir::Operator& op = w_.ops()[i];
    const plan::Plan& p = s_.ops[i].active;
    const bool vgm = schedule::planner_of(s_, i) == "vgm";
    if (vgm && p.rounds > 1) { run_rounds(i); return; }
    std::vector<std::string> bufs(p.parts.size()), copies;
    const int t_setup = tag(op.name, "setup"), t_input = tag(op.name, "input"), t_main = tag(op.name, "main");
    Gathering gathering;
    for (std::size_t k = 0; k + 1 < p.parts.size(); ++k) {
      const ir::Tensor& t = w_.tensor(op.expr.inputs[k].tensor);
      const Home& h = homes_.at(t.name);
      auto views = part_views(i, k, p);
      if (same_layout(h.views, views)) { bufs[k] = h.buffer; continue; }
      bufs[k] = fmt::format("{}.in{}", op.name, k);
      alloc_all(bufs[k], views, fmt::format("operator '{}' input '{}'", op.name, t.name));
      copies.push_back(bufs[k]);
      const bool setup = !vgm && t.role == ir::TensorRole::Weight;
      redistribute(t, h, views, bufs[k], setup ? t_setup : t_input, gathering);
    }
    emit(gathering);
    // Output: T10 keeps it where it is computed; VGM computes into a local buffer, then stores.
    const ir::Tensor& out = w_.tensor(op.expr.output.tensor);
    auto out_views = part_views(i, p.parts.size() - 1, p);
    bufs.back() = vgm || read_by_vgm(out.name) ? op.name + ".out" : out.name;  // stored to stripes after
    alloc_all(bufs.back(), out_views, fmt::format("operator '{}' output", op.name));
    const Geometry g(p, op);
    const OpEmit e{op, p, g, bufs, plan::step_compute(p, op, cfg_), t_main, group(p.cores)};
    for (std::int64_t c = 0; c < p.cores; ++c) {
      std::vector<std::int64_t> t(p.axes.size(), 0);
      emit_loop(e, g.coords(c), t, 0, out_.cores[static_cast<std::size_t>(c)]);
    }
    for (const auto& b : copies) free_all(b);
    finish_op(i, out_views, bufs.back(), t_main);
  }

  // After the compute: VGM stores the output back to its stripes; model outputs go off-chip;
  // tensors whose last reader has run are freed; all cores sync.
  void finish_op(std::size_t i, const std::vector<View>& out_views, const std::string& out_buf, int t_main) {
    const ir::Operator& op = w_.ops()[i];
    const ir::Tensor& out = w_.tensor(op.expr.output.tensor);
    if (schedule::planner_of(s_, i) == "vgm" || read_by_vgm(out.name)) {
      Home h{out.name, stripes(out)};
      alloc_all(h.buffer, h.views, fmt::format("operator '{}' output in VGM", op.name));
      Gathering g;
      redistribute(out, Home{out_buf, out_views}, h.views, h.buffer, t_main, g);
      emit(g);
      free_all(out_buf);
      homes_[out.name] = std::move(h);
    } else {
      homes_[out.name] = Home{out.name, out_views};
    }
    if (out.output && (o_.offchip_io || o_.functional)) store(out, t_main);
    // Liveness: tensors whose last reader has run leave the scratchpad.
    for (const auto& in : op.expr.inputs) {
      const ir::Tensor& t = w_.tensor(in.tensor);
      if (t.role == ir::TensorRole::Weight) continue;
      auto cons = w_.consumers(t.name);
      if (!cons.empty() && cons.back() == static_cast<int>(i) && homes_.count(t.name)) {
        free_all(homes_.at(t.name).buffer);
        homes_.erase(t.name);
      }
    }
    for (std::size_t c = 0; c < ncores_; ++c) out_.cores[c].push_back(sync_item(0, t_main));
  }

  // A VGM operator reads `tensor` (a collage stores it to stripes for it, as VGM operators do).
  bool read_by_vgm(const std::string& tensor) const {
    for (int r : w_.consumers(tensor))
      if (schedule::planner_of(s_, static_cast<std::size_t>(r)) == "vgm") return true;
    return false;
  }

  // VGM with rounds: per round, load a slice of the reduction axis for every operand that has
  // it, compute into the output (which accumulates), free the slices.
  void run_rounds(std::size_t i) {
    const ir::Operator& op = w_.ops()[i];
    const plan::Plan& p = s_.ops[i].active;
    const auto a = static_cast<std::size_t>(p.round_axis);
    const plan::Plan q = plan::one_round(p);  // the slice of the axis, computed in one step
    const std::int64_t chunk = q.len[a];
    const int t_input = tag(op.name, "input"), t_main = tag(op.name, "main");
    tag(op.name, "setup");
    const std::size_t nin = op.expr.inputs.size();
    std::vector<std::string> bufs(p.parts.size());
    auto out_views = part_views(i, p.parts.size() - 1, p);
    bufs.back() = op.name + ".out";
    alloc_all(bufs.back(), out_views, fmt::format("operator '{}' output", op.name));
    for (std::int64_t r = 0; r < p.rounds; ++r) {
      Gathering gathering;
      for (std::size_t k = 0; k < nin; ++k) {
        const ir::Tensor& t = w_.tensor(op.expr.inputs[k].tensor);
        auto views = part_views(i, k, q, static_cast<int>(a), r * chunk);
        bufs[k] = fmt::format("{}.in{}", op.name, k);
        alloc_all(bufs[k], views, fmt::format("operator '{}' input '{}' (round {})", op.name, t.name, r));
        redistribute(t, homes_.at(t.name), views, bufs[k], t_input, gathering);
      }
      emit(gathering);
      Geometry g(q, op);
      g.set_offset(a, r * chunk);
      const OpEmit e{op, q, g, bufs, plan::step_compute(q, op, cfg_), t_main, 0};  // no shifts: no group
      for (std::int64_t c = 0; c < q.cores; ++c)
        out_.cores[static_cast<std::size_t>(c)].push_back(compute_item(e, g.coords(c), std::vector<std::int64_t>(q.axes.size(), 0)));
      for (std::size_t k = 0; k < nin; ++k) free_all(bufs[k]);
    }
    finish_op(i, out_views, bufs.back(), t_main);
  }

  void store(const ir::Tensor& t, int tg) {
    const Home& h = homes_.at(t.name);
    for (std::size_t c = 0; c < ncores_; ++c) {
      if (h.views[c].tensor.empty()) continue;
      Box b{h.views[c].origin, h.views[c].extent};
      if (!clip(b, t.shape)) continue;
      LItem it = msg(K::Store, 0, h.buffer, b.elements() * 2, tg);
      it.arg = offchip(t, c);
      out_.cores[c].push_back(it);
    }
  }

  // The plan's loop nest on one core: compute at the innermost level, after each iteration of
  // a level rotate the partitions that rotate on its axis. Unrolled in functional mode (each
  // step touches different values), a `repeat` per level otherwise. `t` counts the shifts done
  // on each axis.
  void emit_loop(const OpEmit& e, const Coords& idx, std::vector<std::int64_t>& t, std::size_t level,
                 std::vector<LItem>& out) {
    if (level == e.p.loop.size()) {
      out.push_back(compute_item(e, idx, t));
      return;
    }
    const auto a = static_cast<std::size_t>(e.p.loop[level]);
    const std::int64_t n = e.p.steps_on[a];
    if (o_.functional) {
      for (std::int64_t s = 0; s < n; ++s) {
        emit_loop(e, idx, t, level + 1, out);
        shift(e, idx, t, a, out);
        ++t[a];
      }
      t[a] = 0;
    } else {
      LItem begin{K::Begin};
      begin.arg = static_cast<std::uint32_t>(n);
      out.push_back(begin);
      emit_loop(e, idx, t, level + 1, out);
      shift(e, idx, t, a, out);
      out.push_back(LItem{K::End});
    }
  }

  LItem compute_item(const OpEmit& e, const Coords& idx, const std::vector<std::int64_t>& t) {
    const plan::StepCompute& sc = e.step;
    CompItem ci;
    ci.kind = sc.kind;
    ci.batch = sc.batch; ci.m = sc.m; ci.k = sc.k; ci.n = sc.n;
    ci.elements = sc.elements; ci.rows = sc.rows; ci.cols = sc.cols;
    ci.cycles = sc.cycles;
    for (std::size_t k = 0; k + 1 < e.bufs.size(); ++k) ci.ins.push_back(name(e.bufs[k]));
    ci.out = name(e.bufs.back());
    ci.expr = expr_index(e.op);
    for (std::size_t a = 0; a < e.p.axes.size(); ++a) {
      std::int64_t lo = e.g.axis_lo(idx, a), len = e.p.len[a];
      if (std::find(e.p.loop.begin(), e.p.loop.end(), static_cast<int>(a)) != e.p.loop.end()) {
        lo += (e.g.c0(a, idx) + t[a]) % e.p.steps_on[a] * e.p.pace[a];  // the chunk of this step
        len = e.p.pace[a];
      }
      ci.ranges.push_back({lo, lo + len});
    }
    return comp_item(std::move(ci), e.tag);
  }

  int expr_index(const ir::Operator& op) {
    auto it = op_exprs_.find(op.name);
    if (it != op_exprs_.end()) return it->second;
    out_.exprs.push_back(op.expr.text);
    return op_exprs_[op.name] = static_cast<int>(out_.exprs.size()) - 1;
  }

  // Every partition rotating on `axis` sends the chunk at the front of its window to the ring
  // neighbour behind and receives the next one from the neighbour ahead, through the shift
  // buffer in pieces, one sync per piece.
  void shift(const OpEmit& e, const Coords& idx, const std::vector<std::int64_t>& t, std::size_t axis,
             std::vector<LItem>& out) {
    for (std::size_t k = 0; k < e.p.parts.size(); ++k) {
      const plan::Part& x = e.p.parts[k];
      if (x.rot_axis != static_cast<int>(axis)) continue;
      const std::vector<Box> pieces = shift_boxes(e.g, e.p, e.op, k, idx, t[axis], o_.shift_buffer_bytes);
      const std::int64_t left = e.g.neighbour(x, idx, -1), right = e.g.neighbour(x, idx, +1);
      for (const Box& piece : pieces) {
        const std::int64_t bytes = piece.elements() * 2;
        out.push_back(sync_item(e.group, e.tag));
        out.push_back(msg(K::Send, static_cast<std::size_t>(left), e.bufs[k], bytes, e.tag, &piece));
        out.push_back(msg(K::Recv, static_cast<std::size_t>(right), e.bufs[k], bytes, e.tag));
        out.push_back(copy_item(piece.elements(), "shift", e.bufs[k], e.tag, -1, {}));
      }
    }
  }

  const ir::Workload& w_;
  const schedule::Schedule& s_;
  const sim::Config& cfg_;
  Options o_;
  std::size_t ncores_;
  Lowered out_;
  std::vector<Bytes> live_;
  std::vector<std::unordered_map<int, Bytes>> sizes_;  // per core: live buffers by name id
  std::map<std::string, Home> homes_;
  std::map<std::string, int> tag_index_;
  std::unordered_map<std::size_t, std::vector<std::uint32_t>> layout_ids_;  // by content hash
  std::map<std::string, int> op_exprs_;
  std::map<std::int64_t, std::uint32_t> group_index_;
  std::unordered_map<std::string, int> name_ids_;
};

}  // namespace

std::vector<View> plan_views(const plan::Plan& p, const ir::Operator& op, std::size_t part, std::size_t cores) {
  return views_of(Geometry(p, op), p.cores, part, cores);
}

std::vector<std::pair<std::size_t, std::size_t>> shift_pairs(const plan::Plan& p, const ir::Operator& op,
                                                             std::size_t part) {
  const Geometry g(p, op);
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (p.parts[part].rot_dim < 0) return out;
  for (std::int64_t c = 0; c < p.cores; ++c)
    out.push_back({static_cast<std::size_t>(c), static_cast<std::size_t>(g.neighbour(p.parts[part], g.coords(c), -1))});
  return out;
}

std::vector<Bytes> shift_pieces(const plan::Plan& p, const ir::Operator& op, std::size_t part,
                                Bytes shift_buffer_bytes) {
  if (p.parts[part].rot_dim < 0) return {};
  const Geometry g(p, op);
  std::vector<Bytes> out;
  for (const Box& piece : shift_boxes(g, p, op, part, g.coords(0), 0, shift_buffer_bytes))
    out.push_back(static_cast<Bytes>(piece.elements() * 2));
  return out;
}

std::vector<std::pair<Bytes, std::int64_t>> shift_piece_counts(const plan::Plan& p, const ir::Operator& op,
                                                               std::size_t part, Bytes shift_buffer_bytes) {
  if (p.parts[part].rot_dim < 0) return {};
  const Geometry g(p, op);
  std::map<std::int64_t, std::int64_t> counts;
  split_counts(shift_box(g, p, op, part, g.coords(0), 0).extent, static_cast<std::int64_t>(shift_buffer_bytes / 2), 1,
               counts);
  std::vector<std::pair<Bytes, std::int64_t>> out;
  for (const auto& [elems, n] : counts) out.push_back({static_cast<Bytes>(elems * 2), n});
  return out;
}

bool same_layout(const std::vector<View>& a, const std::vector<View>& b) {
  for (std::size_t c = 0; c < a.size(); ++c)
    if (a[c].tensor != b[c].tensor || a[c].origin != b[c].origin || a[c].extent != b[c].extent || a[c].cyclic != b[c].cyclic) return false;
  return true;
}

std::vector<Piece> relayout_pieces(const std::vector<std::int64_t>& shape, const std::vector<View>& src,
                                   const std::vector<View>& dst) {
  std::vector<Piece> out;
  sim::for_each_piece(sim::layout_of(shape, src), sim::layout_of(shape, dst),
                      [&](std::uint32_t from, std::uint32_t to, const Box& b) { out.push_back({from, to, b}); });
  return out;
}

Lowered lower(const ir::Workload& w, const schedule::Schedule& s, const sim::Config& cfg, const Options& o) {
  return Lowerer(w, s, cfg, o).run();
}

std::map<std::string, std::vector<float>> reference_outputs(const ir::Workload& w) {
  sim::DataStore store;  // every tensor, inputs and weights with the functional initial values
  for (const auto& t : w.tensors()) {
    store.add(t.name, t.shape);
    if (!t.values.empty()) store.at(t.name).values = t.values;
  }
  std::map<std::string, sim::Buffer> vals;
  auto whole = [&](const ir::Tensor& t) -> sim::Buffer& {
    sim::View v{t.name, std::vector<std::int64_t>(t.shape.size(), 0), t.shape, std::vector<bool>(t.shape.size(), false)};
    return vals.emplace(t.name, sim::Buffer(v, t.shape)).first->second;
  };
  for (const auto& t : w.tensors())
    if (t.role != ir::TensorRole::Activation) whole(t).load_from(store.at(t.name));
  for (const auto& op : w.ops()) {
    std::vector<const sim::Buffer*> ins;
    for (const auto& in : op.expr.inputs) ins.push_back(&vals.at(in.tensor));
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    for (const auto& a : op.expr.all_axes()) ranges.push_back({0, op.extent.at(a)});
    sim::evaluate(op.expr, ranges, ins, whole(w.tensor(op.expr.output.tensor)));
  }
  std::map<std::string, std::vector<float>> res;
  for (const auto& t : w.tensors()) {
    if (!t.output) continue;
    vals.at(t.name).store_to(store.at(t.name));
    res[t.name] = store.at(t.name).values;
  }
  return res;
}

}  // namespace tessera::lower
