#include "cli/traffic_cmd.h"
#include "cli/process.h"
#include "cli/validators.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <fstream>

#include "cli/compile_cmd.h"
#include "sim/common/error.h"

namespace tessera::cli {

void add_traffic_options(CLI::App* cmd, TrafficArgs& a) {
  cmd->add_option("--config", a.config, "a single-chip mesh config (docs/config.md)")->required();
  cmd->add_option("--model", a.model, "level of detail, overriding chip.mesh.model: packet or flit");
  cmd->add_option("--pattern", a.pattern, "uniform, transpose, bit-complement, neighbour or hotspot")
      ->capture_default_str();
  cmd->add_option("--rate", a.rate_texts, "injection rate(s) per node per cycle in --unit (comma-separated)");
  cmd->add_option("--sweep", a.sweep, "N rates evenly spaced up to 1.2 x the channel-load bound "
                                      "(the default when no --rate is given: 12)")
      ->check(CLI::Range(1u, 1000u));
  cmd->add_option("--unit", a.unit, "unit of --rate: packets or flits")->capture_default_str();
  // at most 1e9 cycles each: a longer window is hours of CPU, and a negative one wrapped round
  const auto window = CLI::Range(std::uint64_t{0}, std::uint64_t{1000000000});
  cmd->add_option("--warmup", a.spec.warmup_cycles, "cycles before the measured window")
      ->check(non_negative())->check(window)->capture_default_str();
  cmd->add_option("--measure", a.spec.measure_cycles, "cycles of the measured window")
      ->check(non_negative())->check(window)->capture_default_str();
  cmd->add_option("--drain", a.spec.drain_cycles, "at most this many cycles after the window for its "
                                                  "packets to arrive (else the point is saturated)")
      ->check(non_negative())->check(window)->capture_default_str();
  cmd->add_option("--seed", a.spec.seed, "random seed")->check(non_negative())->capture_default_str();
  cmd->add_option("--hotspot-core", a.spec.hotspot_core, "hotspot: the hot core (default: the middle of the mesh)");
  cmd->add_option("--hotspot-fraction", a.spec.hotspot_fraction, "hotspot: share of packets sent to it")
      ->check(finite())->each([&a](const std::string&) { a.hotspot_fraction_given = true; })->capture_default_str();
  cmd->add_option("--out", a.out, "results JSON (every point, with per-link use)")->check(::tessera::cli::writable_path());
  cmd->add_option("--csv", a.csv, "one row per rate");
  cmd->add_option("--plot", a.plot, "latency-throughput curve (PNG) with scripts/plot_traffic.py (python3-matplotlib)");
}

sim::Config load_config_at_level(const std::string& path, const std::string& model) {
  Json j = read_json_file(path);
  if (!model.empty()) {
    if (model != "packet" && model != "flit")
      throw Error(fmt::format("--model: unknown model \"{}\" (expected packet or flit)", model));
    if (j.contains("chip") && j["chip"].contains("mesh")) j["chip"]["mesh"]["model"] = model;
  }
  return sim::parse_config(j, path);
}

namespace {

void write_csv(const std::string& path, const std::vector<double>& rates, const std::vector<sim::TrafficPoint>& pts,
               const std::string& unit, double bound) {
  std::ofstream f(path);
  if (!f) throw Error(fmt::format("cannot write {}", path));
  f << "rate_" << unit << ",offered_flits,accepted_flits,offered_packets,accepted_packets,latency_mean,"
    << "latency_p50,latency_p95,latency_p99,latency_max,saturated,bound_flits\n";
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    f << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", rates[i], p.offered_flits, p.accepted_flits,
                     p.offered_packets, p.accepted_packets, p.latency_mean, p.latency_p50, p.latency_p95,
                     p.latency_p99, p.latency_max, p.saturated ? 1 : 0, bound);
  }
}

}  // namespace

