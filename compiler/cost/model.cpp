#include "compiler/cost/model.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "sim/common/error.h"

namespace tessera::cost {

const std::array<const char*, kFeatures>& feature_names() {
  static const std::array<const char*, kFeatures> names{
      "mac_cycles", "fetch_cycles", "writeback_cycles", "vector_cycles", "steps",
      "shift_cycles", "shift_link_cycles", "shift_chip_link_cycles", "sync_cycles", "barrier_cycles",
      "input_port_cycles", "input_link_cycles", "input_chip_link_cycles", "input_order_cycles", "input_messages",
      "input_local_cycles", "input_latency_cycles",
      "setup_port_cycles", "setup_link_cycles", "setup_chip_link_cycles", "setup_order_cycles", "setup_messages",
      "setup_local_cycles", "setup_latency_cycles", "constant"};
  return names;
}

Vec features(const Terms& t) {
  return {t.mac_cycles, t.fetch_cycles, t.writeback_cycles, t.vector_cycles, t.steps,
          t.shift_cycles, t.shift_link_cycles, t.shift_chip_link_cycles, t.sync_cycles, t.barrier_cycles,
          t.input_port_cycles, t.input_link_cycles, t.input_chip_link_cycles, t.input_order_cycles, t.input_messages,
          t.input_local_cycles, t.input_latency_cycles,
          t.setup_port_cycles, t.setup_link_cycles, t.setup_chip_link_cycles, t.setup_order_cycles, t.setup_messages,
          t.setup_local_cycles, t.setup_latency_cycles, 1.0};
}

Vec analytical_weights() {
  Vec w{};
  for (Feature f : {kMac, kWriteback, kVector, kShift, kShiftChipLink, kSync, kBarrier, kInputOrder, kInputChipLink,
                    kInputLocal, kInputLatency, kSetupOrder, kSetupChipLink, kSetupLocal, kSetupLatency})
    w[f] = 1;
  return w;
}

Breakdown ClassModel::predict(const Terms& t) const {
  Breakdown b;
  if (oracle) {
    b.compute = t.oracle.compute;
    b.shift = t.oracle.shift;
    b.sync = t.oracle.barrier;
    b.input = t.oracle.input;
    b.setup = t.oracle.setup;
    return b;
  }
  const Vec x = features(t);
  auto sum = [&](Feature from, Feature to) {
    double v = 0;
    for (std::size_t f = from; f < to; ++f) v += coef[f] * x[f];
    return v;
  };
  b.compute = sum(kMac, kShift);
  b.shift = sum(kShift, kSync);
  // The constant is the operator's closing barrier and skew: sync time.
  b.sync = sum(kSync, kInputPort) + coef[kConstant];
  b.input = sum(kInputPort, kSetupPort);
  b.setup = sum(kSetupPort, kConstant);
  return b;
}

const std::vector<std::string>& op_classes() {
  static const std::vector<std::string> c{"matmul", "conv", "elementwise", "reduce", "softmax", "layernorm"};
  return c;
}

std::string op_class(const ir::Operator& op) {
  switch (op.expr.kind) {
    case ir::ExprKind::Contraction:
      for (const auto& in : op.expr.inputs)
        for (const auto& ix : in.indices)
          if (!ix.plain()) return "conv";
      return "matmul";
    case ir::ExprKind::Elementwise: return "elementwise";
    case ir::ExprKind::Reduction: return "reduce";
    case ir::ExprKind::Softmax: return "softmax";
    case ir::ExprKind::Layernorm: return "layernorm";
  }
  return "elementwise";
}

const ClassModel& analytical() {
  static const ClassModel m;
  return m;
}

const ClassModel& oracle() {
  static const ClassModel m = [] {
    ClassModel o;
    o.oracle = true;
    return o;
  }();
  return m;
}

const ClassModel& Model::for_class(const std::string& cls) const {
  if (simulate) return oracle();
  auto it = classes.find(cls);
  return it == classes.end() ? analytical() : it->second;
}

namespace {

Json stats_json(const FitStats& s) {
  return Json{{"samples", s.samples}, {"mape", s.mape}, {"r2", s.r2}, {"kendall_tau", s.kendall_tau},
              {"tau_groups", s.tau_groups}};
}

FitStats read_stats(const JsonReader& r) {
  FitStats s;
  s.samples = r.u64("samples");
  s.mape = r.value("mape").get<double>();
  s.r2 = r.value("r2").get<double>();
  s.kendall_tau = r.value("kendall_tau").get<double>();
  s.tau_groups = r.u64("tau_groups");
  r.reject_unknown_keys();
  return s;
}

double number(const JsonReader& r, const std::string& key) {
  const Json& v = r.value(key);
  if (!v.is_number()) r.fail(key, "expected a number");
  return v.get<double>();
}

}  // namespace

Json Model::to_json() const {
  Json cls = Json::object();
  for (const auto& [name, m] : classes) {
    Json coef = Json::object();
    for (std::size_t f = 0; f < kFeatures; ++f) coef[feature_names()[f]] = m.coef[f];
    cls[name] = Json{{"coefficients", coef}, {"fit", stats_json(m.fit)}, {"held_out", stats_json(m.held_out)},
                     {"held_out_configs", stats_json(m.held_out_configs)}, {"prior_strength", m.prior_strength}};
  }
  Json feats = Json::array();
  for (const char* f : feature_names()) feats.push_back(f);
  auto list = [](const std::vector<std::pair<std::string, std::string>>& v) {
    Json a = Json::array();
    for (const auto& [name, fp] : v) a.push_back(Json{{"name", name}, {"fingerprint", fp}});
    return a;
  };
  return Json{{"format", "tessera-calibration"}, {"version", 2},     {"configs", list(configs)},
              {"held_out_configs", list(held_out_configs)},       {"seed", seed},
              {"samples", samples},  {"features", feats},          {"classes", cls}};
}

void save_calibration(const std::string& path, const Model& m) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("{}: cannot write file", path));
  out << m.to_json().dump(2) << "\n";
  if (!out) throw Error(fmt::format("{}: write failed", path));
}

