// tessera: one command line for the simulator (and, as it grows, the compiler).
#include <CLI/CLI.hpp>
#include "cli/validators.h"
#include <fmt/format.h>

#include <filesystem>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <new>


#include "cli/bench.h"
#include "cli/compile_cmd.h"
#include "cli/inspect_cmd.h"
#include "cli/cost_cmd.h"
#include "cli/traffic_cmd.h"
#include "cli/parallel_cmd.h"
#include "cli/pipeline_cmd.h"
#include "cli/collective_cmd.h"
#include "cli/train_cmd.h"
#include "cli/partition_cmd.h"
#include "cli/sweep_cmd.h"
#include "compiler/lower/patterns.h"
#include "sim/common/error.h"
#include "sim/common/host.h"
#include "sim/results/results.h"
#include "sim/program/program_file.h"
#include "sim/simulate.h"

namespace {

using tessera::Json;
using tessera::cli::write_json;

int simulate_cmd(const std::string& config, const std::string& program, const std::string& out,
                 const std::string& trace, bool quiet, bool functional, const std::string& engine,
                 bool fast_forward) {
  namespace sim = tessera::sim;
  const sim::Config cfg = sim::load_config(config);
  sim::ProgramOptions po;
  po.functional = functional;
  const sim::Program prog = sim::load_program(program, cfg, po);
  sim::SimOptions opt;
  opt.trace_path = trace;
  opt.in_process = true;  // one simulation per command
  opt.collective_engine = engine;
  opt.fast_forward = fast_forward;
  if (engine != "ideal" && engine != "cores" && engine != "ace")
    throw tessera::Error(fmt::format("--collective-engine {}: expected ideal, cores or ace", engine));
  const sim::SimOutcome o = sim::simulate(cfg, prog, opt);
  if (!out.empty()) write_json(out, o.results);
  if (!quiet) fmt::print("{}", sim::format_summary(o.results));
  if (!out.empty() && !quiet) fmt::print("results written to {}\n", out);
  if (!trace.empty() && !quiet) fmt::print("trace written to {} (open in https://ui.perfetto.dev)\n", trace);
  return 0;
}

int program_check(const std::string& file, const std::string& config, bool functional) {
  namespace sim = tessera::sim;
  const sim::Config cfg = sim::load_config(config);
  sim::ProgramOptions po;
  po.functional = functional;
  const sim::Program prog = sim::load_program(file, cfg, po);
  std::uint64_t items = 0;
  for (const auto& c : prog.cores) items += c.code.size();
  fmt::print("{}: valid for {}: {} cores, {} items ({} to run, counting loop iterations and a relayout as one), "
             "{} relayouts over {} layouts\n",
             file, cfg.name, prog.cores.size(), items, prog.total_work_items(), prog.relayouts.size(), prog.layouts.size());
  return 0;
}

}  // namespace

namespace {

// Caps the address space so that running out of memory is a std::bad_alloc this process can name,
// not a visit from the kernel's OOM killer: 90% of physical RAM, or TESSERA_MEMORY_LIMIT_GB.
// Returns the limit in GiB (0: none set).
double limit_host_memory() {
  double gib = 0;
  if (const char* env = std::getenv("TESSERA_MEMORY_LIMIT_GB")) {
    char* end = nullptr;
    gib = std::strtod(env, &end);
    // at least a GiB: below, the process cannot map its libraries and stacks (std::bad_alloc)
    if (end == env || *end != '\0' || !(gib >= 1 && gib <= 1e6)) {
      fmt::print(stderr, "tessera: error: TESSERA_MEMORY_LIMIT_GB='{}': expected 1 .. 1e6 GiB\n", env);
      std::exit(1);
    }
  } else {
    gib = 0.9 * tessera::physical_memory_gib();
    if (gib <= 0) return 0;
  }
  rlimit r{};
  if (getrlimit(RLIMIT_AS, &r) != 0) return 0;
  const auto want = static_cast<rlim_t>(gib * 1024 * 1024 * 1024);
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur <= want) return static_cast<double>(r.rlim_cur) / (1024.0 * 1024 * 1024);
  r.rlim_cur = want;
  if (setrlimit(RLIMIT_AS, &r) != 0) return 0;
  return gib;
}

