#include "cli/bench.h"

#include <fmt/format.h>

#include <systemc>

#include "compiler/compile.h"
#include "compiler/lower/patterns.h"
#include "sim/common/clock.h"
#include "sim/simulate.h"

namespace tessera::cli {

namespace {

// The floor: `threads` SC_THREADs that do nothing but one timed wait per work item.
struct FloorThread : sc_core::sc_module {
  SC_HAS_PROCESS(FloorThread);
  FloorThread(sc_core::sc_module_name n, std::uint64_t waits) : sc_core::sc_module(n), waits_(waits) {
    SC_THREAD(run);
  }
  void run() {
    for (std::uint64_t i = 0; i < waits_; ++i) wait(sim::cycles(1 + (i & 7)));
  }
  std::uint64_t waits_;
};

double floor_seconds(std::uint32_t threads, std::uint64_t waits) {
  Json out = sim::run_isolated([&]() -> Json {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    std::vector<std::unique_ptr<FloorThread>> ts;
    for (std::uint32_t i = 0; i < threads; ++i)
      ts.push_back(std::make_unique<FloorThread>(fmt::format("t{}", i).c_str(), waits));
    const double t0 = sim::process_cpu_seconds();
    sc_core::sc_start();
    return sim::process_cpu_seconds() - t0;
  });
  return out.get<double>();
}

struct Measured {
  double cpu_seconds;
  std::uint64_t items, cycles, cores;
};

Measured run(const sim::Config& cfg, const Json& program_json, const std::string& what) {
  sim::Program prog = sim::parse_program(program_json, what, cfg);
  sim::SimOutcome o = sim::simulate(cfg, prog);
  return {o.host_cpu_seconds, prog.total_work_items(), o.results["total_cycles"].get<std::uint64_t>(),
          prog.cores.size()};
}

void report(const std::string& title, const Measured& m) {
  fmt::print("{}\n", title);
  fmt::print("  work items {}, simulated cycles {}, cores {}, CPU {:.3f} s\n", m.items, m.cycles,
             m.cores, m.cpu_seconds);
  fmt::print("  simulated core-cycles per CPU-second: {:.3e}\n", double(m.cycles) * m.cores / m.cpu_seconds);
  fmt::print("  work items per CPU-second:            {:.3e}\n", double(m.items) / m.cpu_seconds);
}

}  // namespace

void bench_sim(const BenchOptions& o) {
  const sim::Config cfg = sim::load_config(o.config);
  compiler::RingShiftSpec ring;
  ring.cores = o.cores ? o.cores : cfg.chip.cores;
  ring.steps = o.steps;
  ring.shift_bytes = 1024;
  Measured r = run(cfg, compiler::ring_shift_program(ring), "bench ring program");
  report(fmt::format("compute-shift ring on {} ({} cores x {} steps: matmul 16x64x16, send 1 KiB "
                     "to the next core, recv, sync)", cfg.name, ring.cores, ring.steps), r);

  const std::uint64_t per_core = r.items / r.cores;
  const double floor = floor_seconds(static_cast<std::uint32_t>(r.cores), per_core);
  fmt::print("bare SystemC floor ({} SC_THREADs x {} timed waits, one per work item): CPU {:.3f} s, "
             "{:.3e} waits per CPU-second\n", r.cores, per_core, floor, double(r.cores * per_core) / floor);
  fmt::print("ratio to SystemC floor: {:.2f}\n", r.cpu_seconds / floor);

  const sim::Config mesh = sim::load_config(o.mesh_config);
  compiler::AllToAllSpec a2a;
  a2a.cores = mesh.chip.cores;
  a2a.bytes = 4096;
  Measured m = run(mesh, compiler::all_to_all_program(a2a), "bench all-to-all program");
  report(fmt::format("all-to-all on {} ({} cores, 4 KiB per pair, {} packets of {} bytes per "
                     "message)", mesh.name, a2a.cores, (a2a.bytes + mesh.chip.mesh->packet_bytes - 1) / mesh.chip.mesh->packet_bytes,
                     mesh.chip.mesh->packet_bytes), m);
}

void bench_compile(const CompileBenchOptions& o) {
  const sim::Config cfg = sim::load_config(o.config);
  ir::ModelOptions mo;
  mo.batch = o.batch;
  const double t0 = sim::process_cpu_seconds();
  const ir::Workload w = compiler::load_workload(o.workload, mo);
  const double t1 = sim::process_cpu_seconds();
  compiler::CompileOptions co;
  co.planner = o.planner;
  compiler::Compiled c = compiler::compile(w, cfg, co);
  const double t2 = sim::process_cpu_seconds();
  const sim::Program prog = c.program.program(cfg);
  const std::uint64_t items = c.program.items();
  c.program = lower::Lowered{};
  const double t3 = sim::process_cpu_seconds();
  sim::SimOptions so;
  so.in_process = true;  // one simulation per command
  const sim::SimOutcome s = sim::simulate(cfg, prog, so);
  fmt::print("compile {} batch {} ({} operators, {:.0f} M parameters) for {} with {}:\n", o.workload, o.batch,
             w.ops().size(), static_cast<double>(w.parameter_count()) / 1e6, cfg.name, o.planner);
  fmt::print("  build the graph:        {:8.2f} CPU-s\n", t1 - t0);
  fmt::print("  plan, schedule, lower:  {:8.2f} CPU-s ({} program items)\n", t2 - t1, items);
  fmt::print("  to simulator program:   {:8.2f} CPU-s\n", t3 - t2);
  fmt::print("  simulate:               {:8.2f} CPU-s ({} work items, {} messages; {} cycles = {:.3f} ms)\n",
             s.host_cpu_seconds, s.results["work_items"].get<std::uint64_t>(), s.results["messages"].get<std::uint64_t>(),
             s.results["total_cycles"].get<std::uint64_t>(), s.results["total_seconds"].get<double>() * 1e3);
  fmt::print("compile time: {:.2f} s (goal: under 60 s on this machine)\n", t2 - t0);
}

}  // namespace tessera::cli
