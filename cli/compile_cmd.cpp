#include "cli/compile_cmd.h"
#include "cli/validators.h"

#include <fmt/format.h>

#include <filesystem>

#include <fstream>

#include "compiler/cost/roofline.h"
#include "compiler/ir/workload_json.h"
#include "sim/common/error.h"
#include "sim/common/json_reader.h"
#include "sim/results/results.h"
#include "sim/simulate.h"

namespace tessera::cli {

void write_json(const std::string& path, const Json& j, int indent) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("{}: cannot write file", path));
  out << j.dump(indent) << "\n";
  if (!out) throw Error(fmt::format("{}: write failed", path));
}

ir::Workload load_workload(const CompileArgs& a) {
  ir::ModelOptions mo;
  mo.batch = a.batch;
  mo.seq_len = a.seq;
  mo.layers = a.layers;
  mo.dims = parse_dims(a.dims);
  mo.keep_values = a.opt.functional;
  ir::Workload w = compiler::load_workload(a.workload, mo);
  if (!a.inputs.empty()) set_input_values(w, a.inputs, a.opt.functional);
  return w;
}

// --inputs FILE: {"input name": [row-major values], ...} for the model's inputs.
void set_input_values(ir::Workload& w, const std::string& path, bool functional) {
  if (!functional) throw Error(fmt::format("--inputs {}: input values need --functional", path));
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error(fmt::format("--inputs {}: not a regular file (expected a JSON file of input values)", path));
  const Json j = read_json_file(path);  // a syntax error or a key given twice: named
  if (!j.is_object()) throw Error(fmt::format("{}: expected a JSON object {{\"input name\": [values], ...}}", path));
  for (const auto& [name, vals] : j.items()) {
    if (!w.has_tensor(name) || w.tensor(name).role != ir::TensorRole::Input) {
      std::string names;
      for (const auto& t : w.tensors())
        if (t.role == ir::TensorRole::Input) names += (names.empty() ? "'" : ", '") + t.name + "'";
      throw Error(fmt::format("{}: '{}' is not an input of the model (its inputs: {})", path, name, names));
    }
    ir::Tensor& t = w.tensor_mut(name);
    if (!vals.is_array() || static_cast<std::int64_t>(vals.size()) != t.elements())
      throw Error(fmt::format("{}: '{}': expected an array of {} numbers (shape {}, row-major)", path, name, t.elements(),
                              Json(t.shape).dump()));
    t.values.clear();
    for (const auto& x : vals) {
      if (!x.is_number()) throw Error(fmt::format("{}: '{}': expected numbers", path, name));
      t.values.push_back(x.get<float>());
    }
  }
}

std::map<std::string, std::int64_t> parse_dims(const std::vector<std::string>& specs) {
  std::map<std::string, std::int64_t> dims;
  for (const auto& s : specs) {
    const auto eq = s.find('=');
    std::int64_t v = 0;
    std::size_t used = 0;
    if (eq != std::string::npos && eq > 0) {
      try {
        v = std::stoll(s.substr(eq + 1), &used);
      } catch (const std::exception&) {
        used = 0;
      }
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || used != s.size() - eq - 1 || v < 1)
      throw Error(fmt::format("--dim '{}': expected NAME=VALUE with a positive integer value (e.g. --dim batch_size=8)", s));
    if (!dims.emplace(s.substr(0, eq), v).second) throw Error(fmt::format("--dim {}: given twice", s.substr(0, eq)));
  }
  return dims;
}

compiler::CompileOptions compile_options(const CompileArgs& a, const sim::Config& cfg) {
  compiler::CompileOptions o = a.opt;
  if (a.price_by == "simulate") {
    if (!a.calibration.empty())
      throw Error("--price-by simulate prices with the simulator's oracle, not a calibration: drop --calibration, or use --price-by model");
    o.model.simulate = true;
  } else if (a.price_by != "model") {
    throw Error(fmt::format("--price-by '{}': expected model or simulate", a.price_by));
  }
  if (a.force_calibration && a.calibration.empty())
    throw Error("--force-calibration forces a --calibration file onto another config: give --calibration");
  if (!a.calibration.empty()) o.model = cost::load_calibration(a.calibration, cfg, a.force_calibration);
  return o;
}

std::string cost_model_name(const CompileArgs& a) {
  if (a.price_by == "simulate") return "simulate (oracle)";
  return a.calibration.empty() ? std::string("analytical") : a.calibration;
}

