#include "compiler/cost/roofline.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tessera::cost {

namespace {

using ir::ExprKind;
using sim::VecOp;

double product(const std::map<std::string, std::int64_t>& extent, const std::vector<std::string>& axes) {
  double p = 1;
  for (const auto& a : axes) p *= static_cast<double>(extent.at(a));
  return p;
}

double all_elements(const ir::Operator& op) {
  double p = 1;
  for (const auto& [axis, e] : op.extent) p *= static_cast<double>(e);
  return p;
}

// Cycles per lane group of the passes an operator cannot do without: softmax finds the row's
// maximum, exponentiates the differences, sums them and scales; layer norm sums, squares the
// differences from the mean, sums those and scales (the affine parameters are left out: they
// are optional).
double passes(const sim::VectorUnitConfig& v, const ir::Expr& e) {
  auto c = [&](VecOp op) { return static_cast<double>(v.op_cycles[static_cast<int>(op)]); };
  switch (e.kind) {
    case ExprKind::Softmax: return c(VecOp::Max) + c(VecOp::Sub) + c(VecOp::Exp) + c(VecOp::Add) + c(VecOp::Mul);
    case ExprKind::Layernorm: return c(VecOp::Add) + c(VecOp::Sub) + c(VecOp::Mul) + c(VecOp::Add) + c(VecOp::Mul);
    case ExprKind::Reduction: return c(e.reduce == ir::Reduce::Max ? VecOp::Max : VecOp::Add);
    default: return c(sim::parse_vec_op(ir::fn_name(e.fn)).value_or(VecOp::Copy));  // as plan::step_compute
  }
}

// The fastest matrix rate of the operator's dtype (any rate if the dtype has none: the bound
// stays a bound).
double macs_per_cycle(const sim::MatrixUnitConfig& mu, Dtype d) {
  const auto it = mu.macs_per_cycle.find(d);
  if (it != mu.macs_per_cycle.end()) return it->second;
  double best = 1;
  for (const auto& [dt, r] : mu.macs_per_cycle) best = std::max(best, static_cast<double>(r));
  return best;
}

// Bytes per cycle a core moves through its ports, both ways together.
double port_bytes_per_cycle(const sim::Config& cfg) {
  if (cfg.chip.exchange) return cfg.chip.exchange->send_bytes_per_cycle + cfg.chip.exchange->recv_bytes_per_cycle;
  if (cfg.chip.mesh) return 2 * cfg.chip.mesh->ni_bytes_per_cycle;
  return 0;
}

// A contraction C[out] += A[..] * B[..] whose indices are all plain axes, seen as `batch`
// independent (m x k)·(k x n) products: batch axes are in A, B and C; m in A and C; n in B and
// C; k in A and B. Returns false for any other shape (an axis in one tensor only, compound
// indices), which gets no exchange bound.
bool as_products(const ir::Operator& op, double& batch, double& m, double& n, double& k) {
  const ir::Expr& e = op.expr;
  if (e.kind != ExprKind::Contraction || e.inputs.size() != 2) return false;
  std::set<std::string> a, b, c;
  auto axes_of = [](const ir::Access& acc, std::set<std::string>& out) {
    for (const auto& ix : acc.indices) {
      if (!ix.plain()) return false;
      out.insert(ix.terms[0].axis);
    }
    return true;
  };
  if (!axes_of(e.inputs[0], a) || !axes_of(e.inputs[1], b) || !axes_of(e.output, c)) return false;
  batch = m = n = k = 1;
  for (const auto& [axis, ext] : op.extent) {
    const bool in_a = a.count(axis) != 0, in_b = b.count(axis) != 0, in_c = c.count(axis) != 0;
    const auto x = static_cast<double>(ext);
    if (in_a && in_b && in_c) batch *= x;
    else if (in_a && in_c) m *= x;
    else if (in_b && in_c) n *= x;
    else if (in_a && in_b) k *= x;
    else return false;
  }
  return true;
}

}  // namespace

double contraction_words(double batch, double m, double n, double k, double cores) {
  const double product_work = m * n * k;
  const double work = batch * product_work / cores;
  const double whole = std::floor(work / product_work);
  const double rest = work - whole * product_work;
  const double touched = whole * 3 * std::cbrt(product_work * product_work) + 3 * std::cbrt(rest * rest);
  const double held = batch * (m * k + k * n + m * n) / cores;
  return std::max(0.0, touched - held);
}

OpRoofline op_roofline(const ir::Workload& w, const ir::Operator& op, const sim::Config& cfg, std::uint32_t cores) {
  OpRoofline r;
  r.op = op.name;
  const double p = cores;
  const Dtype dtype = w.tensor(op.expr.output.tensor).dtype;
  const sim::CoreConfig& core = cfg.chip.core;
  if (op.expr.kind == ExprKind::Contraction) {
    r.compute_cycles = all_elements(op) / p / macs_per_cycle(core.matrix, dtype);
  } else {
    const double elements = op.expr.kind == ExprKind::Elementwise ? product(op.extent, op.expr.output_axes())
                                                                  : all_elements(op);
    r.compute_cycles = elements / p / core.vector.lanes * passes(core.vector, op.expr);
  }
  double batch = 1, m = 1, n = 1, k = 1;
  const double port = port_bytes_per_cycle(cfg);
  if (port > 0 && as_products(op, batch, m, n, k))
    r.exchange_cycles = contraction_words(batch, m, n, k, p) * dtype_bytes(dtype) / port;
  return r;
}

Roofline model_roofline(const ir::Workload& w, const sim::Config& cfg, std::uint32_t cores) {
  Roofline r;
  for (const ir::Operator& op : w.ops()) {
    r.ops.push_back(op_roofline(w, op, cfg, cores));
    r.compute_cycles += r.ops.back().compute_cycles;
    r.exchange_cycles += r.ops.back().exchange_cycles;
    r.bound_cycles += r.ops.back().bound_cycles();
  }
  return r;
}

}  // namespace tessera::cost
