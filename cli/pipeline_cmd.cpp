#include "cli/pipeline_cmd.h"
#include "cli/validators.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/compile_cmd.h"
#include "compiler/lower/pipeline_lower.h"
#include "compiler/partition/pipeline_schedule.h"
#include "sim/common/error.h"
#include "sim/config/config.h"
#include "sim/results/trace.h"
#include "sim/simulate.h"

namespace tessera::cli {

namespace {

using partition::PipePlan;
using partition::PipePlanner;

// The GraphPipe evaluation's mini-batch per device: MMT and the case study 16, DLRM 64,
// CANDLE-Uno 1024 samples (64/128/256/512 on 4..32 GPUs and so on), rounded up to a power of two.
std::uint64_t default_batch(const std::string& model, std::uint32_t devices) {
  const std::uint64_t per = model == "candle-uno" ? 1024 : model == "dlrm" ? 64 : 16;
  std::uint64_t b = 1;
  while (b < per * devices && b < 65536) b *= 2;  // the planner's largest mini-batch
  return b;
}

struct Outcome {
  PipePlan plan;
  partition::PipeSchedule schedule;
  double search_cpu_s = 0;
  bool simulated = false;
  sim::PipelineResult sim;
  sim::PipelineProgram program;
  double sim_s = 0, sim_samples_per_s = 0;
};

Outcome plan_and_run(const partition::PipeModel& m, const sim::Config& cfg, const partition::DeviceSpec& dev,
                     partition::PipeOptions o, partition::MicroSchedule kind, bool simulate) {
  Outcome r;
  const double c0 = sim::process_cpu_seconds();
  r.plan = partition::plan_pipeline(m, dev, o);
  r.search_cpu_s = sim::process_cpu_seconds() - c0;
  r.schedule = partition::schedule_pipeline(r.plan, dev, kind);
  if (!simulate) return r;
  r.program = lower::lower_pipeline(m, r.plan, r.schedule);
  r.sim = sim::run_pipeline(cfg, r.program);
  r.simulated = true;
  r.sim_s = double(r.sim.cycles) / dev.clock_hz;
  r.sim_samples_per_s = r.sim_s > 0 ? double(o.mini_batch) / r.sim_s : 0;
  return r;
}

void print(const Outcome& r) {
  const PipePlan& p = r.plan;
  fmt::print("{}: {} stages, depth {}, {} devices; bottleneck {:.4f} ms per sample; estimated iteration {:.3f} ms "
             "({:.1f} samples/s)",
             partition::pipe_planner_name(p.planner), p.stages.size(), p.depth, p.devices_used, p.tps_s * 1e3,
             r.schedule.iteration_s * 1e3, r.schedule.samples_per_s);
  if (r.simulated) fmt::print("; simulated {:.3f} ms ({:.1f} samples/s)", r.sim_s * 1e3, r.sim_samples_per_s);
  fmt::print("\n  search {:.3f} CPU-s ({} DP states, {} probes)\n", r.search_cpu_s, p.dp_states, p.binary_search_probes);
  fmt::print("  {:>5}  {:<34} {:>7} {:>11} {:>2} {:>9} {:>9} {:>9} {:>9}\n", "stage", "layers", "devices", "micro-batch",
             "k", "in-flight", "fwd ms", "bwd ms", "memory GB");
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const partition::PipeStage& st = p.stages[s];
    const std::string devs = st.replicas == 1 ? fmt::format("{}", st.first_device)
                                              : fmt::format("{}-{}", st.first_device, st.first_device + st.replicas - 1);
    fmt::print("  {:>5}  {:<34} {:>7} {:>11} {:>2} {:>9} {:>9.3f} {:>9.3f} {:>9.2f}\n", s,
               fmt::format("{} ({})", st.name, st.layers.size()), devs, st.micro_batch, st.k, st.in_flight,
               st.forward_s * 1e3, st.backward_s * 1e3, st.memory_bytes / 1e9);
  }
}

// Per device, the share of each of `bins` equal slices of the simulated iteration it spent
// computing (a utilisation heat map: devices x time).
std::vector<std::vector<double>> utilisation_bins(const Outcome& r, std::size_t bins) {
  std::vector<std::vector<double>> u(r.program.devices.size(), std::vector<double>(bins, 0.0));
  if (r.sim.cycles == 0) return u;
  const double width = double(r.sim.cycles) / double(bins);
  for (const sim::PipeSpan& sp : r.sim.spans) {
    const double a = double(sp.start), b = double(sp.end);
    for (auto k = static_cast<std::size_t>(a / width); k < bins && double(k) * width < b; ++k) {
      const double lo = std::max(a, double(k) * width), hi = std::min(b, double(k + 1) * width);
      if (hi > lo) u[sp.device][k] += (hi - lo) / width;
    }
  }
  return u;
}

Json plan_json(const Outcome& r, const partition::PipeModel& m) {
  const PipePlan& p = r.plan;
  Json stages = Json::array();
  for (const partition::PipeStage& st : p.stages) {
    Json layers = Json::array();
    for (std::uint32_t l : st.layers) layers.push_back(m.layers[l].name);
    stages.push_back({{"layers", layers}, {"first_device", st.first_device}, {"replicas", st.replicas},
                      {"micro_batch", st.micro_batch}, {"k", st.k}, {"in_flight_samples", st.in_flight},
                      {"forward_s", st.forward_s}, {"backward_s", st.backward_s}, {"tps_s", st.tps_s},
                      {"allreduce_s", st.allreduce_s}, {"memory_bytes", st.memory_bytes}, {"preds", st.preds},
                      {"succs", st.succs}});
  }
  Json j = {{"planner", partition::pipe_planner_name(p.planner)},
            {"stages", stages},
            {"depth", p.depth},
            {"devices_used", p.devices_used},
            {"tps_s", p.tps_s},
            {"dp_states", p.dp_states},
            {"binary_search_probes", p.binary_search_probes},
            {"linearised_parts", p.linearised_parts},
            {"estimate", {{"iteration_s", r.schedule.iteration_s}, {"samples_per_s", r.schedule.samples_per_s},
                          {"peak_in_flight_samples", r.schedule.peak_in_flight}, {"busy_s", r.schedule.busy_s}}}};
  if (r.simulated)
    j["simulated"] = {{"iteration_cycles", r.sim.cycles},  {"iteration_s", r.sim_s},
                      {"samples_per_s", r.sim_samples_per_s}, {"busy_cycles", r.sim.busy_cycles},
                      {"peak_memory_bytes", r.sim.peak_memory_bytes}, {"messages", r.sim.messages},
                      {"message_bytes", r.sim.message_bytes},
                      {"utilisation_bins", utilisation_bins(r, 40)}};
  return j;
}

void write_trace(const Outcome& r, const std::string& path, double clock_ghz) {
  sim::TraceRecorder rec;
  std::vector<int> tracks;
  const std::string process = fmt::format("{} plan: devices", partition::pipe_planner_name(r.plan.planner));
  for (std::uint32_t d = 0; d < r.program.devices.size(); ++d)
    tracks.push_back(rec.add_track(process, fmt::format("device {}", d)));
  for (const sim::PipeSpan& s : r.sim.spans)
    rec.span(tracks[s.device], r.program.labels[s.label].c_str(), s.start, s.end - s.start);
  rec.write(path, clock_ghz);
  fmt::print("trace of the {} plan's simulated iteration in {}\n", partition::pipe_planner_name(r.plan.planner), path);
}

}  // namespace