void add_model_options(CLI::App* cmd, CompileArgs& a) {
  cmd->add_option("--config", a.config, "hardware config JSON (docs/config.md)")->required();
  cmd->add_option("--workload", a.workload, "built-in model name, workload JSON (docs/workload.md) or .onnx file")->required();
  cmd->add_option("--batch", a.batch, "batch size of a built-in model, or of an ONNX model's symbolic batch dimension")
      ->check(::tessera::cli::positive())->capture_default_str();
  cmd->add_option("--seq", a.seq, "sequence length of a built-in model (0: its default), or of an ONNX model's symbolic "
                                  "sequence dimension")->check(::tessera::cli::non_negative());
  cmd->add_option("--dim", a.dims, "NAME=VALUE: a symbolic input dimension of an ONNX model (repeatable)");
  cmd->add_option("--layers", a.layers, "layers of a built-in model (0: its default)")->check(::tessera::cli::non_negative());
  cmd->add_option("--calibration", a.calibration,
                  "cost-model calibration JSON (tessera calibrate; configs/calibrations/<config>.json); default: the analytical model");
  cmd->add_flag("--force-calibration", a.force_calibration, "use the calibration even though it was fitted on another config");
  cmd->add_option("--price-by", a.price_by,
                  "model: the cost model prices plans (calibrated with --calibration, else analytical weights); simulate: the "
                  "oracle, the simulator's compute model and every transfer replayed on its network engine (slow; for comparison)")
      ->check(CLI::IsMember({"model", "simulate"}))->capture_default_str();
}

void add_compile_options(CLI::App* cmd, CompileArgs& a, bool run) {
  add_model_options(cmd, a);
  cmd->add_option("--planner", a.opt.planner, "t10 (compute-shift), vgm (load-compute-store baseline) or collage (per operator the one the cost model prefers)")
      ->check(CLI::IsMember({"t10", "vgm", "collage"}))->capture_default_str();
  cmd->add_option("--shift-buffer-bytes", a.opt.shift_buffer_bytes, "bounded per-core buffer that rotations go through")->check(::tessera::cli::non_negative())->check(CLI::Range(std::uint64_t{64}, std::uint64_t{1} << 40))->capture_default_str();
  cmd->add_option("--min-parallelism", a.opt.min_parallelism, "fraction of cores a plan must use (relaxed when no plan can)")
      ->check(::tessera::cli::finite())->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--min-padding-ratio", a.opt.min_padding_ratio, "smallest |tensor| / |padded tensor| a plan may have")
      ->check(::tessera::cli::finite())->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--reserve-bytes", a.opt.reserve_bytes, "per-core scratchpad kept for code and runtime")->check(::tessera::cli::non_negative())->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40))->capture_default_str();
  cmd->add_flag("--paper-reconciliation", a.opt.paper_reconciliation,
                "t10: the paper's memory reconciliation alone (each operator's fastest plan, its setup added after); default: "
                "also one that prices each plan with its setup, the schedule predicted fastest kept");
  cmd->add_option("--layout-following", a.opt.layout_following,
                  "t10: element-wise and row-wise operators take their producer's layout everywhere (all), only where "
                  "they and their readers are predicted faster (priced), nowhere (none), or the fastest predicted of the three (auto)")
      ->check(CLI::IsMember({"auto", "all", "priced", "none"}))->capture_default_str();
  cmd->add_flag("--no-look-ahead{false}", a.opt.look_ahead,
                "t10: keep only the search's own choices, not also the same revisited with each operator priced with "
                "its followers' and readers' gathers (docs/compiler.md, \"Looking ahead\")");
  cmd->add_flag("--offchip-io", a.opt.offchip_io, "time loading model inputs from off-chip memory and storing outputs (default: inputs start on chip)");
  cmd->add_flag("--functional", a.opt.functional, "carry real values: unrolled program, outputs checked against a reference evaluation");
  cmd->add_option("--inputs", a.inputs, "functional mode: JSON {\"input\": [values]} of model input values (default: generated)");
  if (run) {
    cmd->add_option("--out", a.results, "write the results JSON (with the per-operator table) here")->check(::tessera::cli::writable_path());
    cmd->add_option("--trace", a.trace, "write a Chrome trace-event JSON here")->check(::tessera::cli::writable_path());
    cmd->add_flag("--quiet", a.quiet, "print only the summary line");
    cmd->add_flag("--no-fast-forward", a.no_fast_forward, kNoFastForwardHelp);
  } else {
    cmd->add_option("--out", a.out, "write the program here: JSON, or the compact binary form for a .tpb name (docs/program.md)")->check(::tessera::cli::writable_path())->required();
    cmd->add_flag("--save-workload", a.save_workload, "also write the workload JSON beside the program (<out>.workload.json)");
  }
}

int compile_cmd(const CompileArgs& a) {
  const sim::Config cfg = sim::load_config(a.config);
  const ir::Workload w = load_workload(a);
  const compiler::Compiled c = compiler::compile(w, cfg, compile_options(a, cfg));
  c.program.write(a.out);
  if (a.save_workload) write_json(a.out + ".workload.json", ir::workload_to_json(w), 2);
  fmt::print("{}: {} operators, {} planner, predicted {:.0f} cycles; compiled in {:.2f} s; {} items written to {}\n",
             w.name, w.ops().size(), a.opt.planner, c.schedule.predicted_cycles, c.compile_seconds, c.program.items(), a.out);
  return 0;
}