static Model load_calibration_json(const Json& j, const std::string& path, const sim::Config& cfg, bool force);

Model load_calibration(const std::string& path, const sim::Config& cfg, bool force) {
  const Json j = read_json_file(path);
  try {
    return load_calibration_json(j, path, cfg, force);
  } catch (const Json::exception& e) {  // a field of the wrong type read directly
    throw ConfigError(fmt::format("{}: {}", path, e.what()));
  }
}

static Model load_calibration_json(const Json& j, const std::string& path, const sim::Config& cfg, bool force) {
  JsonReader r(j, path, "", 'c');
  if (r.string("format") != "tessera-calibration") r.fail("format", "expected \"tessera-calibration\"");
  if (r.u64("version") != 2)
    r.fail("version", "expected 2 (version 1 files weighed the replayed exchange; recalibrate with `tessera calibrate`)");
  Model m;
  for (const char* key : {"configs", "held_out_configs"}) {
    const Json& list = r.value(key);
    if (!list.is_array()) r.fail(key, "expected a list of {\"name\", \"fingerprint\"}");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = fmt::format("{}[{}]", key, i);
      if (!list[i].is_object()) r.fail(at, "expected {\"name\", \"fingerprint\"}");
      JsonReader c(list[i], path, at + ".", 'c');
      (key == std::string("configs") ? m.configs : m.held_out_configs).push_back({c.string("name"), c.string("fingerprint")});
      c.reject_unknown_keys();
    }
  }
  if (m.configs.empty()) r.fail("configs", "expected at least one config the calibration was fitted on");
  m.seed = r.u64("seed");
  m.samples = r.u64("samples");
  const Json& feats = r.value("features");
  std::vector<std::string> want(feature_names().begin(), feature_names().end());
  if (!feats.is_array() || feats.get<std::vector<std::string>>() != want)
    r.fail("features", fmt::format("expected [{}] (this tessera's features)", fmt::join(want, ", ")));
  JsonReader cls = r.object("classes");
  for (const auto& [name, body] : j.at("classes").items()) {
    if (std::find(op_classes().begin(), op_classes().end(), name) == op_classes().end())
      cls.fail(name, fmt::format("unknown operator class; expected one of {}", fmt::join(op_classes(), ", ")));
    JsonReader c = cls.object(name);
    ClassModel cm;
    cm.calibrated = true;
    JsonReader coef = c.object("coefficients");
    for (std::size_t f = 0; f < kFeatures; ++f) {
      cm.coef[f] = number(coef, feature_names()[f]);
      if (cm.coef[f] < 0 || !std::isfinite(cm.coef[f])) coef.fail(feature_names()[f], "expected a finite weight >= 0");
    }
    coef.reject_unknown_keys();
    cm.fit = read_stats(c.object("fit"));
    cm.held_out = read_stats(c.object("held_out"));
    cm.held_out_configs = read_stats(c.object("held_out_configs"));
    // Files written before the prior have none: their fits had strength 0.
    if (c.has("prior_strength")) {
      cm.prior_strength = number(c, "prior_strength");
      if (cm.prior_strength < 0 || !std::isfinite(cm.prior_strength)) c.fail("prior_strength", "expected a finite number >= 0");
    }
    c.reject_unknown_keys();
    m.classes[name] = cm;
  }
  r.reject_unknown_keys();
  bool fitted = false;
  std::vector<std::string> names;
  for (const auto& [name, fp] : m.configs) {
    fitted = fitted || fp == cfg.fingerprint;
    names.push_back(fmt::format("'{}' (fingerprint {})", name, fp));
  }
  if (!force && !fitted)
    throw Error(fmt::format("{}: fitted on config {}, but the config is '{}' (fingerprint {}); recalibrate with "
                            "`tessera calibrate --config ...`, or force its use (a family calibration's error on "
                            "configs it never saw is its held_out_configs figure)",
                            path, fmt::join(names, ", "), cfg.name, cfg.fingerprint));
  return m;
}