void add_pipeline_options(CLI::App* cmd, PipelineArgs& a) {
  cmd->add_option("--config", a.config, "system config: chips with system.npu, system.afi and links")->required();
  cmd->add_option("--model", a.model, "mmt, candle-uno, dlrm or two-branch (docs/pipeline.md)")->capture_default_str();
  cmd->add_option("--branches", a.branches, "branch count (mmt, candle-uno; dlrm: of each kind); 0: the model's");
  cmd->add_option("--devices", a.devices, "devices (chips 0..N-1) to plan for; 0: every chip");
  cmd->add_option("--batch", a.batch, "mini-batch (samples per iteration, a power of two); 0: the model's default");
  cmd->add_option("--min-micro-batch", a.min_micro_batch, "smallest micro-batch the search tries (a power of two)")
      ->capture_default_str();
  cmd->add_option("--max-replicas", a.max_replicas,
                  "data-parallel replicas per stage at most (a power of two; 1: no data parallelism; 0: no limit)")
      ->capture_default_str();
  cmd->add_option("--planner", a.planner, "graphpipe, sequential, or both (and their ratio)")->capture_default_str();
  cmd->add_option("--schedule", a.schedule, "1f1b, kfkb (k of 1, 2 or 4 per stage, chosen by the search) or greedy")
      ->capture_default_str();
  cmd->add_flag("--estimate-only", a.estimate_only, "plan and estimate; do not run the simulator");
  cmd->add_option("--out", a.out, "results JSON: the plans, their estimates and simulated runs")->check(::tessera::cli::writable_path());
  cmd->add_option("--trace", a.trace, "Chrome trace (Perfetto) of the first plan's simulated iteration, a track per device")->check(::tessera::cli::writable_path());
}

