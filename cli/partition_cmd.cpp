#include "cli/partition_cmd.h"
#include "cli/validators.h"

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <set>

#include "compiler/partition/search.h"
#include "compiler/pipeline.h"
#include "sim/common/error.h"
#include "sim/simulate.h"

namespace tessera::cli {

void add_partition_options(CLI::App* cmd, PartitionArgs& a) {
  add_model_options(cmd, a.model);
  cmd->add_option("--search", a.search, "greedy (the O(N) heuristic), random (uniform, solver SAMPLE mode) or sa "
                                        "(annealing in distribution space)")
      ->check(CLI::IsMember({"greedy", "random", "sa"}))->capture_default_str();
  cmd->add_option("--score-by", a.score_by, "what ranks samples: simulate (the pipeline on the simulator) or model "
                                            "(the cost model's slowest chip; the best is simulated at the end)")
      ->check(CLI::IsMember({"simulate", "model"}))->capture_default_str();
  cmd->add_option("--budget-samples", a.budget_samples, "samples to evaluate (0: no limit, give --budget-seconds)")
      ->capture_default_str();
  cmd->add_option("--budget-seconds", a.budget_seconds, "stop after this much wall-clock time (0: no limit)")
      ->check(::tessera::cli::non_negative());
  cmd->add_option("--seed", a.seed, "search seed (same seed, same samples)")->capture_default_str();
  cmd->add_option("--micro-batches", a.micro_batches, "micro-batches through the pipeline (each of --batch)")
      ->check(CLI::Range(2u, 1u << 16))->capture_default_str();
  cmd->add_option("--chips-per-device", a.chips_per_device,
                  "place operators on devices of this many consecutive chips, each device's share planned over all "
                  "its cores (one operator can span its chips; the placement's \"chip\" numbers devices), or auto: "
                  "search every size the system allows and keep the best")
      ->capture_default_str();
  cmd->add_option("--weights-share", a.weights_share, "share of a chip's scratchpads the static memory check lets "
                                                      "weights take (the compiler's lowering is the full check)")
      ->check(::tessera::cli::finite())->check(CLI::Range(0.01, 1.0))->capture_default_str();
  cmd->add_option("--placement", a.placement, "evaluate this placement JSON (docs/partition.md) instead of searching");
  cmd->add_option("--out", a.out, "write the best placement JSON here")->check(::tessera::cli::writable_path());
  cmd->add_option("--results", a.results, "write the results JSON (convergence, per-chip times, pipeline) here")->check(::tessera::cli::writable_path());
  cmd->add_option("--program", a.program, "write the best placement's program here (JSON, or .tpb)")->check(::tessera::cli::writable_path());
  cmd->add_flag("--one-chip", a.one_chip, "also compile and simulate the whole model on one chip, for the ratio");
  cmd->add_flag("--serve", a.serve, "for a learner outside (scripts/partition_rl.py): print the graph as a JSON line, then "
                                    "answer each {\"proposal\": [...], \"seed\": n} line with the solver's FIX repair "
                                    "and its score (docs/partition.md)");
}

namespace {

// `chips`: the placement's units (devices of --chips-per-device chips).
partition::Placement read_placement(const std::string& path, const ir::Workload& w, std::uint32_t chips) {
  const Json j = read_json_file(path);
  auto fail = [&](const std::string& msg) { throw Error(fmt::format("placement {}: {}", path, msg)); };
  if (!j.is_object() || !j.contains("operators") || !j["operators"].is_array())
    fail("expected an object with an \"operators\" array of {\"name\", \"chip\"}");
  // what placement_json writes; anything else is a misspelt key, not something to ignore
  for (const auto& [key, value] : j.items())
    if (key != "operators" && key != "workload" && key != "config" && key != "chips" && key != "chips_used" &&
        key != "chips_per_device")
      fail(fmt::format("unknown field '{}' (known: operators, workload, config, chips, chips_used, chips_per_device)", key));
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < w.ops().size(); ++i) index[w.ops()[i].name] = i;
  partition::Placement f(w.ops().size(), chips);
  for (std::size_t k = 0; k < j["operators"].size(); ++k) {
    const Json& e = j["operators"][k];
    const std::string at = fmt::format("operators[{}]", k);
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("chip") ||
        !e["chip"].is_number_unsigned())
      fail(fmt::format("{}: expected {{\"name\": string, \"chip\": integer >= 0}}", at));
    for (const auto& [key, value] : e.items())
      if (key != "name" && key != "chip") fail(fmt::format("{}: unknown field '{}' (known: name, chip)", at, key));
    const std::string name = e["name"].get<std::string>();
    if (!index.count(name)) fail(fmt::format("{}: '{}' is not an operator of '{}'", at, name, w.name));
    const auto chip = e["chip"].get<std::uint64_t>();
    if (chip >= chips)
      fail(fmt::format("{}: chip {} of '{}', but the placement's chips (devices) are 0..{}", at, chip, name, chips - 1));
    if (f[index[name]] != chips) fail(fmt::format("{}: '{}' is placed twice", at, name));
    f[index[name]] = static_cast<std::uint32_t>(chip);
  }
  for (std::size_t i = 0; i < f.size(); ++i)
    if (f[i] == chips) fail(fmt::format("operator '{}' has no chip", w.ops()[i].name));
  return f;
}

