#include "compiler/calibrate/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "compiler/calibrate/calibrate.h"
#include "sim/common/error.h"
#include "sim/simulate.h"

namespace tessera::cost {

namespace {

struct Series {
  std::vector<double> predicted, simulated, analytical;
};

// Candidate plans of the costliest distinct operators of each class, run alone.
void rank_plans(const ir::Workload& w, const sim::Config& cfg, const compiler::CompileOptions& copt,
                const ValidateOptions& o, Validation& v) {
  plan::Target t;
  t.config = &cfg;
  t.cores = static_cast<std::int64_t>(cfg.total_cores());
  t.shift_buffer_bytes = copt.shift_buffer_bytes;
  t.min_parallelism = copt.min_parallelism;
  t.min_padding_ratio = copt.min_padding_ratio;
  std::vector<std::size_t> order(w.ops().size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v.ops[a].simulated > v.ops[b].simulated; });
  std::map<std::string, std::size_t> taken;
  std::set<std::string> seen;  // expression and extents: the layers of a model are one operator
  for (std::size_t i : order) {
    const ir::Operator& op = w.ops()[i];
    const std::string cls = op_class(op);
    std::string key = op.expr.text;
    for (const auto& [a, e] : op.extent) key += fmt::format(";{}={}", a, e);
    if (taken[cls] >= o.rank_ops_per_class || !seen.insert(cls + key).second) continue;
    const ir::Workload one = single_op(w, op);
    std::vector<double> pred, ana, sim;
    for (const auto& p : candidate_plans(one, t, o.plans_per_op, o.seed + i)) {
      Sample s;
      try {
        run_alone(one, {p}, {p}, t, s);
      } catch (const lower::FitError&) {
        continue;  // does not fit beside its inputs' home layout
      }
      const ClassModel& m = copt.model.for_class(cls);
      v.ranks.push_back({op.name, cls, s.plan, m.predict(s.terms).total(), analytical().predict(s.terms).total(),
                         s.simulated_cycles});
      pred.push_back(v.ranks.back().predicted);
      ana.push_back(v.ranks.back().analytical);
      sim.push_back(s.simulated_cycles);
    }
    if (sim.size() < 2) continue;
    ++taken[cls];
    ClassSummary& c = v.classes[cls];
    c.kendall_tau += kendall_tau(pred, sim);
    c.analytical_tau += kendall_tau(ana, sim);
    ++c.tau_ops;
    if (o.progress) o.progress(fmt::format("ranked {} plans of {} ({})", sim.size(), op.name, cls));
  }
  for (auto& [cls, c] : v.classes)
    if (c.tau_ops) {
      c.kendall_tau /= static_cast<double>(c.tau_ops);
      c.analytical_tau /= static_cast<double>(c.tau_ops);
    }
}

}  // namespace

std::string csv_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

Validation validate(const ir::Workload& w, const sim::Config& cfg, const compiler::CompileOptions& copt,
                    const ValidateOptions& o) {
  Validation v;
  compiler::Compiled c = compiler::compile(w, cfg, copt);
  if (o.progress) o.progress(fmt::format("compiled {} operators; simulating", w.ops().size()));
  const sim::SimOutcome run = sim::simulate(cfg, c.program.program(cfg));
  c.program = lower::Lowered{};
  std::map<std::string, double> simulated;
  for (const auto& j : run.results.at("operators")) simulated[j.at("name").get<std::string>()] = j.at("cycles").get<double>();
  std::map<std::string, Series> per;
  for (std::size_t i = 0; i < w.ops().size(); ++i) {
    const auto& op = w.ops()[i];
    const auto& os = c.schedule.ops[i];
    Row r{op.name, op_class(op), os.active.describe(), os.active.cost.total_cycles + os.setup_cycles,
            analytical().predict(os.terms).total(), simulated.count(op.name) ? simulated[op.name] : 0.0};
    v.predicted_cycles += r.predicted;
    v.analytical_cycles += r.analytical;
    if (r.simulated > 0) {
      per[r.cls].predicted.push_back(r.predicted);
      per[r.cls].analytical.push_back(r.analytical);
      per[r.cls].simulated.push_back(r.simulated);
    }
    v.ops.push_back(std::move(r));
  }
  // Loading inputs and storing outputs (--offchip-io) belong to no operator: end to end only.
  v.predicted_cycles += c.schedule.offchip_cycles;
  v.analytical_cycles += c.schedule.offchip_cycles;
  v.simulated_cycles = run.results.at("total_cycles").get<double>();
  for (const auto& [cls, s] : per) {
    ClassSummary& cs = v.classes[cls];
    cs.ops = s.simulated.size();
    cs.mape = mape(s.predicted, s.simulated);
    cs.analytical_mape = mape(s.analytical, s.simulated);
    cs.r2 = r2(s.predicted, s.simulated);
    cs.calibrated = copt.model.for_class(cls).calibrated;
  }
  rank_plans(w, cfg, copt, o, v);
  return v;
}

Json to_json(const Validation& v) {
  Json cls = Json::object();
  for (const auto& [name, c] : v.classes)
    cls[name] = Json{{"operators", c.ops},          {"mape", c.mape},
                     {"r2", c.r2},                  {"analytical_mape", c.analytical_mape},
                     {"kendall_tau", c.kendall_tau}, {"analytical_kendall_tau", c.analytical_tau},
                     {"ranked_operators", c.tau_ops}, {"calibrated", c.calibrated}};
  auto rel = [](double p, double y) { return y > 0 ? (p - y) / y : 0.0; };
  return Json{{"classes", cls},
              {"end_to_end", {{"predicted_cycles", v.predicted_cycles},
                              {"analytical_cycles", v.analytical_cycles},
                              {"simulated_cycles", v.simulated_cycles},
                              {"error", rel(v.predicted_cycles, v.simulated_cycles)},
                              {"analytical_error", rel(v.analytical_cycles, v.simulated_cycles)}}}};
}

void write_csv(const std::string& path, const std::vector<Row>& rows) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("{}: cannot write file", path));
  out << "operator,class,plan,predicted_cycles,analytical_cycles,simulated_cycles\n";
  for (const auto& r : rows)
    out << fmt::format("{},{},{},{},{},{}\n", csv_quote(r.name), r.cls, csv_quote(r.plan), r.predicted, r.analytical, r.simulated);
  if (!out) throw Error(fmt::format("{}: write failed", path));
}

}  // namespace tessera::cost
