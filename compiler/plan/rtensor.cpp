#include "compiler/plan/rtensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <set>

#include "sim/common/error.h"
#include "sim/core/compute_model.h"

namespace tessera::plan {

namespace {

std::int64_t cdiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Axes that appear anywhere in an access.
std::set<std::string> axes_of(const ir::Access& a) {
  std::set<std::string> s;
  for (const auto& ix : a.indices)
    for (const auto& t : ix.terms) s.insert(t.axis);
  return s;
}

// Extent one core's sub-operator touches along a tensor dimension indexed by `ix`, given the
// per-axis lengths `len` (a compound index spans the sum of its terms' ranges).
std::int64_t index_extent(const ir::Index& ix, const std::vector<std::string>& axes,
                          const std::vector<std::int64_t>& len) {
  std::int64_t ext = 1;
  for (const auto& t : ix.terms)
    ext += t.coeff * (len[static_cast<std::size_t>(std::find(axes.begin(), axes.end(), t.axis) - axes.begin())] - 1);
  return ext;
}

bool splittable(const ir::Expr& e, const std::string& axis) {
  auto outs = e.output_axes();
  if (std::find(outs.begin(), outs.end(), axis) == outs.end()) return false;  // reduction axis
  if ((e.kind == ir::ExprKind::Softmax || e.kind == ir::ExprKind::Layernorm) && axis == outs.back()) return false;
  return true;
}

}  // namespace

std::string Plan::describe() const {
  std::string s = "fop[";
  for (std::size_t a = 0; a < axes.size(); ++a) s += fmt::format("{}{}:{}", a ? "," : "", axes[a], fop[a]);
  s += "]";
  for (const auto& p : parts) {
    if (p.rot_dim < 0) continue;
    s += fmt::format(" {}:ft[", p.tensor);
    for (std::size_t d = 0; d < p.ft.size(); ++d) s += fmt::format("{}{}", d ? "," : "", p.ft[d]);
    s += "]";
  }
  if (!loop.empty()) {
    s += " rp[";
    for (std::size_t i = 0; i < loop.size(); ++i) s += fmt::format("{}{}:{}", i ? "," : "", axes[loop[i]], pace[loop[i]]);
    s += "]";
  }
  if (weights_striped) return "weights striped over all cores";
  if (rounds > 1) s += fmt::format(" {} rounds on {}", rounds, axes[static_cast<std::size_t>(round_axis)]);
  return s + fmt::format(" {} step{}", steps, steps == 1 ? "" : "s");
}

bool Plan::same_as(const Plan& o) const {
  if (weights_striped != o.weights_striped || fop != o.fop || rounds != o.rounds ||
      round_axis != o.round_axis || parts.size() != o.parts.size())
    return false;
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (parts[i].ft != o.parts[i].ft) return false;
  return true;
}

std::optional<Plan> make_plan(const ir::Operator& op, const ir::Workload& w,
                              const std::map<std::string, std::int64_t>& fop_in,
                              const std::vector<Rotation>& rotations, const Target& target,
                              std::string* why) {
  auto reject = [&](const std::string& msg) -> std::optional<Plan> {
    if (why) *why = msg;
    return std::nullopt;
  };
  const ir::Expr& e = op.expr;
  Plan p;
  p.axes = e.all_axes();
  const std::size_t na = p.axes.size();
  auto axis_index = [&](const std::string& a) {
    return static_cast<int>(std::find(p.axes.begin(), p.axes.end(), a) - p.axes.begin());
  };
  p.extent.resize(na);
  p.fop.assign(na, 1);
  for (std::size_t a = 0; a < na; ++a) p.extent[a] = op.extent.at(p.axes[a]);
  for (const auto& [axis, f] : fop_in) {
    int a = axis_index(axis);
    if (a == static_cast<int>(na)) return reject(fmt::format("operator '{}' has no axis '{}'", op.name, axis));
    if (f < 1) return reject(fmt::format("fop of axis '{}' must be positive", axis));
    if (f > 1 && !splittable(e, axis))
      return reject(fmt::format("axis '{}' cannot be split across cores (a reduction axis, or the axis a row-wise op normalises)", axis));
    if (f > p.extent[static_cast<std::size_t>(a)]) return reject(fmt::format("fop {} exceeds the extent {} of axis '{}'", f, p.extent[static_cast<std::size_t>(a)], axis));
    p.fop[static_cast<std::size_t>(a)] = f;
  }
  p.cores = 1;
  for (auto f : p.fop) p.cores *= f;
  if (target.cores > 0 && p.cores > target.cores)
    return reject(fmt::format("the plan needs {} cores but {} are available", p.cores, target.cores));

  // Operands: inputs then output.
  std::vector<const ir::Access*> acc;
  for (const auto& in : e.inputs) acc.push_back(&in);
  acc.push_back(&e.output);
  if (rotations.size() > e.inputs.size()) return reject("more rotations than inputs");

  // Rotations: validate and gather the temporal factors per axis.
  std::vector<std::int64_t> big_ft(na, 1);
  std::vector<std::vector<std::int64_t>> fts_on(na);
  std::vector<Rotation> rot(acc.size());
  for (std::size_t i = 0; i < rotations.size(); ++i) {
    const Rotation& r = rotations[i];
    if (r.ft <= 1 || r.dim < 0) continue;
    const ir::Access& x = *acc[i];
    if (r.dim >= static_cast<int>(x.indices.size())) return reject(fmt::format("tensor '{}' has no dimension {}", x.tensor, r.dim));
    const ir::Index& ix = x.indices[static_cast<std::size_t>(r.dim)];
    if (!ix.plain()) return reject(fmt::format("dimension {} of '{}' ({}) is compound and cannot rotate", r.dim, x.tensor, ix.str()));
    const int a = axis_index(ix.terms[0].axis);
    if ((e.kind == ir::ExprKind::Softmax || e.kind == ir::ExprKind::Layernorm) && a == static_cast<int>(e.output.indices.size()) - 1)
      return reject("a row-wise operator needs its whole row: its last axis cannot rotate");
    if (e.kind == ir::ExprKind::Reduction && !splittable(e, p.axes[static_cast<std::size_t>(a)]))
      return reject("a reduction cannot rotate along the axis it reduces");
    auto xa = axes_of(x);
    std::int64_t share = 1;
    for (std::size_t b = 0; b < na; ++b)
      if (!xa.count(p.axes[b])) share *= p.fop[b];
    if (share % r.ft != 0)
      return reject(fmt::format("temporal factor {} of '{}' does not divide the {} cores sharing each sub-tensor", r.ft, x.tensor, share));
    rot[i] = r;
    fts_on[static_cast<std::size_t>(a)].push_back(r.ft);
    big_ft[static_cast<std::size_t>(a)] = std::max(big_ft[static_cast<std::size_t>(a)], r.ft);
  }
  // Alignment: one pace per axis, the smallest partition length; every partition a whole number
  // of paces, or a core's sub-task would straddle data it does not hold.
  p.len.resize(na);
  p.pace.resize(na);
  p.steps_on.assign(na, 1);
  for (std::size_t a = 0; a < na; ++a) {
    for (auto f : fts_on[a])
      if (big_ft[a] % f != 0)
        return reject(fmt::format("unaligned rotation on axis '{}': partitions of {} and {} paces cannot share one rotating pace", p.axes[a], big_ft[a], f));
    p.len[a] = cdiv(cdiv(p.extent[a], p.fop[a]), big_ft[a]) * big_ft[a];
    p.pace[a] = p.len[a] / big_ft[a];
    p.steps_on[a] = big_ft[a];
  }

  // Parts.
  double pad_ratio = 1;
  for (std::size_t i = 0; i < acc.size(); ++i) {
    const ir::Access& x = *acc[i];
    Part part;
    part.tensor = x.tensor;
    auto xa = axes_of(x);
    part.sharing = 1;
    for (std::size_t b = 0; b < na; ++b)
      if (!xa.count(p.axes[b])) {
        part.sharing *= p.fop[b];
        if (p.fop[b] > 1) part.share_axes.push_back(static_cast<int>(b));
      }
    const Bytes esize = dtype_bytes(w.tensor(x.tensor).dtype);
    Bytes window = esize, chunk = esize;
    double orig = 1, padded = 1;
    const auto& shape = w.tensor(x.tensor).shape;
    for (std::size_t d = 0; d < x.indices.size(); ++d) {
      const ir::Index& ix = x.indices[d];
      std::int64_t fs = 1;
      for (const auto& t : ix.terms) fs *= p.fop[static_cast<std::size_t>(axis_index(t.axis))];
      const std::int64_t ext = index_extent(ix, p.axes, p.len);
      part.fs.push_back(fs);
      const bool rotating = rot[i].ft > 1 && rot[i].dim == static_cast<int>(d);
      part.ft.push_back(rotating ? rot[i].ft : 1);
      if (rotating) {
        const auto a = static_cast<std::size_t>(axis_index(ix.terms[0].axis));
        part.rot_dim = static_cast<int>(d);
        part.rot_axis = static_cast<int>(a);
        part.rp.push_back(p.pace[a]);
        part.window_chunks = big_ft[a] / rot[i].ft;
        window *= static_cast<Bytes>(part.window_chunks * p.pace[a]);
        chunk *= static_cast<Bytes>(p.pace[a]);
        part.window.push_back(part.window_chunks * p.pace[a]);
        part.stride.push_back(part.window_chunks * p.pace[a]);
      } else {
        part.rp.push_back(ext);
        window *= static_cast<Bytes>(ext);
        chunk *= static_cast<Bytes>(ext);
        part.window.push_back(ext);
        part.stride.push_back(ix.terms.empty() ? ext : ix.terms[0].coeff * p.len[static_cast<std::size_t>(axis_index(ix.terms[0].axis))]);
      }
      if (ix.plain()) {
        orig *= static_cast<double>(shape[d]);
        padded *= static_cast<double>(fs * ext);
      }
    }
    part.rings = part.sharing / part.ft[part.rot_dim < 0 ? 0 : static_cast<std::size_t>(part.rot_dim)];
    part.bytes_per_core = window;
    part.shift_bytes = part.rot_dim < 0 ? 0 : chunk;
    pad_ratio = std::min(pad_ratio, orig / padded);
    p.parts.push_back(std::move(part));
  }
  p.padding_ratio = pad_ratio;
  // Loop order: axes whose rotating tensors move more bytes go outside, so the smaller tensors
  // rotate in the inner loop (most often).
  std::vector<std::pair<Bytes, int>> order;
  for (std::size_t a = 0; a < na; ++a) {
    if (big_ft[a] <= 1) continue;
    Bytes b = 0;
    for (const auto& part : p.parts)
      if (part.rot_axis == static_cast<int>(a)) b += part.bytes_per_core;
    order.push_back({b, static_cast<int>(a)});
  }
  std::sort(order.begin(), order.end(), [](auto x, auto y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
  p.steps = 1;
  for (auto& [b, a] : order) {
    p.loop.push_back(a);
    p.steps *= p.steps_on[static_cast<std::size_t>(a)];
  }
  if (target.config) {
    p.cost = estimate(p, op, target);
    // Activations arrive in their producer's layout: each core gathers its window (the analytical
    // model charges the bytes, not the number of source boxes).
    for (std::size_t i = 0; i + 1 < p.parts.size(); ++i)
      if (const ir::Tensor& x = w.tensor(p.parts[i].tensor); x.role != ir::TensorRole::Weight) {
        const double latency = transfer_cycles(*target.config, 0);
        // One window per core, sent as one message: the ordered gather is the busiest port.
        const double port = transfer_cycles(*target.config, p.parts[i].bytes_per_core) - latency;
        p.cost.terms.input_port_cycles += port;
        p.cost.terms.input_order_cycles += port;
        p.cost.terms.input_latency_cycles += latency;
        p.cost.terms.input_messages += gather_messages(p.parts[i], stripe_block(x, static_cast<std::size_t>(target.cores)), x.shape);
      }
    price(p.cost, target.model_for(op));
  }
  return p;
}

StepCompute step_compute(const Plan& p, const ir::Operator& op, const sim::Config& cfg) {
  const ir::Expr& e = op.expr;
  StepCompute s;
  auto sub = [&](std::size_t a) {
    if (static_cast<int>(a) == p.round_axis) return cdiv(p.len[a], p.rounds);
    return std::find(p.loop.begin(), p.loop.end(), static_cast<int>(a)) != p.loop.end() ? p.pace[a] : p.len[a];
  };
  const std::size_t nout = e.output.indices.size();
  const auto& core = cfg.chip.core;
  if (e.kind == ir::ExprKind::Contraction) {
    auto in0 = axes_of(e.inputs[0]), in1 = axes_of(e.inputs[1]);
    for (std::size_t a = 0; a < p.axes.size(); ++a) {
      const bool o = a < nout, x = in0.count(p.axes[a]) != 0, y = in1.count(p.axes[a]) != 0;
      const std::int64_t v = sub(a);
      if (o && x && y) s.batch *= v;
      else if (o && y) s.n *= v;
      else if (o) s.m *= v;
      else s.k *= v;
    }
    s.kind = "matmul";
    s.cycles = sim::matmul_cycles(core, Dtype::Fp16, sim::MatmulShape{static_cast<std::uint64_t>(s.batch), static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.k), static_cast<std::uint64_t>(s.n)});
    return s;
  }
  std::int64_t outs = 1, red = 1;
  for (std::size_t a = 0; a < p.axes.size(); ++a) (a < nout ? outs : red) *= sub(a);
  if (e.kind == ir::ExprKind::Elementwise) {
    s.kind = ir::fn_name(e.fn);
    s.elements = outs;
    s.cycles = sim::elementwise_cycles(core, *sim::parse_vec_op(s.kind), static_cast<std::uint64_t>(outs));
  } else if (e.kind == ir::ExprKind::Reduction) {
    s.kind = e.reduce == ir::Reduce::Max ? "reduce_max" : "reduce_sum";
    s.rows = outs;
    s.cols = red;
    s.cycles = sim::row_op_cycles(core, e.reduce == ir::Reduce::Max ? sim::ComputeKind::ReduceMax : sim::ComputeKind::ReduceSum, static_cast<std::uint64_t>(outs), static_cast<std::uint64_t>(red));
  } else {
    s.kind = e.kind == ir::ExprKind::Softmax ? "softmax" : "layernorm";
    s.cols = sub(nout - 1);
    s.rows = outs / s.cols;
    s.cycles = sim::row_op_cycles(core, e.kind == ir::ExprKind::Softmax ? sim::ComputeKind::Softmax : sim::ComputeKind::Layernorm, static_cast<std::uint64_t>(s.rows), static_cast<std::uint64_t>(s.cols));
  }
  return s;
}

std::vector<std::int64_t> stripe_parts(const ir::Tensor& t, std::size_t cores) {
  std::vector<std::int64_t> parts(t.shape.size(), 1);
  auto left = static_cast<std::int64_t>(cores);
  const bool inner_first = t.role == ir::TensorRole::Weight;
  for (std::size_t i = 0; i < t.shape.size() && left > 1; ++i) {
    const std::size_t d = inner_first ? t.shape.size() - 1 - i : i;
    parts[d] = std::min(t.shape[d], left);
    left /= parts[d];
  }
  return parts;
}

std::vector<std::int64_t> stripe_block(const ir::Tensor& t, std::size_t cores) {
  const std::vector<std::int64_t> parts = stripe_parts(t, cores);
  std::vector<std::int64_t> block;
  for (std::size_t d = 0; d < t.shape.size(); ++d) block.push_back(cdiv(t.shape[d], parts[d]));
  return block;
}

double gather_messages(const Part& dst, const std::vector<std::int64_t>& block, const std::vector<std::int64_t>& shape) {
  double n = 1;
  for (std::size_t d = 0; d < dst.window.size() && d < block.size(); ++d) {
    // Average over the first few cores' windows along this dimension (clipped to the tensor).
    double sum = 0;
    int count = 0;
    for (std::int64_t i = 0; i < 16; ++i) {
      const std::int64_t lo = i * dst.stride[d];
      const std::int64_t hi = std::min(shape[d], lo + dst.window[d]);
      if (lo >= shape[d] || (i > 0 && dst.stride[d] == 0)) break;
      sum += static_cast<double>((hi - 1) / block[d] - lo / block[d] + 1);
      ++count;
    }
    n *= count ? sum / count : 1.0;
  }
  return n;
}

Cycles sync_latency_cycles(const sim::Config& cfg, std::int64_t cores) {
  // A plan spread over several chips syncs across them (docs/config.md: system.sync_latency_cycles).
  return cores > static_cast<std::int64_t>(cfg.chip.cores) ? cfg.system.sync_latency_cycles
                                                           : cfg.chip.sync.latency_cycles;
}

// The calibration replaces these coefficients with fitted ones.
double transfer_cycles(const sim::Config& cfg, Bytes bytes) {
  if (cfg.chip.exchange) {
    const auto& x = *cfg.chip.exchange;
    return static_cast<double>(x.latency_cycles) + static_cast<double>(bytes) / std::min(x.send_bytes_per_cycle, x.recv_bytes_per_cycle);
  }
  const auto& m = *cfg.chip.mesh;
  const double hops = (m.rows + m.cols) / 4.0;
  return hops * static_cast<double>(m.router_latency_cycles + m.link_latency_cycles) +
         static_cast<double>(bytes) / std::min(m.ni_bytes_per_cycle, m.link_bytes_per_cycle);
}

Cost estimate(const Plan& p, const ir::Operator& op, const Target& t) {
  const sim::Config& cfg = *t.config;
  Cost c;
  cost::Terms& x = c.terms;
  const StepCompute sc = step_compute(p, op, cfg);
  const auto steps = static_cast<double>(p.steps);  // rounds, for VGM
  const cost::ComputeFeatures cf = cost::compute_features(
      cfg.chip.core, cost::StepShape{sc.kind, static_cast<std::uint64_t>(sc.batch), static_cast<std::uint64_t>(sc.m),
                                     static_cast<std::uint64_t>(sc.k), static_cast<std::uint64_t>(sc.n),
                                     static_cast<std::uint64_t>(sc.elements), static_cast<std::uint64_t>(sc.rows),
                                     static_cast<std::uint64_t>(sc.cols)},
      steps);
  x.mac_cycles = cf.mac_cycles;
  x.fetch_cycles = cf.fetch_cycles;
  x.writeback_cycles = cf.writeback_cycles;
  x.vector_cycles = cf.vector_cycles;
  x.steps = steps;
  x.oracle.compute = static_cast<double>(sc.cycles) * steps;  // the simulator's compute model
  std::int64_t events = 1;
  for (std::size_t i = 0; i < p.loop.size(); ++i) {
    const int a = p.loop[i];
    events *= p.steps_on[static_cast<std::size_t>(a)];
    for (const auto& part : p.parts) {
      if (part.rot_axis != a) continue;
      const Bytes piece = std::min<Bytes>(part.shift_bytes, t.shift_buffer_bytes);
      const auto pieces = static_cast<std::int64_t>(ceil_div(part.shift_bytes, t.shift_buffer_bytes));
      const double per_piece = transfer_cycles(cfg, piece) +
          static_cast<double>(sim::elementwise_cycles(cfg.chip.core, sim::VecOp::Copy, piece / 2));
      x.shift_cycles += static_cast<double>(events * pieces) * per_piece;
      c.syncs += events * pieces;
      if (i + 1 == p.loop.size()) c.shift_bytes_per_step += part.shift_bytes;
    }
  }
  x.sync_cycles = static_cast<double>(c.syncs) * static_cast<double>(sync_latency_cycles(cfg, p.cores));
  // Lowering closes every operator with a barrier over all of the config's cores (lower.cpp,
  // finish_op), whatever cores the plan uses: on two chips a plan on one chip's cores still
  // waits for the system's barrier. Priced at the plan's cores, NeRF on vipu-2 came out 25%
  // under the simulator (each one-chip operator 1,212 cycles short).
  x.barrier_cycles = x.oracle.barrier =
      static_cast<double>(sync_latency_cycles(cfg, static_cast<std::int64_t>(cfg.total_cores())));
  price(c, t.model_for(op));
  // The shift buffer is reserved once per core for the whole program, not per plan.
  for (const auto& part : p.parts) c.memory_bytes += part.bytes_per_core;
  return c;
}

void price(Cost& c, const cost::ClassModel& m) {
  cost::Terms x = c.terms;
  x.setup_port_cycles = x.setup_link_cycles = x.setup_chip_link_cycles = x.setup_order_cycles = x.setup_messages = x.setup_local_cycles =
      x.setup_latency_cycles = x.oracle.setup = 0;
  const cost::Breakdown b = m.predict(x);
  c.compute_cycles = b.compute;
  c.shift_cycles = b.shift;
  c.sync_cycles = b.sync;
  c.input_cycles = b.input;
  c.total_cycles = b.total();
}

namespace {

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> d;
  for (std::int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) { d.push_back(i); if (i * i != n) d.push_back(n / i); }
  std::sort(d.begin(), d.end());
  return d;
}

// The factors the first choice per piece length is made from: divisors of the extent, powers of
// two, and the fewest pieces of each length that 1, 1/2, 1/4 ... of the cores give.
std::set<std::int64_t> base_factors(std::int64_t L, std::int64_t cores) {
  std::set<std::int64_t> c;
  for (auto d : divisors(L)) if (d <= cores) c.insert(d);
  for (std::int64_t f = 1; f <= std::min(L, cores); f *= 2) c.insert(f);
  // The most cores a sub-extent can use at 1, 1/2, 1/4 ... of the cores (1472 is not a power of 2).
  for (std::int64_t q = cores; q >= 1; q /= 2) c.insert(cdiv(L, cdiv(L, std::min(q, L))));
  return c;
}

}  // namespace

bool first_factors(const Plan& p, std::int64_t cores) {
  for (std::size_t a = 0; a < p.fop.size(); ++a) {
    if (p.fop[a] <= 1) continue;
    const std::int64_t L = p.extent[a], l = cdiv(L, p.fop[a]);
    const std::set<std::int64_t> c = base_factors(L, cores);
    if (!c.count(p.fop[a])) return false;
    for (auto f : c) {
      if (f >= p.fop[a]) break;
      if (cdiv(L, f) == l) return false;  // a smaller factor gives this piece length
    }
  }
  return true;
}

std::vector<std::int64_t> fop_candidates(std::int64_t L, std::int64_t cores, double min_pad) {
  const std::set<std::int64_t> c = base_factors(L, cores);
  std::vector<std::int64_t> out;
  std::set<std::int64_t> lens;
  for (auto f : c) {
    const std::int64_t l = cdiv(L, f);
    if (static_cast<double>(L) / static_cast<double>(f * l) < min_pad) continue;
    if (!lens.insert(l).second) continue;
    out.push_back(f);
    // The factors giving the same piece length differ in the rings they leave the tensors not
    // indexed by this axis: rotations on a shared axis must align (one ring size dividing the
    // other), which a factor like 183 = 3 * 61 almost never does and 184 = 8 * 23 often does.
    // So the one with the most factors of two comes too (OPT-13B's FFN matmuls found plans 2.4x
    // and 1.3x faster on the simulator with it).
    std::int64_t best = f;
    for (std::int64_t g = f + 1; g <= std::min(cores, L) && cdiv(L, g) == l; ++g)
      if ((g & -g) > (best & -best)) best = g;
    if (best != f && static_cast<double>(L) / static_cast<double>(best * l) >= min_pad) out.push_back(best);
  }
  std::sort(out.begin(), out.end());  // ascending: the enumeration stops at the first too large
  return out;
}

std::vector<Plan> enumerate_plans(const ir::Operator& op, const ir::Workload& w, const Target& t,
                                  bool allow_rotation, std::size_t* space_size) {
  const ir::Expr& e = op.expr;
  const auto axes = e.all_axes();
  double min_par = t.min_parallelism, min_pad = t.min_padding_ratio;
  std::size_t space = 0;
  for (int relax = 0; relax < 12; ++relax) {
    std::vector<std::vector<std::int64_t>> cand(axes.size());
    for (std::size_t a = 0; a < axes.size(); ++a)
      cand[a] = splittable(e, axes[a]) ? fop_candidates(op.extent.at(axes[a]), t.cores, min_pad) : std::vector<std::int64_t>{1};
    std::int64_t best_possible = 1;
    for (std::size_t a = 0; a < axes.size(); ++a) best_possible *= cand[a].back();
    const auto need = static_cast<std::int64_t>(std::ceil(min_par * static_cast<double>(std::min(t.cores, best_possible))));
    std::vector<Plan> plans;
    std::map<std::string, std::int64_t> fop;
    std::function<void(std::size_t, std::int64_t)> rec = [&](std::size_t a, std::int64_t prod) {
      if (a == axes.size()) {
        if (prod < need) return;
        // Rotation choices per input.
        std::vector<std::vector<Rotation>> choices(e.inputs.size(), std::vector<Rotation>{Rotation{}});
        if (allow_rotation) {
          for (std::size_t i = 0; i < e.inputs.size(); ++i) {
            auto xa = axes_of(e.inputs[i]);
            std::int64_t share = 1;
            for (std::size_t b = 0; b < axes.size(); ++b)
              if (!xa.count(axes[b])) share *= fop.count(axes[b]) ? fop[axes[b]] : 1;
            if (share <= 1) continue;
            for (std::size_t d = 0; d < e.inputs[i].indices.size(); ++d) {
              if (!e.inputs[i].indices[d].plain()) continue;
              for (auto f : divisors(share))
                if (f > 1 && share / f <= 8) choices[i].push_back(Rotation{static_cast<int>(d), f});
            }
          }
        }
        std::vector<Rotation> pick(e.inputs.size());
        std::function<void(std::size_t)> rr = [&](std::size_t i) {
          if (i == pick.size()) {
            ++space;
            auto pl = make_plan(op, w, fop, pick, t);
            if (pl && pl->padding_ratio >= min_pad) plans.push_back(std::move(*pl));
            return;
          }
          for (const auto& c : choices[i]) { pick[i] = c; rr(i + 1); }
        };
        rr(0);
        return;
      }
      for (auto f : cand[a]) {
        if (prod * f > t.cores) break;
        fop[axes[a]] = f;
        rec(a + 1, prod * f);
      }
      fop.erase(axes[a]);
    };
    rec(0, 1);
    if (!plans.empty()) {
      if (space_size) *space_size = space;
      return plans;
    }
    // Nothing passed: relax parallelism first, then padding.
    if (min_par > 0.05) min_par /= 2;
    else min_pad = std::max(0.0, min_pad - 0.2);
  }
  throw Error(fmt::format("operator '{}': no partition plan exists even with relaxed filters", op.name));
}

Plan with_rounds(const Plan& p, const ir::Operator& op, const ir::Workload& w, int axis,
                 std::int64_t rounds, const Target& t) {
  Plan q = p;
  q.round_axis = axis;
  q.rounds = rounds;
  q.steps = rounds;
  // Operands indexed by the axis hold one round's slice of it.
  std::vector<std::int64_t> len = p.len;
  len[static_cast<std::size_t>(axis)] = cdiv(p.len[static_cast<std::size_t>(axis)], rounds);
  for (std::size_t i = 0; i < q.parts.size(); ++i) {
    const ir::Access& acc = i < op.expr.inputs.size() ? op.expr.inputs[i] : op.expr.output;
    Bytes bytes = dtype_bytes(w.tensor(acc.tensor).dtype);
    for (const auto& ix : acc.indices) bytes *= static_cast<Bytes>(index_extent(ix, p.axes, len));
    q.parts[i].bytes_per_core = bytes;
  }
  if (t.config) {
    const cost::Terms before = q.cost.terms;
    q.cost = estimate(q, op, t);
    q.cost.terms.input_port_cycles = before.input_port_cycles;
    q.cost.terms.input_order_cycles = before.input_order_cycles;
    q.cost.terms.input_chip_link_cycles = before.input_chip_link_cycles;
    q.cost.terms.input_latency_cycles = before.input_latency_cycles + static_cast<double>(rounds - 1) * transfer_cycles(*t.config, 0);
    q.cost.terms.input_messages = before.input_messages;
    price(q.cost, t.model_for(op));
  }
  return q;
}

Plan one_round(const Plan& p) {
  const auto a = static_cast<std::size_t>(p.round_axis);
  Plan q = p;
  q.len[a] = cdiv(p.len[a], p.rounds);
  q.round_axis = -1;
  q.rounds = 1;
  q.steps = 1;
  return q;
}

std::vector<Plan> pareto_front(std::vector<Plan> plans) {
  std::sort(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
    if (a.cost.total_cycles != b.cost.total_cycles) return a.cost.total_cycles < b.cost.total_cycles;
    return a.cost.memory_bytes < b.cost.memory_bytes;
  });
  std::vector<Plan> front;
  for (auto& p : plans)
    if (front.empty() || p.cost.memory_bytes < front.back().cost.memory_bytes) front.push_back(std::move(p));
  return front;
}

}  // namespace tessera::plan
