#include "cli/train_cmd.h"
#include "cli/validators.h"

#include <fmt/format.h>

#include <map>

#include "cli/compile_cmd.h"
#include "sim/common/error.h"
#include "sim/train/train.h"

namespace tessera::cli {

void add_train_options(CLI::App* cmd, TrainArgs& a) {
  cmd->add_option("--config", a.config, "a system of NPUs with system.npu, system.afi and system.endpoint "
                                        "(and system.ace for ace), e.g. configs/ace-torus-128.json")
      ->required();
  cmd->add_option("--layers", a.layers, "layer table (docs/train.md), e.g. workloads/train/resnet-50.json")->required();
  cmd->add_option("--mode", a.mode, "nooverlap, commopt, compopt, ace, ideal, or all (each, with shares of "
                                    "Ideal and ACE's speedup over the best baseline)")
      ->capture_default_str();
  cmd->add_option("--chunk-bytes", a.chunk_bytes, "all-reduce pipelining unit")
      ->transform(::tessera::cli::size_value())
      ->capture_default_str();
  cmd->add_option("--chunks-in-flight", a.chunks_in_flight, "chunks in flight per all-reduce (ideal and cores engines)")
      ->capture_default_str();
  cmd->add_option("--comm-memory-gb-per-s", a.comm_memory_gb_per_s,
                  "memory bandwidth communication gets (one mode only; default: the paper's Table VI)")
      ->check(::tessera::cli::positive())->check(CLI::Range(1e-3, 1e6));  // GB/s: 1 MB/s .. 1 PB/s
  cmd->add_option("--comm-sms", a.comm_sms, "SMs communication gets (one mode only; cores engine)")
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--share-hold", a.share_hold,
                  "static: communication holds its SMs and memory bandwidth for the whole iteration (the "
                  "paper's Table VI); in-flight: only while a collective is in flight, compute gets all of "
                  "the NPU otherwise")
      ->check(CLI::IsMember({"static", "in-flight"}))
      ->capture_default_str();
  cmd->add_option("--out", a.out, "results JSON (every mode run)")->check(::tessera::cli::writable_path());
  cmd->add_option("--trace", a.trace, "Perfetto trace of the (last) mode run: compute and all-reduces in flight")->check(::tessera::cli::writable_path());
}

int train_cmd(const TrainArgs& a) {
  const sim::Config cfg = sim::load_config(a.config);
  const sim::LayerTable table = sim::load_layer_table(a.layers);
  if (!cfg.system.npu)
    throw Error(fmt::format("train: config {} has no system.npu (docs/config.md)", cfg.name));
  std::vector<sim::TrainMode> modes;
  if (a.mode == "all")
    modes.assign(std::begin(sim::kTrainModes), std::end(sim::kTrainModes));
  else
    modes.push_back(sim::parse_train_mode(a.mode));
  if ((a.comm_memory_gb_per_s > 0 || a.comm_sms > 0) && modes.size() != 1)
    throw Error("--comm-memory-gb-per-s and --comm-sms set one configuration's shares: give --mode too");
  fmt::print("{} (batch {} per NPU, {} layers) on {} ({} NPUs)\n", table.name, table.batch_per_npu,
             table.layers.size(), cfg.name, cfg.system.chips);
  std::map<sim::TrainMode, sim::TrainResult> results;
  Json out = Json::array();
  for (sim::TrainMode m : modes) {
    sim::TrainSpec spec;
    spec.mode = m;
    spec.shares = sim::default_shares(m, *cfg.system.npu, cfg.clock_ghz);
    if (a.comm_memory_gb_per_s > 0) spec.shares.comm_memory_gb_per_s = a.comm_memory_gb_per_s;
    if (a.comm_sms > 0) spec.shares.comm_sms = a.comm_sms;
    spec.chunk_bytes = a.chunk_bytes;
    spec.chunks_in_flight = a.chunks_in_flight;
    spec.hold = sim::parse_share_hold(a.share_hold);
    const sim::TrainResult r = sim::run_training(cfg, table, spec);
    const double us = 1e-3 / cfg.clock_ghz;
    fmt::print("{:>9}: iteration {:10.1f} us = compute {:10.1f} + exposed communication {:9.1f} ({:4.1f}%); "
               "{:.1f} MB all-reduced, communication {:.1f} us\n",
               sim::train_mode_name(m), double(r.iteration_cycles) * us, double(r.compute_cycles) * us,
               double(r.exposed_cycles) * us, 100.0 * double(r.exposed_cycles) / double(r.iteration_cycles),
               double(r.gradient_bytes) / 1e6, double(r.comm_cycles) * us);
    out.push_back(sim::train_json(cfg, table, spec, r));
    if (!a.trace.empty() && m == modes.back()) write_json(a.trace, sim::train_trace(cfg, table, spec, r), -1);
    results.emplace(m, r);
  }
  if (results.count(sim::TrainMode::Ideal)) {
    const double ideal = double(results.at(sim::TrainMode::Ideal).iteration_cycles);
    std::string line = "share of Ideal:";
    for (const auto& [m, r] : results) line += fmt::format(" {} {:.1f}%", sim::train_mode_name(m), 100 * ideal / double(r.iteration_cycles));
    fmt::print("{}\n", line);
  }
  if (results.count(sim::TrainMode::Ace)) {
    Cycles best = 0;
    for (sim::TrainMode m : {sim::TrainMode::NoOverlap, sim::TrainMode::CommOpt, sim::TrainMode::CompOpt})
      if (results.count(m) && (best == 0 || results.at(m).iteration_cycles < best)) best = results.at(m).iteration_cycles;
    if (best)
      fmt::print("ACE over the best baseline: {:.2f}x\n", double(best) / double(results.at(sim::TrainMode::Ace).iteration_cycles));
  }
  if (!a.out.empty()) {
    write_json(a.out, out);
    fmt::print("results written to {}\n", a.out);
  }
  if (!a.trace.empty()) fmt::print("trace written to {}\n", a.trace);
  return 0;
}

}  // namespace tessera::cli
