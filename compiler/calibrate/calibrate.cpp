#include "compiler/calibrate/calibrate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "compiler/lower/lower.h"
#include "compiler/oracle/replay.h"
#include "compiler/schedule/schedule.h"
#include "sim/common/error.h"
#include "sim/simulate.h"

namespace tessera::cost {

namespace {

// Draws from the raw engine only (std:: distributions differ between standard libraries, and a
// seed must give the same samples everywhere).
struct Rng {
  std::mt19937_64 e;
  explicit Rng(std::uint64_t seed) : e(seed) {}
  double unit() { return static_cast<double>(e() >> 11) * 0x1.0p-53; }
  std::int64_t pick(std::int64_t n) { return static_cast<std::int64_t>(e() % static_cast<std::uint64_t>(n)); }
  template <class T>
  T of(const std::vector<T>& v) { return v[static_cast<std::size_t>(pick(static_cast<std::int64_t>(v.size())))]; }
  // Log-uniform in [lo, hi]; half the time rounded up to a multiple of `align` (aligned shapes).
  std::int64_t dim(std::int64_t lo, std::int64_t hi, std::int64_t align = 16) {
    auto v = static_cast<std::int64_t>(std::llround(static_cast<double>(lo) * std::pow(static_cast<double>(hi) / static_cast<double>(lo), unit())));
    if (pick(2) == 0) v = std::max(align, (v + align - 1) / align * align);
    return std::clamp<std::int64_t>(v, 1, std::max(hi, align));
  }
};

// What one sample operator may use: a quarter of the chip's scratchpad for its operands, and a
// few hundred thousand cycles of the matrix unit (so each run takes a fraction of a second).
struct Budget {
  double bytes, macs;
};

Budget budget(const sim::Config& cfg) {
  const double cores = cfg.total_cores();
  double macs_per_cycle = 1;
  for (const auto& [dt, m] : cfg.chip.core.matrix.macs_per_cycle)
    if (dt == Dtype::Fp16) macs_per_cycle = static_cast<double>(m);
  return Budget{cores * static_cast<double>(cfg.chip.core.sram_bytes) / 4, cores * macs_per_cycle * 150000};
}

// Draws until a shape fits the budget; a config too small for any shape of a class is an error,
// not a hang.
void guard(int& attempts, const char* what) {
  if (++attempts > 100000)
    throw Error(fmt::format("calibrate: no {} shape fits a quarter of this config's scratchpads; the config is too small to calibrate it", what));
}

using Shape = std::vector<std::int64_t>;
double elems(const Shape& s) {
  double e = 1;
  for (auto d : s) e *= static_cast<double>(d);
  return e;
}

ir::Workload matmul(Rng& r, const Budget& b) {
  for (int attempts = 0;; guard(attempts, "matmul")) {
    ir::Workload w;
    w.name = "sample";
    const std::int64_t variant = r.pick(3);
    const std::int64_t m = r.dim(8, 4096), k = r.dim(16, 4096), n = r.dim(16, 4096);
    const std::int64_t bt = variant == 0 ? 1 : r.dim(1, 32, 2);
    const double macs = static_cast<double>(bt) * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
    const double bytes = 2.0 * (static_cast<double>(bt) * static_cast<double>(m) * (static_cast<double>(k) + static_cast<double>(n)) +
                                static_cast<double>(k) * static_cast<double>(n) * (variant == 1 ? static_cast<double>(bt) : 1.0));
    if (macs > b.macs || bytes > b.bytes) continue;
    if (variant == 0) {
      w.add_tensor("X", {m, k}, ir::TensorRole::Input);
      w.add_tensor("W", {k, n}, ir::TensorRole::Weight);
      w.add_op("op", "Y[m,n] += X[m,k] * W[k,n]");
    } else if (variant == 1) {  // attention-like: both operands are activations
      w.add_tensor("Q", {bt, m, k}, ir::TensorRole::Input);
      w.add_tensor("K", {bt, k, n}, ir::TensorRole::Input);
      w.add_op("op", "Y[b,m,n] += Q[b,m,k] * K[b,k,n]");
    } else {
      w.add_tensor("X", {bt, m, k}, ir::TensorRole::Input);
      w.add_tensor("W", {k, n}, ir::TensorRole::Weight);
      w.add_op("op", "Y[b,s,n] += X[b,s,k] * W[k,n]");
    }
    return w;
  }
}

ir::Workload conv(Rng& r, const Budget& b) {
  for (int attempts = 0;; guard(attempts, "conv")) {
    ir::Workload w;
    w.name = "sample";
    const std::int64_t n = r.of<std::int64_t>({1, 1, 2, 4, 8}), c = r.dim(3, 512, 8), f = r.dim(8, 512, 8);
    const std::int64_t k = r.of<std::int64_t>({1, 3, 3, 5, 7}), s = r.of<std::int64_t>({1, 1, 2});
    const std::int64_t hw = r.of<std::int64_t>({7, 13, 14, 27, 28, 56, 112}), pad = k / 2;
    const std::int64_t out = (hw + 2 * pad - k) / s + 1;
    if (out < 1) continue;
    const double macs = static_cast<double>(n * f * out * out) * static_cast<double>(c * k * k);
    const double bytes = 2.0 * (static_cast<double>(n * c * hw * hw) + static_cast<double>(f * c * k * k) + static_cast<double>(n * f * out * out));
    if (macs > b.macs || bytes > b.bytes) continue;
    auto ix = [&](const char* a, const char* ka) {
      std::string t = s == 1 ? a : fmt::format("{}*{}", s, a);
      t += fmt::format("+{}", ka);
      if (pad) t += fmt::format("-{}", pad);
      return t;
    };
    w.add_tensor("I", {n, c, hw, hw}, ir::TensorRole::Input);
    w.add_tensor("W", {f, c, k, k}, ir::TensorRole::Weight);
    w.add_tensor("O", {n, f, out, out}, ir::TensorRole::Activation);
    w.add_op("op", fmt::format("O[n,f,y,x] += I[n,c,{},{}] * W[f,c,ky,kx]", ix("y", "ky"), ix("x", "kx")));
    return w;
  }
}

// A 2-4 dimensional activation shape of at most `max_elems` elements.
Shape activation(Rng& r, double max_elems) {
  for (int attempts = 0;; guard(attempts, "activation")) {
    const std::int64_t rank = 2 + r.pick(3);
    Shape s;
    for (std::int64_t d = 0; d < rank; ++d) s.push_back(d + 1 == rank ? r.dim(8, 4096) : r.dim(1, rank == 2 ? 4096 : 256, 4));
    if (elems(s) <= max_elems && elems(s) >= 256) return s;
  }
}

std::string axes(std::size_t rank) {
  static const char* names[] = {"a", "b", "c", "d"};
  std::string s;
  for (std::size_t d = 0; d < rank; ++d) s += std::string(d ? "," : "") + names[d];
  return s;
}

ir::Workload elementwise(Rng& r, const Budget& b) {
  ir::Workload w;
  w.name = "sample";
  const Shape s = activation(r, b.bytes / 6);
  const std::string ax = axes(s.size()), last = axes(s.size()).substr(ax.size() - 1);
  w.add_tensor("X", s, ir::TensorRole::Input);
  switch (r.pick(6)) {
    case 0: w.add_op("op", fmt::format("Y[{0}] = relu(X[{0}])", ax)); break;
    case 1: w.add_op("op", fmt::format("Y[{0}] = gelu(X[{0}])", ax)); break;
    case 2: w.add_op("op", fmt::format("Y[{0}] = X[{0}] * 0.125", ax)); break;
    case 3:
      w.add_tensor("B", {s.back()}, ir::TensorRole::Weight);
      w.add_op("op", fmt::format("Y[{0}] = X[{0}] + B[{1}]", ax, last));
      break;
    case 4: w.add_op("op", fmt::format("Y[{0}] = exp(X[{0}])", ax)); break;
    default:
      w.add_tensor("Z", s, ir::TensorRole::Input);
      w.add_op("op", fmt::format("Y[{0}] = X[{0}] + Z[{0}]", ax));
  }
  return w;
}

ir::Workload reduce(Rng& r, const Budget& b) {
  ir::Workload w;
  w.name = "sample";
  const std::int64_t variant = r.pick(4);
  if (variant < 2) {
    const Shape s = activation(r, b.bytes / 4);
    w.add_tensor("X", s, ir::TensorRole::Input);
    const std::string ax = axes(s.size());
    w.add_op("op", fmt::format("Y[{}] {} X[{}]", ax.substr(0, ax.size() - 2), variant == 0 ? "+=" : "max=", ax));
    return w;
  }
  for (int attempts = 0;; guard(attempts, "pooling")) {
    const std::int64_t n = r.of<std::int64_t>({1, 2, 4, 8}), c = r.dim(16, 1024, 8), hw = r.of<std::int64_t>({7, 14, 28, 56, 112});
    if (2.0 * static_cast<double>(n * c * hw * hw) * 1.5 > b.bytes) continue;
    w.add_tensor("I", {n, c, hw, hw}, ir::TensorRole::Input);
    if (variant == 2) {
      w.add_op("op", "O[n,c] avg= I[n,c,y,x]");
    } else {  // 3x3 stride-2 max pooling, padding 1
      const std::int64_t out = (hw + 2 - 3) / 2 + 1;
      w.add_tensor("O", {n, c, out, out}, ir::TensorRole::Activation);
      w.add_op("op", "O[n,c,y,x] max= I[n,c,2*y+ky-1,2*x+kx-1]", {{"ky", 3}, {"kx", 3}});
    }
    return w;
  }
}

ir::Workload rowwise(Rng& r, const Budget& b, bool softmax) {
  ir::Workload w;
  w.name = "sample";
  const Shape s = activation(r, b.bytes / 4);
  const std::string ax = axes(s.size()), last = ax.substr(ax.size() - 1);
  w.add_tensor("X", s, ir::TensorRole::Input);
  if (softmax) {
    w.add_op("op", fmt::format("Y[{0}] = softmax(X[{0}])", ax));
  } else {
    w.add_tensor("G", {s.back()}, ir::TensorRole::Weight);
    w.add_tensor("B", {s.back()}, ir::TensorRole::Weight);
    w.add_op("op", fmt::format("Y[{0}] = layernorm(X[{0}], G[{1}], B[{1}])", ax, last));
  }
  return w;
}

ir::Workload sample_op(const std::string& cls, Rng& r, const Budget& b) {
  ir::Workload w;
  if (cls == "matmul") w = matmul(r, b);
  else if (cls == "conv") w = conv(r, b);
  else if (cls == "elementwise") w = elementwise(r, b);
  else if (cls == "reduce") w = reduce(r, b);
  else if (cls == "softmax" || cls == "layernorm") w = rowwise(r, b, cls == "softmax");
  else throw Error(fmt::format("operator class '{}': expected one of {}", cls, fmt::join(op_classes(), ", ")));
  w.finalize();
  return w;
}

// The sample operator fed by a producer (a scale of a fresh input) instead of reading a model
// input: its input then starts in a plan's layout, as inside a model.
ir::Workload with_producer(const ir::Workload& w) {
  const ir::Operator& op = w.ops()[0];
  ir::Workload out;
  out.name = w.name;
  const std::string x = op.expr.inputs[0].tensor;
  const ir::Tensor& xt = w.tensor(x);
  out.add_tensor(x + "0", xt.shape, ir::TensorRole::Input, xt.dtype);
  const std::string ax = axes(xt.shape.size());
  out.add_op("pre", fmt::format("{0}[{1}] = {0}0[{1}] * 1.0", x, ax));
  for (const auto& t : w.tensors())
    if (t.name != x && !out.has_tensor(t.name)) out.add_tensor(t.name, t.shape, t.role, t.dtype);
  out.add_op(op.name, op.expr.text, op.extent);
  out.finalize();
  return out;
}

// The producer's plan: the consumer's layout of its input (nothing moves), or any of its plans.
plan::Plan producer_plan(const ir::Workload& w, const plan::Plan& consumer, bool follow, const plan::Target& t,
                         Rng& r) {
  const ir::Operator& pre = w.ops()[0];
  if (follow) {
    const ir::Access& in = w.ops()[1].expr.inputs[0];
    std::map<std::string, std::int64_t> fop;
    bool plain = true;
    for (std::size_t d = 0; d < in.indices.size(); ++d) {
      plain = plain && in.indices[d].plain();
      fop[pre.expr.output.indices[d].terms[0].axis] = consumer.parts[0].fs[d];
    }
    if (plain)
      if (auto p = plan::make_plan(pre, w, fop, {}, t)) return *p;
  }
  const auto all = plan::enumerate_plans(pre, w, t, /*allow_rotation=*/false);
  return all[static_cast<std::size_t>(r.pick(static_cast<std::int64_t>(all.size())))];
}

}  // namespace

ir::Workload single_op(const ir::Workload& w, const ir::Operator& op) {
  ir::Workload one;
  one.name = op.name;
  std::set<std::string> seen;
  for (const auto& in : op.expr.inputs) {
    if (!seen.insert(in.tensor).second) continue;
    const ir::Tensor& t = w.tensor(in.tensor);
    one.add_tensor(t.name, t.shape, t.role == ir::TensorRole::Weight ? ir::TensorRole::Weight : ir::TensorRole::Input, t.dtype);
  }
  const ir::Tensor& out = w.tensor(op.expr.output.tensor);
  one.add_tensor(out.name, out.shape, ir::TensorRole::Activation, out.dtype);
  one.add_op(op.name, op.expr.text, op.extent);
  one.finalize();
  return one;
}

std::vector<plan::Plan> candidate_plans(const ir::Workload& w, const plan::Target& t, std::size_t count,
                                        std::uint64_t seed) {
  const ir::Operator& op = w.ops()[0];
  std::vector<plan::Plan> all = plan::enumerate_plans(op, w, t);
  std::vector<plan::Plan> front = plan::pareto_front(all);
  std::vector<plan::Plan> out{front.front()};
  auto take = [&](const plan::Plan& p) {
    for (const auto& q : out)
      if (q.same_as(p)) return;
    out.push_back(p);
  };
  Rng r(seed);
  // Half from the front (what the planner chooses among), half from anywhere in the space.
  for (std::size_t tries = 0; out.size() < count && tries < 8 * count; ++tries) {
    const auto& from = tries % 2 == 0 ? front : all;
    take(from[static_cast<std::size_t>(r.pick(static_cast<std::int64_t>(from.size())))]);
  }
  return out;
}

std::vector<plan::Plan> idle_choices(const ir::Workload& w, const plan::Plan& active, const plan::Target& t) {
  std::vector<plan::Plan> out{active};
  const ir::Operator& op = w.ops()[0];
  if (!schedule::has_weights(op, w)) return out;
  const plan::Plan* lean = nullptr;
  const std::vector<plan::Plan> all = plan::enumerate_plans(op, w, t);
  for (const auto& p : all)
    if (!lean || schedule::weight_bytes(p, w) < schedule::weight_bytes(*lean, w)) lean = &p;
  if (!lean->same_as(active)) out.push_back(*lean);
  out.push_back(schedule::striped_weights(active, w, t.cores));
  return out;
}

void run_alone(const ir::Workload& w, const std::vector<plan::Plan>& active, const std::vector<plan::Plan>& idle,
               const plan::Target& t, Sample& s, const sim::Config* simulated_config) {
  schedule::Options so;
  so.target = t;
  // The features are what the sample records (pricing is the fit's job); the oracle's terms are
  // recorded beside them, for comparison (docs/cost.md).
  Model oracle_model;
  oracle_model.simulate = true;
  so.target.model = &oracle_model;
  oracle::Replay replay(*t.config);
  so.oracle = &replay;
  const schedule::Schedule sch = schedule::schedule_fixed(w, so, active, idle);
  lower::Options lo;
  lo.shift_buffer_bytes = t.shift_buffer_bytes;
  const lower::Lowered low = lower::lower(w, sch, *t.config, lo);
  const sim::Config& on = simulated_config ? *simulated_config : *t.config;
  const sim::SimOutcome o = sim::simulate(on, low.program(on));
  const ir::Operator& op = w.ops().back();
  const schedule::OpSchedule& os = sch.ops.back();
  s.expr = op.expr.text;
  for (const auto& in : op.expr.inputs) s.expr += fmt::format(" {}{}", in.tensor, w.tensor(in.tensor).shape);
  if (w.ops().size() > 1) s.expr += " (produced in place)";
  const plan::Plan& a = os.active;
  s.plan = a.describe() + (os.idle.same_as(a) ? "" : os.idle.weights_striped ? " (weights striped)" : " (weights lean)");
  s.terms = os.terms;
  for (const auto& j : o.results.at("operators"))
    if (j.at("name").get<std::string>() == op.name) s.simulated_cycles = j.at("cycles").get<double>();
  if (!(s.simulated_cycles > 0)) throw Error(fmt::format("sample '{}': the simulator reported no time for it", s.expr));
}

namespace {

// Runs `want` samples of one class: shapes drawn from `r`, each with its candidate plans.
std::vector<Sample> sample_class(const std::string& cls, std::size_t want, const plan::Target& t, const Budget& b,
                                 const CalibrateOptions& o, Rng& r) {
  std::vector<Sample> got;
  std::size_t failures = 0;
  for (std::size_t shape = 0; got.size() < want; ++shape) {
    const std::size_t before = got.size();
    const ir::Workload w = sample_op(cls, r, b);
    const auto plans = candidate_plans(w, t, std::min(o.plans_per_shape, want - got.size()), r.e());
    // Half the shapes read their first input from a producer (in this plan's layout or in
    // another): inside a model most inputs come from the operator before.
    const bool produced = shape % 2 == 1;
    const ir::Workload wp = produced ? with_producer(w) : ir::Workload{};
    for (const auto& p : plans) {
      const auto idles = idle_choices(w, p, t);
      const plan::Plan& idle = idles[static_cast<std::size_t>(r.pick(static_cast<std::int64_t>(idles.size())))];
      Sample s;
      s.cls = cls;
      s.shape = shape;
      s.held_out = shape % 4 == 3;  // every fourth shape is held out of the fit
      try {
        if (produced) {
          const plan::Plan pre = producer_plan(wp, p, r.pick(2) == 0, t, r);
          run_alone(wp, {pre, p}, {pre, idle}, t, s, o.simulated_config);
        } else {
          run_alone(w, {p}, {idle}, t, s, o.simulated_config);
        }
      } catch (const lower::FitError&) {
        ++failures;  // this plan leaves no room beside its inputs' home layout: not a sample
        continue;
      }
      got.push_back(std::move(s));
    }
    if (failures > 4 * want)
      throw Error(fmt::format("calibrate: {}: {} sampled plans did not fit the config's scratchpads", cls, failures));
    // One line per tenth of the class.
    if (o.progress && (got.size() * 10 / want != before * 10 / want || got.size() >= want))
      o.progress(fmt::format("{}: {}/{} samples ({} shapes)", cls, got.size(), want, shape + 1));
  }
  return got;
}

// Kendall's tau between predicted and simulated times over each shape's plans, averaged over
// the shapes with at least two plans.
void rank_stats(const ClassModel& m, const std::vector<const Sample*>& got, FitStats& st) {
  std::map<std::pair<std::size_t, std::size_t>, std::pair<std::vector<double>, std::vector<double>>> groups;
  for (const Sample* s : got) {
    auto& g = groups[{s->config, s->shape}];
    g.first.push_back(m.predict(s->terms).total());
    g.second.push_back(s->simulated_cycles);
  }
  double tau = 0;
  st.tau_groups = 0;
  for (const auto& [shape, g] : groups)
    if (g.first.size() >= 2) {
      tau += kendall_tau(g.first, g.second);
      ++st.tau_groups;
    }
  st.kendall_tau = st.tau_groups ? tau / static_cast<double>(st.tau_groups) : 0;
}

FitStats stats_on(const ClassModel& m, const std::vector<const Sample*>& got) {
  std::vector<Terms> x;
  std::vector<double> y;
  for (const Sample* s : got) {
    x.push_back(s->terms);
    y.push_back(s->simulated_cycles);
  }
  FitStats st = stats(m, x, y);
  rank_stats(m, got, st);
  return st;
}

// Mean relative error of each sample in the fold `of(sample) == f`, priced by a fit on the
// samples outside it, over folds 0 .. folds - 1.
template <typename Fold>
double cross_validated(const std::vector<const Sample*>& fitted, std::size_t folds, Fold of, double strength) {
  double error = 0;
  std::size_t n = 0;
  for (std::size_t f = 0; f < folds; ++f) {
    std::vector<Terms> x, tx;
    std::vector<double> y, ty;
    for (const Sample* s : fitted) {
      const bool test = of(*s) == f;
      (test ? tx : x).push_back(s->terms);
      (test ? ty : y).push_back(s->simulated_cycles);
    }
    if (x.empty() || tx.empty()) continue;
    const ClassModel m = fit(x, y, strength);
    for (std::size_t i = 0; i < tx.size(); ++i) error += std::abs(m.predict(tx[i]).total() - ty[i]) / ty[i];
    n += tx.size();
  }
  return n ? error / static_cast<double>(n) : 0;
}

// The pull toward the analytical weights (cost::fit), chosen by cross-validation on the fitted
// samples alone (the held-out shapes and configs play no part): over shapes, four folds by
// (config, shape) so that a shape's plans are never on both sides, and, with several fitted
// configs, over configs, each config priced by a fit on the others. The strength with the
// lowest sum of the two mean relative errors wins (ties to the weaker).
double choose_prior_strength(const std::vector<const Sample*>& fitted) {
  static constexpr double kStrengths[] = {0, 0.001, 0.01, 0.1, 1, 10};
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> group;
  std::set<std::size_t> configs;
  for (const Sample* s : fitted) {
    group.emplace(std::make_pair(s->config, s->shape), group.size());
    configs.insert(s->config);
  }
  const std::size_t folds = std::min<std::size_t>(4, group.size());
  if (folds < 2) return 0;
  const auto by_shape = [&](const Sample& s) { return group.at({s.config, s.shape}) % folds; };
  const auto by_config = [&](const Sample& s) {
    return static_cast<std::size_t>(std::distance(configs.begin(), configs.find(s.config)));
  };
  double best = 0, best_error = std::numeric_limits<double>::infinity();
  for (double strength : kStrengths) {
    double error = cross_validated(fitted, folds, by_shape, strength);
    if (configs.size() > 1) error += cross_validated(fitted, configs.size(), by_config, strength);
    if (error < best_error) {
      best_error = error;
      best = strength;
    }
  }
  return best;
}

// Fits on the fitted configs' shapes that are not held out; measures on the held-out shapes
// (MAPE, R2, and Kendall's tau over each shape's plans) and on the held-out configs.
ClassModel fit_class(const std::vector<Sample>& got) {
  std::vector<Terms> fx;
  std::vector<double> fy;
  std::vector<const Sample*> fitted, shapes, configs;
  for (const auto& s : got) {
    if (s.held_out_config) configs.push_back(&s);
    else if (s.held_out) shapes.push_back(&s);
    else {
      fitted.push_back(&s);
      fx.push_back(s.terms);
      fy.push_back(s.simulated_cycles);
    }
  }
  ClassModel m = fit(fx, fy, choose_prior_strength(fitted));
  m.held_out = stats_on(m, shapes);
  m.held_out_configs = stats_on(m, configs);
  return m;
}

}  // namespace

Calibration calibrate(const sim::Config& cfg, const CalibrateOptions& o) { return calibrate({&cfg}, {}, o); }

Calibration calibrate(const std::vector<const sim::Config*>& fitted, const std::vector<const sim::Config*>& held_out,
                      const CalibrateOptions& o) {
  if (fitted.empty()) throw Error("calibrate: expected at least one config to fit on");
  if (o.classes.empty()) throw Error("calibrate: expected at least one operator class");
  if (o.plans_per_shape < 1) throw Error("calibrate: expected at least one plan per shape");
  // as compile() asks: the plans' rotations go through this buffer in pieces (0 divided by zero)
  if (o.shift_buffer_bytes < 64) throw Error("calibrate: shift buffer: expected at least 64 bytes");
  for (const auto& c : o.classes)
    if (std::find(op_classes().begin(), op_classes().end(), c) == op_classes().end())
      throw Error(fmt::format("calibrate: operator class '{}': expected one of {}", c, fmt::join(op_classes(), ", ")));
  const std::size_t per = o.samples / o.classes.size() / fitted.size();  // per class and config
  if (per < 8)
    throw Error(fmt::format("calibrate: {} samples for {} classes on {} configs; expected at least 8 per class and config",
                            o.samples, o.classes.size(), fitted.size()));
  std::vector<const sim::Config*> all = fitted;
  all.insert(all.end(), held_out.begin(), held_out.end());
  Calibration cal;
  for (const sim::Config* c : fitted) cal.model.configs.push_back({c->name, c->fingerprint});
  for (const sim::Config* c : held_out) cal.model.held_out_configs.push_back({c->name, c->fingerprint});
  cal.model.seed = o.seed;
  for (std::size_t ci = 0; ci < o.classes.size(); ++ci) {
    std::vector<Sample> got;
    for (std::size_t k = 0; k < all.size(); ++k) {
      plan::Target t;
      t.config = all[k];
      t.cores = static_cast<std::int64_t>(all[k]->total_cores());
      t.shift_buffer_bytes = o.shift_buffer_bytes;
      // The first config draws the shapes it always drew; others draw their own.
      Rng r(o.seed * 1000003 + ci + 7919 * k);
      if (o.progress && all.size() > 1) o.progress(fmt::format("{}{}", all[k]->name, k < fitted.size() ? "" : " (held out)"));
      for (Sample& s : sample_class(o.classes[ci], per, t, budget(*all[k]), o, r)) {
        s.config = k;
        s.held_out_config = k >= fitted.size();
        got.push_back(std::move(s));
      }
    }
    cal.model.classes[o.classes[ci]] = fit_class(got);
    for (const auto& s : got) cal.model.samples += s.held_out_config ? 0 : 1;
    for (auto& s : got) cal.samples.push_back(std::move(s));
  }
  return cal;
}

}  // namespace tessera::cost
