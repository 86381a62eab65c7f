#include "cli/cost_cmd.h"
#include "cli/process.h"
#include "cli/validators.h"

#include <fmt/format.h>

#include <filesystem>
#include <fmt/ranges.h>

#include <cstdlib>
#include <fstream>

#include "sim/common/error.h"
#include "sim/simulate.h"

namespace tessera::cli {

namespace {

void write_samples_csv(const std::string& path, const std::vector<cost::Sample>& samples, const cost::Model& m) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("{}: cannot write file", path));
  out << "class,config,shape,held_out,held_out_config,expr,plan";
  for (const char* f : cost::feature_names()) out << "," << f;
  out << ",oracle_compute,oracle_shift,oracle_input,oracle_setup,analytical_cycles,calibrated_cycles,oracle_cycles,simulated_cycles\n";
  for (const auto& s : samples) {
    const auto& cfgs = s.held_out_config ? m.held_out_configs : m.configs;
    const std::size_t k = s.held_out_config ? s.config - m.configs.size() : s.config;
    out << fmt::format("{},{},{},{},{},{},{}", s.cls, cost::csv_quote(cfgs.at(k).first), s.shape, s.held_out ? 1 : 0,
                       s.held_out_config ? 1 : 0, cost::csv_quote(s.expr), cost::csv_quote(s.plan));
    for (double f : cost::features(s.terms)) out << fmt::format(",{}", f);
    const auto& o = s.terms.oracle;
    out << fmt::format(",{},{},{},{}", o.compute, o.shift, o.input, o.setup);
    out << fmt::format(",{},{},{},{}\n", cost::analytical().predict(s.terms).total(), m.for_class(s.cls).predict(s.terms).total(),
                       cost::oracle().predict(s.terms).total(), s.simulated_cycles);
  }
  if (!out) throw Error(fmt::format("{}: write failed", path));
}

}  // namespace

void add_calibrate_options(CLI::App* cmd, CalibrateArgs& a) {
  cmd->add_option("--config", a.configs, "hardware config JSON to calibrate for (docs/config.md); repeat it to fit a "
                                         "family of configs with one set of weights")->required();
  cmd->add_option("--hold-out-config", a.held_out_configs, "a config of the family sampled but never fitted: its error is "
                                                           "the held-out-config figure (repeatable)");
  cmd->add_option("--out", a.out, "write the calibration JSON here (docs/cost.md)")->check(::tessera::cli::writable_path())->required();
  cmd->add_option("--ops", a.ops_texts, fmt::format("operator classes to calibrate, comma-separated (default: all of {})",
                                                      fmt::join(cost::op_classes(), ",")));
  cmd->add_option("--samples", a.opt.samples, "simulator runs in all, split evenly over the classes")->capture_default_str();
  cmd->add_option("--plans-per-shape", a.opt.plans_per_shape, "candidate plans run per sampled shape")
      ->check(::tessera::cli::positive())->capture_default_str();
  cmd->add_option("--seed", a.opt.seed, "seed of the shape and plan sampling")->capture_default_str();
  cmd->add_option("--shift-buffer-bytes", a.opt.shift_buffer_bytes, "the compiler's shift buffer (as in compile)")->check(::tessera::cli::non_negative())->check(CLI::Range(std::uint64_t{64}, std::uint64_t{1} << 40))->capture_default_str();
  cmd->add_option("--csv", a.csv, "also write every sample (features, simulated and predicted cycles) as CSV")->check(::tessera::cli::writable_path());
}

int calibrate_cmd(const CalibrateArgs& given) {
  CalibrateArgs a = given;
  if (!a.ops_texts.empty()) a.opt.classes = list_entries(a.ops_texts, "--ops");
  std::vector<sim::Config> cfgs;
  for (const auto& path : a.configs) cfgs.push_back(sim::load_config(path));
  for (const auto& path : a.held_out_configs) {
    // a held-out config is one the fit never saw: the same file twice reported the fit's own
    // error as a held-out one
    for (const auto& fitted : a.configs) {
      std::error_code ec;
      if (path == fitted || std::filesystem::equivalent(path, fitted, ec))
        throw Error(fmt::format("--hold-out-config {}: also given as --config; a held-out config must be one the "
                                "fit does not see", path));
    }
    cfgs.push_back(sim::load_config(path));
  }
  std::vector<const sim::Config*> fitted, held;
  for (std::size_t i = 0; i < cfgs.size(); ++i) (i < a.configs.size() ? fitted : held).push_back(&cfgs[i]);
  cost::CalibrateOptions o = a.opt;
  o.progress = [](const std::string& line) { fmt::print(stderr, "calibrate: {}\n", line); };
  const double t0 = sim::process_cpu_seconds();
  const cost::Calibration cal = cost::calibrate(fitted, held, o);
  cost::save_calibration(a.out, cal.model);
  if (!a.csv.empty()) write_samples_csv(a.csv, cal.samples, cal.model);
  fmt::print("{:<12} {:>7} {:>9} {:>9} {:>9} {:>7} {:>11} {:>9} {:>6}   weights (", "class", "samples", "fit MAPE",
             "held MAPE", "held R2", "tau", "config MAPE", "config tau", "prior");
  for (std::size_t f = 0; f < cost::kFeatures; ++f) fmt::print("{}{}", f ? ", " : "", cost::feature_names()[f]);
  fmt::print(")\n");
  for (const auto& [cls, m] : cal.model.classes) {
    fmt::print("{:<12} {:>7} {:>8.2f}% {:>8.2f}% {:>9.4f} {:>7.3f} ", cls, m.fit.samples + m.held_out.samples,
               100 * m.fit.mape, 100 * m.held_out.mape, m.held_out.r2, m.held_out.kendall_tau);
    if (m.held_out_configs.samples) fmt::print("{:>10.2f}% {:>9.3f} ", 100 * m.held_out_configs.mape, m.held_out_configs.kendall_tau);
    else fmt::print("{:>11} {:>9} ", "-", "-");
    fmt::print("{:>6.3g}   ", m.prior_strength);
    for (std::size_t f = 0; f < cost::kFeatures; ++f) fmt::print("{}{:.4g}", f ? " " : "", m.coef[f]);
    fmt::print("\n");
  }
  std::vector<std::string> names;
  for (const auto& c : fitted) names.push_back(c->name);
  fmt::print("{}: {} samples, {:.1f} CPU-s (simulations run in child processes: add their time from `time`); "
             "calibration written to {}\n",
             fmt::format("{}", fmt::join(names, ", ")), cal.model.samples, sim::process_cpu_seconds() - t0, a.out);
  return 0;
}