int traffic_cmd(TrafficArgs a) {
  const sim::Config cfg = load_config_at_level(a.config, a.model);
  if (a.unit != "packets" && a.unit != "flits")
    throw Error(fmt::format("--unit: unknown unit \"{}\" (expected packets or flits)", a.unit));
  a.spec.pattern = sim::parse_pattern(a.pattern);
  for (const std::string& r : list_entries(a.rate_texts, "--rate")) a.rates.push_back(number_entry(r, "--rate"));
  // options that would otherwise be ignored
  if (!a.rates.empty() && a.sweep)
    throw Error("--sweep makes its own rates: it does not go with --rate");
  if (a.pattern != "hotspot" && (a.spec.hotspot_core != ~0u || a.hotspot_fraction_given))
    throw Error(fmt::format("--hotspot-core and --hotspot-fraction apply to --pattern hotspot, not {}", a.pattern));
  a.spec.rate_in_flits = a.unit == "flits";
  for (double r : a.rates) {  // every rate and the pattern's needs checked before anything runs
    a.spec.rate = r;
    sim::validate_traffic(cfg, a.spec);
  }
  if (a.rates.empty()) {
    a.spec.rate = 0.5;  // the sweep's rates are made below; the rest of the spec is checked now
    sim::validate_traffic(cfg, a.spec);
  }
  const std::uint32_t flits = sim::flits_per_packet(cfg);
  const double bound = sim::channel_load_bound(cfg, a.spec);  // flits per node per cycle
  if (a.rates.empty()) {
    const std::uint32_t n = a.sweep ? a.sweep : 12;
    const double top = 1.2 * bound / (a.spec.rate_in_flits ? 1.0 : flits);
    for (std::uint32_t i = 1; i <= n; ++i) a.rates.push_back(std::min(top * i / n, 0.999));
  }
  const char* model = cfg.chip.mesh->model == sim::NocModel::Flit ? "flit" : "packet";
  fmt::print("{} traffic on {} ({} level, {} flits of {} B per packet); channel-load bound {:.4f} "
             "flits/node/cycle\n", a.pattern, cfg.name, model, flits, cfg.chip.mesh->flit_bytes(), bound);
  fmt::print("{:>10} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}  {}\n", fmt::format("rate {}", a.unit), "offered",
             "accepted", "lat mean", "p50", "p95", "p99", "max", "(flits/node/cycle; latency in cycles)");
  std::vector<sim::TrafficPoint> pts;
  Json points = Json::array();
  for (double r : a.rates) {
    a.spec.rate = r;
    pts.push_back(sim::run_traffic(cfg, a.spec));
    const auto& p = pts.back();
    fmt::print("{:>10.4f} {:>9.4f} {:>9.4f} {:>9.1f} {:>8.0f} {:>8.0f} {:>8.0f} {:>8.0f}{}\n", r, p.offered_flits,
               p.accepted_flits, p.latency_mean, p.latency_p50, p.latency_p95, p.latency_p99, p.latency_max,
               p.saturated ? "  saturated" : "");
    Json pj = sim::point_json(p, true);
    pj["rate"] = r;
    points.push_back(std::move(pj));
  }
  if (!a.out.empty()) {
    Json doc = {{"config", cfg.name}, {"model", model}, {"pattern", a.pattern}, {"unit", a.unit},
                {"flits_per_packet", flits}, {"flit_bytes", cfg.chip.mesh->flit_bytes()},
                {"channel_load_bound_flits_per_node_cycle", bound},
                {"warmup_cycles", a.spec.warmup_cycles}, {"measure_cycles", a.spec.measure_cycles},
                {"seed", a.spec.seed}, {"points", std::move(points)}};
    write_json(a.out, doc);
    fmt::print("results written to {}\n", a.out);
  }
  std::string csv = a.csv;
  if (csv.empty() && !a.plot.empty()) csv = a.plot + ".csv";
  if (!csv.empty()) {
    write_csv(csv, a.rates, pts, a.unit, bound);
    fmt::print("CSV written to {}\n", csv);
  }
  if (!a.plot.empty()) {
    const std::vector<std::string> cmd = {"/usr/bin/python3", std::string(TESSERA_SOURCE_DIR) + "/scripts/plot_traffic.py",
                                          csv, a.plot, fmt::format("{} traffic on {} ({} level)", a.pattern, cfg.name, model)};
    if (!run_program(cmd))
      throw Error(fmt::format("plot: {} failed (is python3-matplotlib installed?)", fmt::join(cmd, " ")));
    fmt::print("plot written to {}\n", a.plot);
  }
  return 0;
}

}  // namespace tessera::cli