Json placement_json(const ir::Workload& w, const sim::Config& cfg, const partition::Placement& f, std::uint32_t per_device) {
  Json ops = Json::array();
  for (std::size_t i = 0; i < f.size(); ++i) ops.push_back({{"name", w.ops()[i].name}, {"chip", f[i]}});
  std::uint32_t used = 0;
  for (auto c : f) used = std::max(used, c + 1);
  Json j{{"workload", w.name}, {"config", cfg.name}, {"chips", cfg.system.chips / per_device}, {"chips_used", used},
         {"operators", ops}};
  if (per_device > 1) j["chips_per_device"] = per_device;
  return j;
}

// The final table, one line per chip, printed and as the results file's "chips".
Json chip_table(const compiler::PlacedModel& m, const compiler::PipelineRun& run) {
  fmt::print("{:>5} {:>9} {:>12} {:>12} {:>14} {:>14}\n", m.chips_per_device == 1 ? "chip" : "dev", "operators", "weights MiB", "sends KiB",
             "predicted cyc", "simulated cyc");
  Json chips = Json::array();
  for (std::size_t c = 0; c < m.chips.size(); ++c) {
    const ir::Workload& share = m.split.chips[c];
    const double predicted = m.chips[c].schedule.predicted_cycles;
    fmt::print("{:>5} {:>9} {:>12.2f} {:>12.1f} {:>14.0f} {:>14}\n", c, share.ops().size(),
               double(share.weight_bytes()) / (1 << 20), double(m.sent_bytes[c]) / 1024, predicted, run.chip_cycles[c]);
    chips.push_back({{"chip", c}, {"operators", share.ops().size()}, {"weight_bytes", share.weight_bytes()},
                     {"sent_bytes", m.sent_bytes[c]}, {"predicted_cycles", predicted},
                     {"simulated_cycles", run.chip_cycles[c]}});
  }
  return chips;
}

// The search the arguments ask for; prints each new best and writes the convergence into
// `results`. Throws when no sample fits.
// Returns the best placement and its score (r.best, r.best_throughput).
partition::SearchResult run_search(const PartitionArgs& a, const partition::Graph& g, std::uint32_t chips,
                                   const partition::Evaluate& evaluate, Json& results) {
  partition::SearchOptions so;
  so.method = a.search;
  so.budget_samples = a.search == "greedy" ? 10 : a.budget_samples;
  so.budget_seconds = a.budget_seconds;
  so.seed = a.seed;
  partition::SearchResult r = partition::search(g, chips, evaluate, so);
  Json conv = Json::array();
  for (const auto& s : r.samples) {
    conv.push_back({{"sample", s.index}, {"throughput_per_second", s.throughput}, {"best_per_second", s.best},
                    {"fits", s.fits}, {"predicted_per_second", s.predicted}});
    if (s.best == s.throughput && s.fits)
      fmt::print("sample {:5}: {:10.2f} micro-batches/s by the {}  (new best, {:.1f} s)\n", s.index, s.throughput,
                 a.score_by == "model" ? "cost model" : "simulator", s.seconds);
  }
  fmt::print("{} samples, {} out of memory on a chip (the compiler's check), {} solver runs without a placement\n",
             r.samples.size(), r.out_of_memory, r.unsat);
  results["convergence"] = conv;
  results["out_of_memory"] = r.out_of_memory;
  results["unsat"] = r.unsat;
  if (r.best.empty())
    throw Error(fmt::format("partition: no sample of {} fits the chips of {}", results["workload"].get<std::string>(),
                            results["config"].get<std::string>()));
  return r;
}