// Address space held back for when memory runs out: unwinding allocates too (nlohmann::json
// frees a deep tree through a heap-allocated stack), and a bad_alloc thrown inside a destructor
// ends the process without a message. The first failed allocation gives the reserve back and
// fails as it would have; the unwinding then has room.
void* emergency_reserve = nullptr;

void give_back_reserve() {
  std::free(emergency_reserve);
  emergency_reserve = nullptr;
  std::set_new_handler(nullptr);
  throw std::bad_alloc();
}

}  // namespace

int main(int argc, char** argv) {
  const double memory_limit_gib = limit_host_memory();
  emergency_reserve = std::malloc(std::size_t{64} << 20);  // address space only: never touched
  if (emergency_reserve) std::set_new_handler(give_back_reserve);
  CLI::App app{"tessera: cycle-level simulator of many-core AI chips (SystemC), with the compiler "
               "that maps models onto them"};
  app.require_subcommand(1);

  auto* sim_cmd = app.add_subcommand("simulate", "run a program on a hardware config");
  std::string config, program, out, trace;
  bool quiet = false;
  sim_cmd->add_option("--config", config, "hardware config JSON (docs/config.md)")->required();
  sim_cmd->add_option("--program", program, "program file: JSON or the binary .tpb form (docs/program.md)")->required();
  sim_cmd->add_option("--out", out, "write the results JSON here (docs/results.md)")->check(::tessera::cli::writable_path());
  sim_cmd->add_option("--trace", trace, "write a Chrome trace-event JSON here (off by default)")->check(::tessera::cli::writable_path());
  sim_cmd->add_flag("--quiet", quiet, "print nothing on success");
  bool sim_functional = false;
  std::string sim_engine = "ideal";
  sim_cmd->add_option("--collective-engine", sim_engine, "what runs the program's collective items: ideal, cores "
                                                         "(kernels through memory) or ace (docs/collectives.md)")
      ->capture_default_str();
  sim_cmd->add_flag("--functional", sim_functional,
                    "carry values (the program needs views, exprs and data_tensors: tessera compile --functional); "
                    "stored tensors go to the results file's \"outputs\"");
  bool sim_no_ff = false;
  sim_cmd->add_flag("--no-fast-forward", sim_no_ff, tessera::cli::kNoFastForwardHelp);

  auto* prog_cmd = app.add_subcommand("program", "program files: convert between JSON and the binary form, check one against a config");
  prog_cmd->require_subcommand(1);
  std::string conv_in, conv_out, check_file, check_config;
  auto* prog_convert = prog_cmd->add_subcommand("convert", "copy a program into the form its output name asks for (.tpb: binary, else JSON)");
  prog_convert->add_option("input", conv_in, "program file (JSON or binary)")->required();
  prog_convert->add_option("output", conv_out, "file to write")->required();
  auto* prog_check = prog_cmd->add_subcommand("check", "validate a program against a config (the checks of simulate) and print its size");
  prog_check->add_option("program", check_file, "program file (JSON or binary)")->required();
  prog_check->add_option("--config", check_config, "hardware config JSON (docs/config.md)")->required();
  bool check_functional = false;
  prog_check->add_flag("--functional", check_functional, "check it as simulate --functional would");

  auto* gen = app.add_subcommand("gen", "generate a program for a communication pattern");
  gen->require_subcommand(1);
  std::string gen_out;
  tessera::compiler::RingShiftSpec ring;
  auto* gen_ring = gen->add_subcommand("ring", "compute-shift ring: compute, send to next, recv, sync");
  gen_ring->add_option("--cores", ring.cores, "cores in the ring")->check(::tessera::cli::non_negative())->check(CLI::Range(1u, 1u << 20))->capture_default_str();
  gen_ring->add_option("--first-core", ring.first_core, "first core id")->check(::tessera::cli::non_negative())->check(CLI::Range(0u, 1u << 20))->capture_default_str();
  gen_ring->add_option("--steps", ring.steps, "compute-shift steps")->check(::tessera::cli::non_negative())->check(CLI::Range(1u, 10000000u))->capture_default_str();
  gen_ring->add_option("--bytes", ring.shift_bytes, "bytes shifted per step")->check(::tessera::cli::non_negative())->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30))->capture_default_str();
  gen_ring->add_option("--m", ring.m, "matmul rows per step")->check(::tessera::cli::non_negative())->check(CLI::Range(1u, 65536u))->capture_default_str();
  gen_ring->add_option("--k", ring.k, "matmul reduction extent")->check(::tessera::cli::non_negative())->check(CLI::Range(1u, 65536u))->capture_default_str();
  gen_ring->add_option("--n", ring.n, "matmul columns")->check(::tessera::cli::non_negative())->check(CLI::Range(1u, 65536u))->capture_default_str();
  gen_ring->add_option("--dtype", ring.dtype, "int8, fp16, fp32 or int32")->capture_default_str();
  gen_ring->add_option("--out", gen_out, "output file (default: stdout)")->check(::tessera::cli::writable_path());
  tessera::compiler::AllToAllSpec a2a;
  auto* gen_a2a = gen->add_subcommand("all-to-all", "every core sends to every other core");
  gen_a2a->add_option("--cores", a2a.cores, "cores")->check(::tessera::cli::non_negative())->check(CLI::Range(2u, 1u << 16))->capture_default_str();
  gen_a2a->add_option("--bytes", a2a.bytes, "bytes per pair")->check(::tessera::cli::non_negative())->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30))->capture_default_str();
  gen_a2a->add_option("--out", gen_out, "output file (default: stdout)")->check(::tessera::cli::writable_path());

  tessera::cli::CompileArgs comp, runa;
  auto* compile = app.add_subcommand("compile", "compile a model to a program (T10 compute-shift or VGM baseline)");
  tessera::cli::add_compile_options(compile, comp, false);
  auto* run = app.add_subcommand("run", "compile a model and simulate it; print the per-operator table");
  tessera::cli::add_compile_options(run, runa, true);

  tessera::cli::CalibrateArgs cala;
  tessera::cli::InspectArgs inspa;
  auto* inspect = app.add_subcommand("inspect", "what a model holds (ONNX op types, operators, parameters, FLOPs, "
                                                "shapes) and whether it imports; every problem in one report");
  tessera::cli::add_inspect_options(inspect, inspa);
  auto* calibrate = app.add_subcommand("calibrate", "fit the compiler's cost model to simulator runs of sampled operators and plans");
  tessera::cli::add_calibrate_options(calibrate, cala);
  tessera::cli::ValidateArgs vala;
  auto* validate = app.add_subcommand("validate-cost", "compare the cost model's predictions with the simulator on a model: per operator class, ranking of plans, end to end");
  tessera::cli::add_validate_options(validate, vala);

  tessera::cli::TrafficArgs traffica;
  auto* traffic = app.add_subcommand("traffic", "synthetic traffic on a mesh chip: latency and throughput at "
                                                "one injection rate or a sweep (no program needed)");
  tessera::cli::add_traffic_options(traffic, traffica);

  tessera::cli::CollectiveArgs colla;
  auto* collective = app.add_subcommand("collective", "one collective (all-reduce, reduce-scatter, all-gather, "
                                                      "all-to-all) between the chips of a system: time and bandwidth");
  tessera::cli::add_collective_options(collective, colla);

  tessera::cli::TrainArgs traina;
  auto* train = app.add_subcommand("train", "data-parallel training of a layer table on a system of NPUs in the ACE "
                                            "paper's five configurations: iteration time, exposed communication");
  tessera::cli::add_train_options(train, traina);

  tessera::cli::ParallelArgs para;
  auto* plan_par = app.add_subcommand("plan-parallel", "DFModel-style mappings of an LLM onto a system: TP/PP/DP per "
                                                       "topology dimension, fused partitions or kernel by kernel (analytical)");
  tessera::cli::add_parallel_options(plan_par, para);

  tessera::cli::PipelineArgs pipea;
  auto* plan_pipe = app.add_subcommand("plan-pipeline", "GraphPipe stage graphs vs a sequential pipeline for a "
                                                        "multi-branch model on a system of NPUs, run on the simulator");
  tessera::cli::add_pipeline_options(plan_pipe, pipea);

  tessera::cli::PartitionArgs parta;
  auto* part = app.add_subcommand("partition", "place a model's operators on the chips of a system (greedy, random, "
                                               "annealing around the MCM repair solver) and run it as a pipeline: "
                                               "per-chip times, interval, latency");
  tessera::cli::add_partition_options(part, parta);

  tessera::cli::SweepArgs sweepa;
  auto* sweep = app.add_subcommand("sweep", "run every point of a sweep spec (config fields, workloads, planners, "
                                            "options) as its own process, locally or on Slurm; results.jsonl and "
                                            "results.csv (docs/sweep.md)");
  tessera::cli::add_sweep_options(sweep, sweepa);

  auto* bench = app.add_subcommand("bench", "benchmarks that print speed figures");
  bench->require_subcommand(1);
  tessera::cli::BenchOptions bopt;
  auto* bench_sim = bench->add_subcommand("sim", "simulation speed vs a bare SystemC loop");
  bench_sim->add_option("--config", bopt.config, "exchange chip config")->capture_default_str();
  bench_sim->add_option("--mesh-config", bopt.mesh_config, "mesh chip config")->capture_default_str();
  bench_sim->add_option("--steps", bopt.steps, "compute-shift steps")->capture_default_str();
  bench_sim->add_option("--cores", bopt.cores, "ring cores (0: all of the config)")->capture_default_str();

  tessera::cli::CompileBenchOptions cbopt;
  auto* bench_compile = bench->add_subcommand("compile", "compile time of a whole model, and its simulation time");
  bench_compile->add_option("--config", cbopt.config, "hardware config")->capture_default_str();
  bench_compile->add_option("--workload", cbopt.workload, "model, workload JSON or ONNX file")->capture_default_str();
  bench_compile->add_option("--batch", cbopt.batch, "batch size")->check(::tessera::cli::positive())->capture_default_str();
  bench_compile->add_option("--planner", cbopt.planner, "t10, vgm or collage")->check(CLI::IsMember({"t10", "vgm", "collage"}))->capture_default_str();

  tessera::cli::NocBenchOptions nbopt;
  auto* bench_noc = bench->add_subcommand("noc", "network speed: both levels of detail on synthetic traffic, "
                                                 "and the 1472-core cross-chip case");
  bench_noc->add_option("--mesh-config", nbopt.mesh_config, "mesh chip for synthetic traffic")->capture_default_str();
  bench_noc->add_option("--chips-config", nbopt.chips_config, "two-chip system for the cross-chip case")->capture_default_str();
  bench_noc->add_option("--measure", nbopt.measure_cycles, "measured cycles per traffic run")->capture_default_str();

  tessera::cli::CollectiveBenchOptions cbo;
  auto* bench_coll = bench->add_subcommand("collective", "collective and training speed: the 1024-NPU ring all-reduce "
                                                         "at message granularity, the torus all-reduce on each engine, "
                                                         "a 128-NPU ResNet-50 training run");
  bench_coll->add_option("--big-config", cbo.big_config, "system for the 256 MiB ring all-reduce")->capture_default_str();
  bench_coll->add_option("--torus-config", cbo.torus_config, "system for the 16 MiB torus all-reduce")->capture_default_str();
  bench_coll->add_option("--train-config", cbo.train_config, "system for the training run")->capture_default_str();
  bench_coll->add_option("--train-layers", cbo.train_layers, "layer table for the training run")->capture_default_str();

  tessera::cli::CostBenchOptions cobopt;
  auto* bench_cost = bench->add_subcommand("cost", "the cost model's pricing speed against the oracle and the simulator, "
                                                   "on the same sampled plans; prints `pricing speedup: X`");
  bench_cost->add_option("--config", cobopt.config, "hardware config")->capture_default_str();
  bench_cost->add_option("--workload", cobopt.workload, "model, workload JSON or ONNX file whose operators are sampled")->capture_default_str();
  bench_cost->add_option("--batch", cobopt.batch, "batch size")->check(::tessera::cli::positive())->capture_default_str();
  bench_cost->add_option("--calibration", cobopt.calibration, "calibration JSON (default: the analytical weights)");
  bench_cost->add_option("--ops", cobopt.ops, "distinct operators, costliest first")->check(::tessera::cli::positive())->capture_default_str();
  bench_cost->add_option("--plans", cobopt.plans_per_op, "candidate plans per operator")->check(::tessera::cli::positive())->capture_default_str();
  bench_cost->add_option("--seed", cobopt.seed, "seed of the plan sampling")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; every bad argument is exit status 1
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    if (sim_cmd->parsed()) return simulate_cmd(config, program, out, trace, quiet, sim_functional, sim_engine, !sim_no_ff);
    if (prog_convert->parsed()) {
      std::error_code ec;  // writing the output first would empty the input (also through a link)
      if (std::filesystem::exists(conv_out, ec) && std::filesystem::equivalent(conv_in, conv_out, ec))
        throw tessera::Error(fmt::format("program convert: {} and {} are the same file; write to another", conv_in,
                                         conv_out));
      tessera::sim::convert_program(conv_in, conv_out);
      fmt::print("{} written to {}\n", conv_in, conv_out);
      return 0;
    }
    if (prog_check->parsed()) return program_check(check_file, check_config, check_functional);
    if (gen_ring->parsed() || gen_a2a->parsed()) {
      Json p = gen_ring->parsed() ? tessera::compiler::ring_shift_program(ring)
                                  : tessera::compiler::all_to_all_program(a2a);
      if (gen_out.empty()) fmt::print("{}\n", p.dump(2));
      else write_json(gen_out, p);
      return 0;
    }
    if (compile->parsed()) return tessera::cli::compile_cmd(comp);
    if (run->parsed()) return tessera::cli::run_cmd(runa);
    if (inspect->parsed()) return tessera::cli::inspect_cmd(inspa);
    if (calibrate->parsed()) return tessera::cli::calibrate_cmd(cala);
    if (validate->parsed()) return tessera::cli::validate_cmd(vala);
    if (traffic->parsed()) return tessera::cli::traffic_cmd(traffica);
    if (collective->parsed()) return tessera::cli::collective_cmd(colla);
    if (train->parsed()) return tessera::cli::train_cmd(traina);
    if (part->parsed()) return tessera::cli::partition_cmd(parta);
    if (plan_par->parsed()) return tessera::cli::parallel_cmd(para);
    if (plan_pipe->parsed()) return tessera::cli::pipeline_cmd(pipea);
    if (sweep->parsed()) return tessera::cli::sweep_cmd(sweepa);
    if (bench_compile->parsed()) {
      tessera::cli::bench_compile(cbopt);
      return 0;
    }
    if (bench_cost->parsed()) {
      tessera::cli::bench_cost(cobopt);
      return 0;
    }
    if (bench_coll->parsed()) {
      tessera::cli::bench_collective(cbo);
      return 0;
    }
    if (bench_noc->parsed()) {
      tessera::cli::bench_noc(nbopt);
      return 0;
    }
    if (bench_sim->parsed()) {
      tessera::cli::bench_sim(bopt);
      return 0;
    }
  } catch (const std::bad_alloc&) {
    // Named, not a bare std::bad_alloc: what ran out, the limit, and what to change.
    std::string what;
    for (const auto* sub : app.get_subcommands()) what += (what.empty() ? "" : " ") + sub->get_name();
    const bool has_functional_mode = what == "run" || what == "simulate";
    fmt::print(stderr, "tessera: error: '{}' ran out of host memory (limit {:.1f} GiB: {}). {}\n", what,
               memory_limit_gib,
               std::getenv("TESSERA_MEMORY_LIMIT_GB") ? "TESSERA_MEMORY_LIMIT_GB"
                                                      : "90% of this machine's RAM; TESSERA_MEMORY_LIMIT_GB sets it",
               has_functional_mode ? "Try a smaller batch or config; functional mode (--functional) unrolls every "
                                     "loop and carries every value, so run it on small configs only"
                                   : "Try a smaller size or config");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tessera: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