namespace {

// Least squares on the columns in `passive` (the others held at 0).
Eigen::VectorXd solve_on(const Eigen::MatrixXd& a, const Eigen::VectorXd& b, const std::vector<bool>& passive) {
  std::vector<Eigen::Index> cols;
  for (Eigen::Index c = 0; c < a.cols(); ++c)
    if (passive[static_cast<std::size_t>(c)]) cols.push_back(c);
  Eigen::VectorXd z = Eigen::VectorXd::Zero(a.cols());
  if (cols.empty()) return z;
  Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(cols.size()));
  for (std::size_t k = 0; k < cols.size(); ++k) sub.col(static_cast<Eigen::Index>(k)) = a.col(cols[k]);
  const Eigen::VectorXd s = sub.colPivHouseholderQr().solve(b);
  for (std::size_t k = 0; k < cols.size(); ++k) z(cols[k]) = s(static_cast<Eigen::Index>(k));
  return z;
}

// min |a x - b| subject to x >= 0 (Lawson and Hanson, "Solving Least Squares Problems", ch. 23):
// grow the set of free (positive) weights by the column that most reduces the residual; when
// the unconstrained solution on the free set goes negative, step back to the boundary and
// release the weights that reached zero.
Eigen::VectorXd nnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  const Eigen::Index n = a.cols();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(static_cast<std::size_t>(n), false);
  const double tol = 10 * std::numeric_limits<double>::epsilon() * a.norm() * static_cast<double>(std::max(a.rows(), n));
  for (Eigen::Index iter = 0; iter < 3 * n; ++iter) {
    const Eigen::VectorXd w = a.transpose() * (b - a * x);
    Eigen::Index j = -1;
    for (Eigen::Index c = 0; c < n; ++c)
      if (!passive[static_cast<std::size_t>(c)] && w(c) > tol && (j < 0 || w(c) > w(j))) j = c;
    if (j < 0) break;  // no weight can grow: optimal
    passive[static_cast<std::size_t>(j)] = true;
    for (;;) {
      Eigen::VectorXd z = solve_on(a, b, passive);
      double alpha = 1;
      bool blocked = false;
      for (Eigen::Index c = 0; c < n; ++c)
        if (passive[static_cast<std::size_t>(c)] && z(c) <= 0) {
          blocked = true;
          alpha = std::min(alpha, x(c) / (x(c) - z(c)));
        }
      if (!blocked) { x = z; break; }
      x += alpha * (z - x);
      for (Eigen::Index c = 0; c < n; ++c)
        if (passive[static_cast<std::size_t>(c)] && x(c) <= tol) { passive[static_cast<std::size_t>(c)] = false; x(c) = 0; }
    }
  }
  return x;
}

}  // namespace

bool thin_support(std::size_t support, std::size_t samples) { return support < 3 || 8 * support < samples; }