// --serve: a learner outside (scripts/partition_rl.py) proposes placements, this process repairs
// them with the solver's FIX mode and scores them. One JSON line per request on stdin, one per
// answer on stdout; the first line out describes the graph.
int serve(const ir::Workload& w, const partition::Graph& g, std::uint32_t chips, const partition::Evaluate& evaluate) {
  Json flops = Json::array(), out_bytes = Json::array();
  for (const auto& op : w.ops()) {
    flops.push_back(op.flops());
    out_bytes.push_back(w.tensor(op.expr.output.tensor).bytes());  // what a consumer on another chip receives
  }
  Json edges = Json::array();
  for (const auto& [u, v] : g.edges) edges.push_back({u, v});
  std::cout << Json{{"graph", {{"workload", w.name}, {"names", g.names}, {"node_bytes", g.node_bytes}, {"flops", flops},
                               {"out_bytes", out_bytes}, {"edges", edges}, {"chips", chips},
                               {"capacity_bytes", g.chip_capacity_bytes}}}}.dump()
            << std::endl;
  std::string line;
  for (std::uint64_t k = 1; std::getline(std::cin, line); ++k) {
    if (line.empty()) continue;
    Json answer;
    try {
      const Json q = Json::parse(line);
      if (!q.is_object() || !q.contains("proposal") || !q["proposal"].is_array() || q["proposal"].size() != g.nodes)
        throw Error(fmt::format("expected {{\"proposal\": [{} chips], \"seed\": n}}", g.nodes));
      partition::Placement proposal;
      for (const auto& c : q["proposal"]) {
        if (!c.is_number_unsigned() || c.get<std::uint64_t>() >= chips)
          throw Error(fmt::format("a proposal's chips are integers 0..{}", chips - 1));
        proposal.push_back(c.get<std::uint32_t>());
      }
      const partition::SolveResult r =
          partition::solve_fix(g, chips, proposal, partition::solver_options(q.value("seed", std::uint64_t{1})));
      if (r.status != partition::SolveResult::Solved) {
        answer = {{"status", r.status == partition::SolveResult::Unsat ? "unsat" : "gave up"}, {"throughput", 0.0}};
      } else {
        const partition::Score sc = evaluate(r.placement);
        answer = {{"status", "solved"}, {"placement", r.placement}, {"throughput", sc.throughput}, {"fits", sc.fits},
                  {"predicted", sc.predicted}};
      }
    } catch (const std::exception& e) {
      answer = {{"error", fmt::format("request {}: {}", k, e.what())}};
    }
    std::cout << answer.dump() << std::endl;
  }
  return 0;
}

// CPU time of a search's samples that compiled (those whose share does not fit stop early).
struct SampleCost {
  std::size_t compiled = 0;
  double compile_seconds = 0, first_compile_seconds = 0, simulate_seconds = 0;
  void add_compile(double s) {
    if (compiled++ == 0) first_compile_seconds = s;
    compile_seconds += s;
  }
};

// The device sizes `--chips-per-device auto` tries: every G that divides the chips, that the
// system can be cut into (compiler::device_config) and that leaves at most 64 devices.
std::vector<std::uint32_t> device_sizes(const sim::Config& cfg) {
  std::vector<std::uint32_t> sizes;
  for (std::uint32_t g = 1; g <= cfg.system.chips; ++g) {
    if (cfg.system.chips % g != 0 || cfg.system.chips / g > 64) continue;
    try {
      compiler::device_config(cfg, g);
      sizes.push_back(g);
    } catch (const Error&) {
    }
  }
  return sizes;
}