int run_cmd(const CompileArgs& a) {
  const sim::Config cfg = sim::load_config(a.config);
  const ir::Workload w = load_workload(a);
  compiler::Compiled c = compiler::compile(w, cfg, compile_options(a, cfg));
  sim::ProgramOptions po;
  po.functional = a.opt.functional;
  const sim::Program prog = a.opt.functional ? sim::parse_program(c.program.json(), w.name + " (compiled)", cfg, po)
                                             : c.program.program(cfg);
  c.program = lower::Lowered{};  // whole models: the compact form is not needed any more
  sim::SimOptions so;
  so.trace_path = a.trace;
  so.in_process = true;  // one simulation per command
  so.fast_forward = !a.no_fast_forward;
  sim::SimOutcome o = sim::simulate(cfg, prog, so);
  Json report = compiler::operator_report(w, c, o.results);
  const cost::Roofline roof = cost::model_roofline(w, cfg, cfg.total_cores());
  for (std::size_t i = 0; i < roof.ops.size(); ++i)  // both list the operators in the workload's order
    report[i]["roofline"] = {{"compute_cycles", roof.ops[i].compute_cycles},
                             {"exchange_cycles", roof.ops[i].exchange_cycles}};
  o.results["planner"] = a.opt.planner;
  // collage: "collage" when the mix lowered, else the whole-model schedule that did
  o.results["schedule_planner"] = c.schedule.planner;
  o.results["cost_model"] = cost_model_name(a);
  o.results["plans_steered_by"] = c.schedule.steered_by;
  if (!c.schedule.plan_choice.empty()) o.results["plan_choice"] = c.schedule.plan_choice;
  if (!c.schedule.layout_following.empty()) o.results["layout_following"] = c.schedule.layout_following;
  o.results["predicted_cycles"] = c.schedule.predicted_cycles;
  o.results["operator_table"] = report;
  o.results["idle_bytes_per_core"] = c.schedule.idle_bytes_per_core;
  Json hist = Json::array();  // T10 reconciliation: every greedy step (idle bytes, predicted cycles)
  for (const auto& h : c.schedule.history) hist.push_back({{"idle_bytes_per_core", h.idle_bytes}, {"predicted_cycles", h.predicted_cycles}});
  o.results["reconciliation"] = hist;
  o.results["exchange_share"] = compiler::exchange_share(report);
  const double cycles = o.results["total_cycles"].get<double>();
  o.results["roofline"] = {{"bound_cycles", roof.bound_cycles},
                           {"compute_cycles", roof.compute_cycles},
                           {"exchange_cycles", roof.exchange_cycles},
                           {"fraction", cycles > 0 ? roof.bound_cycles / cycles : 0.0}};
  if (a.opt.functional) o.results["functional_max_error"] = compiler::functional_max_error(w, o.results);
  if (!a.results.empty()) write_json(a.results, o.results, 2);
  if (!a.quiet) fmt::print("{}", compiler::format_operator_table(report));
  if (a.opt.planner == "collage") {
    std::size_t on_vgm = 0;
    for (std::size_t i = 0; i < c.schedule.ops.size(); ++i) on_vgm += schedule::planner_of(c.schedule, i) == "vgm";
    fmt::print("collage: {} of {} operators on VGM plans{}\n", on_vgm, c.schedule.ops.size(),
               c.schedule.planner == "collage" ? "" : fmt::format(" (the mix did not fit: the {} schedule)", c.schedule.planner));
  }
  fmt::print("{}: {} planner: {} cycles ({:.3f} ms), predicted {:.0f}; exchange {:.1f}% of operator time; "
             "{:.1f}% of the roofline; compile {:.2f} s, simulate {:.2f} s",
             w.name, a.opt.planner, o.results["total_cycles"].get<std::uint64_t>(),
             o.results["total_seconds"].get<double>() * 1e3, c.schedule.predicted_cycles,
             100.0 * o.results["exchange_share"].get<double>(),
             100.0 * o.results["roofline"]["fraction"].get<double>(), c.compile_seconds, o.host_cpu_seconds);
  const double err = a.opt.functional ? o.results["functional_max_error"].get<double>() : 0.0;
  const bool match = err <= 1e-3;
  if (a.opt.functional && match) fmt::print("; outputs match the reference (max relative error {:.2e})", err);
  fmt::print("\n");
  if (!match)
    throw Error(fmt::format("functional run: outputs differ from the reference evaluation (max relative error {:.3e})", err));
  return 0;
}

}  // namespace tessera::cli