ClassModel fit(const std::vector<Terms>& x, const std::vector<double>& y, double prior_strength) {
  if (x.size() != y.size() || x.empty()) throw Error("cost fit: expected as many samples as simulated times, at least one");
  const auto n = static_cast<Eigen::Index>(x.size());
  // Row i is sample i divided by its simulated time: the residuals are relative errors.
  Eigen::MatrixXd a(n, static_cast<Eigen::Index>(kFeatures));
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto ui = static_cast<std::size_t>(i);
    if (!(y[ui] > 0)) throw Error(fmt::format("cost fit: sample {} has simulated time {} (expected > 0)", ui, y[ui]));
    const Vec f = features(x[ui]);
    for (std::size_t c = 0; c < kFeatures; ++c) a(i, static_cast<Eigen::Index>(c)) = f[c] / y[ui];
  }
  // A feature present (non-zero) in too few samples keeps its analytical weight: a handful of
  // samples lets least squares give it whatever weight absorbs their residuals (the mesh's
  // element-wise class once weighted setup latency 4.97 from the 2 of its 96 samples that had
  // a weight operand, and priced NeRF's bias adds at twice their time). Its analytical share
  // leaves the targets and its column the fit.
  const Vec w0 = analytical_weights();
  Eigen::VectorXd target = Eigen::VectorXd::Ones(n);
  std::array<bool, kFeatures> held{};
  for (std::size_t c = 0; c < kFeatures; ++c) {
    const auto ci = static_cast<Eigen::Index>(c);
    const auto support = static_cast<std::size_t>((a.col(ci).array() != 0).count());
    if (support == 0 || !thin_support(support, x.size())) continue;
    held[c] = true;
    target -= w0[c] * a.col(ci);
    a.col(ci).setZero();
  }
  // Columns scaled to unit norm (the terms span five orders of magnitude), then non-negative
  // least squares (Lawson and Hanson's active-set method); the weights are scaled back.
  Eigen::VectorXd norm(static_cast<Eigen::Index>(kFeatures));
  for (Eigen::Index c = 0; c < a.cols(); ++c) {
    norm(c) = a.col(c).norm();
    if (norm(c) > 0) a.col(c) /= norm(c);
  }
  // The prior as rows under the samples': sqrt(strength) * (w - analytical) joins the residuals,
  // for the compute features only (MAC, fetch, write-back, vector cycles: the ones that move
  // together and whose analytical split is known); the exchange terms' analytical weights are
  // far off on a mesh, and a per-step overhead has no analytical weight at all.
  const auto k = static_cast<Eigen::Index>(kFeatures);
  Eigen::MatrixXd aa = Eigen::MatrixXd::Zero(n + k, k);
  Eigen::VectorXd bb = Eigen::VectorXd::Zero(n + k);
  aa.topRows(n) = a;
  bb.head(n) = target;
  if (prior_strength > 0) {
    const double s = std::sqrt(prior_strength);
    for (Eigen::Index c = kMac; c <= static_cast<Eigen::Index>(kVector); ++c)
      if (norm(c) > 0) {
        aa(n + c, c) = s;
        bb(n + c) = s * w0[static_cast<std::size_t>(c)] * norm(c);
      }
  }
  const Eigen::VectorXd sol = nnls(aa, bb);
  ClassModel m;
  m.calibrated = true;
  m.prior_strength = prior_strength;
  for (std::size_t c = 0; c < kFeatures; ++c) {
    const auto ci = static_cast<Eigen::Index>(c);
    m.coef[c] = held[c] ? w0[c] : norm(ci) > 0 ? sol(ci) / norm(ci) : 0.0;
  }
  m.fit = stats(m, x, y);
  return m;
}

FitStats stats(const ClassModel& m, const std::vector<Terms>& x, const std::vector<double>& y) {
  FitStats s;
  s.samples = x.size();
  std::vector<double> p;
  for (const auto& t : x) p.push_back(m.predict(t).total());
  s.mape = mape(p, y);
  s.r2 = r2(p, y);
  return s;
}

double mape(const std::vector<double>& p, const std::vector<double>& y) {
  double ape = 0;
  for (std::size_t i = 0; i < y.size(); ++i) ape += std::abs(p[i] - y[i]) / y[i];
  return y.empty() ? 0 : ape / static_cast<double>(y.size());
}

double r2(const std::vector<double>& p, const std::vector<double>& y) {
  if (y.empty()) return 0;
  double mean = 0, ss_res = 0, ss_tot = 0;
  for (double v : y) mean += v;
  mean /= static_cast<double>(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    ss_res += (p[i] - y[i]) * (p[i] - y[i]);
    ss_tot += (y[i] - mean) * (y[i] - mean);
  }
  return ss_tot > 0 ? 1.0 - ss_res / ss_tot : (ss_res == 0 ? 1.0 : 0.0);
}

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw Error("kendall tau: series of different lengths");
  double conc = 0, disc = 0, ties_a = 0, ties_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) { ties_a += 1; continue; }
      if (db == 0) { ties_b += 1; continue; }
      (da * db > 0 ? conc : disc) += 1;
    }
  const double denom = std::sqrt((conc + disc + ties_a) * (conc + disc + ties_b));
  return denom > 0 ? (conc - disc) / denom : 0.0;
}

}  // namespace tessera::cost