// The static stand-in for memory: weights may take a share of a device's scratchpads (0.6 by
// default), the rest is left for activations, operands in their active layouts and the shift
// buffer. The compiler's lowering of each device's share is the full check.
partition::Graph device_graph(const PartitionArgs& a, const sim::Config& cfg, const ir::Workload& w, std::uint32_t per) {
  const sim::Config device = compiler::device_config(cfg, per);
  const auto capacity =
      static_cast<std::uint64_t>(a.weights_share * double(device.total_cores()) * double(cfg.chip.core.sram_bytes));
  const partition::Graph g = partition::operator_graph(w, capacity);
  if (!a.serve)
    fmt::print("{}: {} operators, {:.1f} MiB of weights; {}: {} {} of {} cores, weights up to {:.1f} MiB each\n",
               w.name, g.nodes, double(w.weight_bytes()) / (1 << 20), cfg.name, cfg.system.chips / per,
               per == 1 ? std::string("chips") : fmt::format("devices ({} chips each)", per), device.total_cores(),
               double(g.chip_capacity_bytes) / (1 << 20));
  return g;
}

// --chips-per-device: one size (checked: a number of chips the system can be cut into, at most
// 64 devices) or, for auto, every size the system allows.
std::vector<std::uint32_t> requested_sizes(const PartitionArgs& a, const sim::Config& cfg) {
  if (a.chips_per_device == "auto") {
    if (!a.placement.empty() || a.serve)
      throw Error("partition: --chips-per-device auto searches; --placement and --serve need a number of chips per device");
    return device_sizes(cfg);
  }
  std::uint32_t per = 0;
  try {
    std::size_t used = 0;
    const unsigned long v = std::stoul(a.chips_per_device, &used);
    if (used != a.chips_per_device.size() || v == 0 || v > cfg.system.chips) throw std::invalid_argument("range");
    per = static_cast<std::uint32_t>(v);
  } catch (const std::exception&) {
    throw Error(fmt::format("partition: --chips-per-device '{}': expected 'auto' or a number of chips from 1 to {}",
                            a.chips_per_device, cfg.system.chips));
  }
  compiler::device_config(cfg, per);  // names what does not hold
  if (cfg.system.chips / per > 64)
    throw Error(fmt::format("partition: config {} has {} chips ({} devices); the solver places on at most 64", cfg.name,
                            cfg.system.chips, cfg.system.chips / per));
  return {per};
}

}  // namespace