void add_validate_options(CLI::App* cmd, ValidateArgs& a) {
  add_model_options(cmd, a.compile);
  cmd->add_option("--shift-buffer-bytes", a.compile.opt.shift_buffer_bytes, "the compiler's shift buffer")->check(::tessera::cli::non_negative())->check(CLI::Range(std::uint64_t{64}, std::uint64_t{1} << 40))->capture_default_str();
  cmd->add_flag("--offchip-io", a.compile.opt.offchip_io,
                "load model inputs from off-chip memory and store outputs while operators run (a shared network)");
  cmd->add_option("--csv", a.csv, "per-operator predicted and simulated cycles (the ranked plans go to <csv stem>.ranks.csv)")->check(::tessera::cli::writable_path())
      ->capture_default_str();
  cmd->add_option("--json", a.json, "also write the summary (per class and end to end) as JSON")->check(::tessera::cli::writable_path());
  cmd->add_option("--plot", a.plot, "also draw predicted vs simulated (PNG) with scripts/plot_validation.py (python3-matplotlib)");
  // tau needs two plans of one operator at least: with fewer it printed 0.000, as if measured
  cmd->add_option("--rank-ops", a.opt.rank_ops_per_class, "distinct operators per class whose candidate plans are ranked")
      ->check(::tessera::cli::non_negative())->check(CLI::Range(1u, 1000u))->capture_default_str();
  cmd->add_option("--rank-plans", a.opt.plans_per_op, "candidate plans run per ranked operator")
      ->check(::tessera::cli::non_negative())->check(CLI::Range(2u, 1000u))->capture_default_str();
}

int validate_cmd(const ValidateArgs& a) {
  const sim::Config cfg = sim::load_config(a.compile.config);
  const ir::Workload w = load_workload(a.compile);
  const compiler::CompileOptions copt = compile_options(a.compile, cfg);
  cost::ValidateOptions o = a.opt;
  o.progress = [](const std::string& line) { fmt::print(stderr, "validate-cost: {}\n", line); };
  const cost::Validation v = cost::validate(w, cfg, copt, o);
  const std::string stem = a.csv.size() > 4 && a.csv.substr(a.csv.size() - 4) == ".csv" ? a.csv.substr(0, a.csv.size() - 4) : a.csv;
  cost::write_csv(a.csv, v.ops);
  cost::write_csv(stem + ".ranks.csv", v.ranks);
  const Json summary = cost::to_json(v);
  if (!a.json.empty()) write_json(a.json, summary);
  const std::string model = cost_model_name(a.compile);
  fmt::print("{} on {} with {}\n", w.name, cfg.name, model);
  fmt::print("{:<12} {:>4} {:>9} {:>8} {:>10} {:>7} {:>9} {:>6}\n", "class", "ops", "MAPE", "R2", "analyt.MAPE", "tau",
             "analyt.tau", "ranked");
  for (const auto& [cls, c] : v.classes)
    fmt::print("{:<12} {:>4} {:>8.2f}% {:>8.4f} {:>10.2f}% {:>7.3f} {:>9.3f} {:>6}{}\n", cls, c.ops, 100 * c.mape, c.r2,
               100 * c.analytical_mape, c.kendall_tau, c.analytical_tau, c.tau_ops, c.calibrated ? "" : "  (not calibrated)");
  const auto& e = summary["end_to_end"];
  fmt::print("end to end: predicted {:.0f} cycles, simulated {:.0f} ({:+.2f}%); analytical {:.0f} ({:+.2f}%)\n",
             v.predicted_cycles, v.simulated_cycles, 100 * e["error"].get<double>(), v.analytical_cycles,
             100 * e["analytical_error"].get<double>());
  fmt::print("per-operator rows in {}, ranked plans in {}.ranks.csv\n", a.csv, stem);
  if (!a.plot.empty()) {
    const std::vector<std::string> cmd = {"/usr/bin/python3", std::string(TESSERA_SOURCE_DIR) + "/scripts/plot_validation.py",
                                          a.csv, a.plot};
    if (!run_program(cmd))
      throw Error(fmt::format("plot: {} failed (is python3-matplotlib installed?)", fmt::join(cmd, " ")));
    fmt::print("plot written to {}\n", a.plot);
  }
  return 0;
}

}  // namespace tessera::cli