int pipeline_cmd(const PipelineArgs& a) {
  const sim::Config cfg = sim::load_config(a.config);
  const partition::PipeModel m = partition::pipe_model_by_name(a.model, a.branches);
  const std::uint32_t devices = a.devices ? a.devices : cfg.system.chips;
  const partition::DeviceSpec dev = partition::device_spec(cfg, devices);
  partition::PipeOptions o;
  o.mini_batch = a.batch ? a.batch : default_batch(a.model, devices);
  o.min_micro_batch = a.min_micro_batch;
  o.max_replicas = a.max_replicas;
  const partition::MicroSchedule kind = partition::parse_micro_schedule(a.schedule);
  if (a.schedule == "kfkb") o.ks = {1, 2, 4};
  std::vector<PipePlanner> planners;
  if (a.planner == "both")
    planners = {PipePlanner::GraphPipe, PipePlanner::Sequential};
  else if (a.planner == "graphpipe" || a.planner == "sequential")
    planners = {partition::parse_pipe_planner(a.planner)};
  else
    throw Error(fmt::format("--planner '{}': expected graphpipe, sequential or both", a.planner));
  if (!a.trace.empty() && a.estimate_only) throw Error("--trace needs the simulator: drop --estimate-only");

  fmt::print("model {}: {} layers, {:.1f} GFLOP forward per sample, {:.1f} M parameters; {} devices of {}; "
             "mini-batch {}; schedule {}\n",
             m.name, m.layers.size(), m.total_flops() / 1e9, m.total_params() / 1e6, devices, cfg.name, o.mini_batch,
             a.schedule);
  std::vector<Outcome> outs;
  for (PipePlanner p : planners) {
    o.planner = p;
    outs.push_back(plan_and_run(m, cfg, dev, o, kind, !a.estimate_only));
    print(outs.back());
  }
  Json ratio;
  if (outs.size() == 2) {
    const Outcome &g = outs[0], &s = outs[1];
    const double est = s.schedule.iteration_s / g.schedule.iteration_s;
    fmt::print("graphpipe vs sequential: {:.3f}x throughput estimated", est);
    ratio = {{"estimated_throughput", est}, {"depth", {g.plan.depth, s.plan.depth}}};
    if (g.simulated) {
      const double simr = double(s.sim.cycles) / double(g.sim.cycles);
      fmt::print(", {:.3f}x simulated", simr);
      ratio["simulated_throughput"] = simr;
    }
    const double states = double(s.plan.dp_states) / double(std::max<std::uint64_t>(1, g.plan.dp_states));
    fmt::print("; the sequential search: {:.1f}x the DP states, {:.1f}x the CPU time\n", states,
               s.search_cpu_s / std::max(1e-9, g.search_cpu_s));
    ratio["dp_states"] = states;
  }
  if (!a.trace.empty()) write_trace(outs.front(), a.trace, cfg.clock_ghz);
  if (!a.out.empty()) {
    Json plans = Json::array();
    for (const Outcome& r : outs) plans.push_back(plan_json(r, m));
    Json j = {{"model", m.name},      {"config", cfg.name}, {"devices", devices}, {"mini_batch", o.mini_batch},
              {"schedule", a.schedule}, {"max_replicas", o.max_replicas}, {"plans", plans}};
    if (!ratio.is_null()) j["graphpipe_over_sequential"] = ratio;
    write_json(a.out, j);
  }
  return 0;
}

}  // namespace tessera::cli