int partition_cmd(const PartitionArgs& a) {
  const sim::Config cfg = sim::load_config(a.model.config);
  if (cfg.system.chips < 2) throw Error(fmt::format("partition: config {} has one chip; give a system of chips", cfg.name));
  const bool any_size = a.chips_per_device == "auto";
  const std::vector<std::uint32_t> sizes = requested_sizes(a, cfg);
  if (a.model.opt.functional) throw Error("partition: timing runs only (--functional is not supported here)");
  const ir::Workload w = load_workload(a.model);
  // Every sample compiles shares of the same model for the same chip: the operators' candidate
  // fronts are enumerated once and kept (schedule::FrontCache), the plans are the same.
  schedule::FrontCache fronts;
  compiler::CompileOptions co = compile_options(a.model, cfg);
  co.fronts = &fronts;

  const double clock = cfg.clock_ghz * 1e9;
  SampleCost cost;
  // The device size the samples are compiled for: the evaluation reads it, the loop over sizes
  // below sets it before each search.
  std::uint32_t per = sizes.front();
  const partition::Evaluate evaluate = [&](const partition::Placement& f) -> partition::Score {
    try {
      const compiler::PlacedModel m = compiler::compile_placed(w, f, cfg, co, per);
      cost.add_compile(m.compile_seconds);
      const double predicted = clock / m.predicted_interval_cycles;
      if (a.score_by == "model") return {predicted, true, predicted};
      const compiler::PipelineRun run = compiler::run_pipeline(m, cfg, a.micro_batches, false);
      cost.simulate_seconds += run.sim_seconds;
      return {run.throughput_per_second, true, predicted};
    } catch (const compiler::ChipFitError&) {
      return {0.0, false};
    } catch (const Error& e) {
      // Any other failure of one sample (a simulation error, say) is reported and scored 0, so
      // that a long search does not lose what it has found.
      fmt::print(stderr, "partition: a sample failed, scored 0: {}\n", e.what());
      return {0.0, false};
    }
  };

  if (a.serve) return serve(w, device_graph(a, cfg, w, per), cfg.system.chips / per, evaluate);

  Json results{{"workload", w.name}, {"config", cfg.name}, {"search", a.search}, {"score_by", a.score_by},
               {"seed", a.seed}, {"micro_batches", a.micro_batches}};
  partition::Placement best;
  if (!a.placement.empty()) {
    device_graph(a, cfg, w, per);
    best = read_placement(a.placement, w, cfg.system.chips / per);
    results["search"] = "given";
  } else {
    // One search per device size (one unless auto); the best throughput any of them found wins.
    double best_throughput = -1;
    std::uint32_t chosen = sizes.front();
    Json tried = Json::array();
    for (std::uint32_t g : sizes) {
      per = g;
      const partition::Graph graph = device_graph(a, cfg, w, g);
      Json r = results;
      try {
        const partition::SearchResult found = run_search(a, graph, cfg.system.chips / g, evaluate, r);
        tried.push_back({{"chips_per_device", g}, {"best_per_second", found.best_throughput}});
        if (found.best_throughput > best_throughput) {
          best_throughput = found.best_throughput;
          best = found.best;
          results = r;
          chosen = g;
        }
      } catch (const Error& e) {
        if (!any_size) throw;
        fmt::print("devices of {} chips: {}\n", g, e.what());
        tried.push_back({{"chips_per_device", g}, {"best_per_second", 0.0}});
      }
    }
    if (best.empty()) throw Error(fmt::format("partition: no sample of {} fits any device size of {}", w.name, cfg.name));
    per = chosen;
    if (any_size) {
      for (const auto& t : tried)
        fmt::print("devices of {} chips: best {:.2f} micro-batches/s by the {}\n", t["chips_per_device"].get<std::uint32_t>(),
                   t["best_per_second"].get<double>(), a.score_by == "model" ? "cost model" : "simulator");
      fmt::print("chose devices of {} chips\n", per);
      results["devices_tried"] = tried;
    }
  }

  const compiler::PlacedModel m = compiler::compile_placed(w, best, cfg, co, per);
  const compiler::PipelineRun run = compiler::run_pipeline(m, cfg, a.micro_batches, true);
  results["chips"] = chip_table(m, run);
  fmt::print("pipeline of {} micro-batches on {} {}: latency {} cycles, interval {:.0f} cycles (predicted {:.0f}), "
             "{:.2f} micro-batches/s\n", a.micro_batches, m.chips.size(), per == 1 ? "chips" : "devices", run.latency_cycles, run.interval_cycles,
             m.predicted_interval_cycles, run.throughput_per_second);
  if (cost.compiled > 0) {
    fmt::print("per sample of the search ({} compiled): compile {:.2f} CPU-s (the first {:.2f}: it enumerates the "
               "operators' plans, later samples reuse them), simulate {:.2f} CPU-s (both pipeline runs)\n",
               cost.compiled, cost.compile_seconds / cost.compiled, cost.first_compile_seconds,
               cost.simulate_seconds / cost.compiled);
  }
  fmt::print("the best placement again: compile {:.2f} CPU-s, simulate {:.2f} CPU-s (both pipeline runs)\n",
             m.compile_seconds, run.sim_seconds);
  results["pipeline"] = {{"latency_cycles", run.latency_cycles}, {"total_cycles", run.total_cycles},
                         {"interval_cycles", run.interval_cycles}, {"throughput_per_second", run.throughput_per_second},
                         {"predicted_interval_cycles", m.predicted_interval_cycles}};
  results["placement"] = placement_json(w, cfg, best, per);
  results["chips_per_device"] = per;
  if (a.one_chip) {
    try {
      const sim::Config one = compiler::one_chip(cfg);
      const compiler::Compiled c = compiler::compile(w, one, co);
      const auto cyc = sim::simulate(one, c.program.program(one)).results["total_cycles"].get<std::uint64_t>();
      const double tput = clock / double(cyc);
      fmt::print("one chip: {} cycles per micro-batch, {:.2f} micro-batches/s; the pipeline is {:.2f}x that\n", cyc,
                 tput, run.throughput_per_second / tput);
      results["one_chip"] = {{"cycles", cyc}, {"throughput_per_second", tput}};
    } catch (const schedule::DoesNotFit& e) {
      fmt::print("one chip: does not fit ({})\n", e.what());
      results["one_chip"] = {{"fits", false}};
    }
  }
  if (!a.out.empty()) write_json(a.out, placement_json(w, cfg, best, per));
  if (!a.results.empty()) write_json(a.results, results);
  if (!a.program.empty()) compiler::join(m, cfg, a.micro_batches).write(a.program);
  return 0;
}

}  // namespace tessera::cli
