#include "compiler/compile.h"

#include "compiler/oracle/replay.h"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "compiler/ir/onnx_import.h"
#include "compiler/ir/workload_json.h"
#include "sim/common/error.h"
#include "sim/simulate.h"

namespace tessera::compiler {

namespace {
bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}
}  // namespace

ir::Workload load_workload(const std::string& spec, const ir::ModelOptions& opt) {
  if (ends_with(spec, ".onnx")) {
    ir::ImportOptions io;
    io.dims = opt.dims;
    io.batch = opt.batch;
    io.seq = opt.seq_len;
    io.keep_values = opt.keep_values;
    if (opt.layers != 0)
      throw Error(fmt::format("workload '{}': --layers sizes built-in models; an ONNX model has its own layers", spec));
    return ir::import_onnx(spec, io);
  }
  if (!opt.dims.empty())
    throw Error(fmt::format("workload '{}': --dim sets symbolic dimensions of ONNX models only", spec));
  if (ends_with(spec, ".json")) {
    // a workload file has its own shapes: sizes meant for a built-in model would be ignored
    if (opt.batch != 1 || opt.seq_len != 0 || opt.layers != 0)
      throw Error(fmt::format("workload '{}': --batch, --seq and --layers size built-in models (and an ONNX model's "
                              "symbolic dimensions); a workload JSON has its own shapes", spec));
    return ir::load_workload_json(spec);
  }
  if (ir::is_model_name(spec)) return ir::build_model(spec, opt);
  std::string names;
  for (const auto& n : ir::model_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error(fmt::format("workload '{}': not a .json or .onnx file and not a built-in model ({})", spec, names));
}

namespace {

// Per operator the T10 or the VGM plan (schedule_collage), then the T10 candidates in case the
// mix does not fit (each planner's memory plan assumes its own weights' layouts; a mix can need
// more than either): the compiler lowers the first that fits, retrying with more reserve, and
// takes the VGM schedule only when none of them ever fits. Without a T10 schedule: VGM's.
std::vector<schedule::Schedule> collage(const ir::Workload& w, const schedule::Options& so) {
  std::vector<schedule::Schedule> t10;
  std::optional<schedule::Schedule> vgm;
  try {
    t10 = schedule::schedule_t10_candidates(w, so);
  } catch (const schedule::DoesNotFit&) {
  }
  try {
    vgm = schedule::schedule_vgm(w, so);
  } catch (const schedule::DoesNotFit&) {
    if (t10.empty()) throw;
  }
  std::vector<schedule::Schedule> out;
  if (!t10.empty() && vgm) out.push_back(schedule::schedule_collage(w, so, t10.front(), *vgm));
  for (auto& s : t10) out.push_back(std::move(s));  // every T10 candidate, as --planner t10 tries them
  if (out.empty()) out.push_back(std::move(*vgm));
  return out;
}

}  // namespace

Compiled compile(const ir::Workload& w, const sim::Config& cfg, const CompileOptions& o) {
  const double t0 = sim::process_cpu_seconds();
  if (o.planner != "t10" && o.planner != "vgm" && o.planner != "collage")
    throw Error(fmt::format("planner '{}': expected t10, vgm or collage", o.planner));
  if (o.shift_buffer_bytes < 64) throw Error("shift buffer: expected at least 64 bytes");
  schedule::Options so;
  so.target.config = &cfg;
  so.target.cores = static_cast<std::int64_t>(cfg.total_cores());
  so.target.shift_buffer_bytes = o.shift_buffer_bytes;
  so.target.min_parallelism = o.min_parallelism;
  so.target.min_padding_ratio = o.min_padding_ratio;
  so.reserve_bytes = o.reserve_bytes;
  so.paper_reconciliation = o.paper_reconciliation;
  so.layout_following = schedule::parse_follow(o.layout_following);
  so.look_ahead = o.look_ahead;
  schedule::FrontCache own_fronts;
  so.fronts = o.fronts ? o.fronts : &own_fronts;
  schedule::SearchMemo memo;  // the searches with less room below measure no gather twice
  so.memo = &memo;
  if (o.model.calibrated() || o.model.simulate) {
    // VGM is the baseline the cost model is compared against; it keeps the analytical model.
    if (o.planner == "vgm")
      throw Error("a calibration (or --price-by simulate) prices t10 and collage plans; the vgm baseline keeps the analytical model");
    so.target.model = &o.model;
  }
  std::unique_ptr<oracle::Replay> replay;  // --price-by simulate: the simulator's network engine
  if (o.model.simulate) {
    replay = std::make_unique<oracle::Replay>(cfg);
    so.oracle = replay.get();
  }
  Compiled c;
  lower::Options lo;
  lo.functional = o.functional;
  lo.shift_buffer_bytes = o.shift_buffer_bytes;
  lo.offchip_io = o.offchip_io;
  // The schedule estimates memory per core (activations spread evenly); lowering places every
  // buffer. When a core overflows, schedule again with that much less room, a few times.
  // The search returns candidate schedules, fastest predicted first (schedule.h); the first that
  // lowers is kept. When that is not the fastest, the searches with less room go on (as when none
  // lowers), each lowering only its candidates predicted faster than the one kept, which is
  // replaced by any that lowers (OPT-13B: its best schedule 1,722 bytes short on one core, the
  // next 55% slower).
  bool lowered = false;
  double last_fastest = -1;  // the last search's fastest candidate (predicted cycles)
  Bytes step = 0;            // the reserve added after it
  for (int attempt = 0;; ++attempt) {
    std::vector<schedule::Schedule> cands;
    try {
      if (o.planner == "t10") cands = schedule::schedule_t10_candidates(w, so);
      else if (o.planner == "vgm") cands.push_back(schedule::schedule_vgm(w, so));
      else cands = collage(w, so);
    } catch (const schedule::DoesNotFit&) {
      if (lowered) break;  // less room than the schedule kept needs: keep it
      throw;
    }
    std::optional<lower::FitError> first_error;
    for (auto& cand : cands) {
      if (lowered && cand.predicted_cycles >= c.schedule.predicted_cycles) break;  // no better than the one kept
      try {
        c.program = lower::lower(w, cand, cfg, lo);
        c.schedule = std::move(cand);
        lowered = true;
        break;
      } catch (const lower::FitError& e) {
        if (!first_error) first_error = e;
      }
    }
    if (!first_error) break;  // the fastest lowered, or nothing faster than the one kept
    const lower::FitError& e = *first_error;
    // The same fastest schedule as the last search's: the added reserve bound no plan choice (the
    // overflow is one core's, beyond the even spread of live activations the schedule assumes),
    // so the next step doubles until one does (RetNet-1.3B at batch 16: the same schedule 2,742
    // bytes short on core 0 after five steps of 3,683 bytes).
    const double fastest = cands.front().predicted_cycles;
    const Bytes next = fastest == last_fastest ? 2 * step : e.short_by + e.short_by / 4 + 256;
    const bool room_left = attempt < 5 && so.reserve_bytes + next < cfg.chip.core.sram_bytes;
    if (lowered && !room_left) break;
    if (!room_left) {
      if (o.planner == "collage" && cands.front().planner != "vgm") {  // the last resort: VGM
        schedule::Options vo = so;
        vo.reserve_bytes = o.reserve_bytes;
        try {
          schedule::Schedule v = schedule::schedule_vgm(w, vo);
          c.program = lower::lower(w, v, cfg, lo);
          c.schedule = std::move(v);
          break;
        } catch (const schedule::DoesNotFit&) {
        }
      }
      throw e;
    }
    step = next;
    last_fastest = fastest;
    so.reserve_bytes += step;
  }
  if (o.offchip_io) {
    Bytes in = 0, out = 0;
    for (const auto& t : w.tensors()) {
      if (t.role == ir::TensorRole::Input) in += t.bytes();
      if (t.output) out += t.bytes();
    }
    c.schedule.offchip_cycles = cost::offchip_cycles(cfg, in) + cost::offchip_cycles(cfg, out);
    c.schedule.predicted_cycles += c.schedule.offchip_cycles;
  }
  c.compile_seconds = sim::process_cpu_seconds() - t0;
  return c;
}

Json operator_report(const ir::Workload& w, const Compiled& c, const Json& results) {
  std::map<std::string, Json> sim_ops;
  if (results.contains("operators"))
    for (const auto& j : results["operators"]) sim_ops[j["name"].get<std::string>()] = j;
  Json rows = Json::array();
  for (std::size_t i = 0; i < w.ops().size(); ++i) {
    const auto& op = w.ops()[i];
    const auto& os = c.schedule.ops[i];
    Json r{{"name", op.name}, {"kind", ir::kind_name(op.expr.kind)}, {"planner", schedule::planner_of(c.schedule, i)},
           {"plan", os.active.describe()},
           {"idle_plan", os.idle.describe()}, {"cores", os.active.cores}, {"steps", os.active.steps},
           {"memory_bytes_per_core", os.active.cost.memory_bytes}, {"pareto_plans", os.pareto_size},
           {"predicted", {{"cycles", os.active.cost.total_cycles + os.setup_cycles},
                          {"compute_cycles", os.active.cost.compute_cycles},
                          {"exchange_cycles", os.active.cost.shift_cycles + os.active.cost.input_cycles},
                          {"sync_cycles", os.active.cost.sync_cycles},
                          {"setup_cycles", os.setup_cycles}}}};
    if (sim_ops.count(op.name)) {
      const Json& s = sim_ops[op.name];
      r["simulated"] = Json{{"cycles", s["cycles"]}, {"compute_cycles", s["compute_cycles"]},
                            {"exchange_cycles", s["exchange_cycles"]}, {"sync_cycles", s["sync_cycles"]},
                            {"setup_cycles", s["setup_cycles"]}};
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

double functional_max_error(const ir::Workload& w, const Json& results) {
  double worst = 0;
  for (const auto& [name, ref] : lower::reference_outputs(w)) {
    if (!results.contains("outputs") || !results["outputs"].contains(name))
      throw Error(fmt::format("functional run: output '{}' was never stored", name));
    const Json& values = results["outputs"][name]["values"];
    if (values.size() != ref.size())
      throw Error(fmt::format("functional run: output '{}' has {} values, the reference {}", name, values.size(), ref.size()));
    for (std::size_t i = 0; i < ref.size(); ++i) {
      // a NaN or an infinity (written as null) compares as nothing: name it rather than call it a match
      const double got = values[i].is_number() ? values[i].get<double>() : std::nan("");
      if (!std::isfinite(got) || !std::isfinite(ref[i]))
        throw Error(fmt::format("functional run: output '{}' value {} is {} (the reference's: {}); a non-finite result "
                                "cannot be checked (a division by zero, or inputs too large?)",
                                name, i, got, ref[i]));
      worst = std::max(worst, std::abs(got - double(ref[i])) / (1.0 + std::abs(double(ref[i]))));
    }
  }
  return worst;
}

double exchange_share(const Json& report) {
  double exch = 0, total = 0;
  for (const auto& r : report) {
    if (!r.contains("simulated")) continue;
    exch += r["simulated"]["exchange_cycles"].get<double>() + r["simulated"]["setup_cycles"].get<double>();
    total += r["simulated"]["cycles"].get<double>();
  }
  return total > 0 ? exch / total : 0.0;
}

std::string format_operator_table(const Json& report) {
  std::string s = fmt::format("{:<28} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}  {}\n", "operator", "cycles",
                              "compute", "exchange", "sync", "setup", "KiB/core", "plan");
  for (const auto& r : report) {
    const Json& x = r.contains("simulated") ? r["simulated"] : r["predicted"];
    auto num = [&](const char* k) { return x[k].get<double>(); };
    std::string name = r["name"].get<std::string>();
    if (name.size() > 28) name = name.substr(0, 27) + "~";
    s += fmt::format("{:<28} {:>10.0f} {:>10.0f} {:>10.0f} {:>9.0f} {:>9.0f} {:>9.1f}  {}\n", name, num("cycles"),
                     num("compute_cycles"), num("exchange_cycles"), num("sync_cycles"), num("setup_cycles"),
                     r["memory_bytes_per_core"].get<double>() / 1024.0, r["plan"].get<std::string>());
  }
  return s;
}

}  // namespace tessera::compiler
