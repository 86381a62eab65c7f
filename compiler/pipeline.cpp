#include "compiler/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "sim/common/error.h"
#include "sim/simulate.h"

namespace tessera::compiler {

sim::Config one_chip(const sim::Config& cfg) {
  sim::Config c = cfg;
  c.name = cfg.name + " (one chip)";
  c.system = sim::SystemConfig{};
  return c;
}

sim::Config device_config(const sim::Config& cfg, std::uint32_t g) {
  const std::uint32_t chips = cfg.system.chips;
  auto fail = [&](const std::string& why) {
    throw Error(fmt::format("devices of {} chips on config '{}' ({} chips): {}", g, cfg.name, chips, why));
  };
  if (g == 0 || g > chips || chips % g != 0) fail(fmt::format("expected a number of chips per device that divides {}", chips));
  if (g == 1) return one_chip(cfg);
  sim::Config c = cfg;
  c.name = fmt::format("{} (a device of {} chips)", cfg.name, g);
  if (g == chips) return c;
  if (cfg.system.dimensions.size() != 1)
    fail("a device smaller than the system needs a system of one dimension (its chips are consecutive along it)");
  sim::Dimension& d = c.system.dimensions.front();
  if (d.kind == sim::DimensionKind::UnidirectionalRing) fail("a unidirectional ring can only be one device, or one per chip");
  if (d.kind == sim::DimensionKind::Ring && g != 2)
    fail("a device of a ring is 2 chips or the whole ring (a longer segment has no link from its last chip to its first)");
  d.size = g;
  c.system.chips = g;
  return c;
}

namespace {

// The slowest rate a message between chips may meet: the narrowest dimension's link.
double slowest_link_bytes_per_cycle(const sim::Config& cfg) {
  double bw = std::numeric_limits<double>::infinity();
  for (const auto& d : cfg.system.dimensions) bw = std::min(bw, d.bytes_per_cycle());
  return bw;
}

}  // namespace

PlacedModel compile_placed(const ir::Workload& w, const partition::Placement& f, const sim::Config& cfg,
                           const CompileOptions& o, std::uint32_t chips_per_device) {
  if (cfg.system.chips < 2) throw Error(fmt::format("placing '{}' on chips: config '{}' has one chip", w.name, cfg.name));
  const double t0 = sim::process_cpu_seconds();
  PlacedModel m;
  m.workload = w.name;
  m.chips_per_device = chips_per_device;
  const sim::Config device = device_config(cfg, chips_per_device);
  const std::uint32_t cores = device.total_cores();
  m.split = partition::split_workload(w, f, cfg.system.chips / chips_per_device);
  for (std::size_t c = 0; c < m.split.chips.size(); ++c) {
    try {
      m.chips.push_back(compile(m.split.chips[c], device, o));
    } catch (const schedule::DoesNotFit& e) {
      throw ChipFitError(fmt::format("{} {}: {}", chips_per_device == 1 ? "chip" : "device", c, e.what()),
                         static_cast<std::uint32_t>(c));
    }
  }
  m.sent_bytes.assign(m.chips.size(), 0);
  for (const auto& x : m.split.crossings) {
    const ir::Workload& from = m.split.chips[x.from];
    const ir::Workload& to = m.split.chips[x.to];
    lower::ChipTransfer t{x.tensor, from.ops()[static_cast<std::size_t>(from.producer(x.tensor))].name,
                          from.tensor(x.tensor).shape, x.from, x.to,
                          lower::home_views(from, m.chips[x.from].schedule, x.tensor, cores),
                          lower::stripes(to.tensor(x.tensor), cores)};
    m.transfers.push_back(std::move(t));
    m.sent_bytes[x.from] += x.bytes;
  }
  const double bw = slowest_link_bytes_per_cycle(cfg);
  for (std::size_t c = 0; c < m.chips.size(); ++c)
    m.predicted_interval_cycles = std::max(m.predicted_interval_cycles, m.chips[c].schedule.predicted_cycles +
                                                                            static_cast<double>(m.sent_bytes[c]) / bw);
  m.compile_seconds = sim::process_cpu_seconds() - t0;
  return m;
}

lower::Lowered join(const PlacedModel& m, const sim::Config& cfg, std::uint32_t micro_batches) {
  std::vector<const lower::Lowered*> programs;
  for (const auto& c : m.chips) programs.push_back(&c.program);
  const std::string on = m.chips_per_device == 1 ? fmt::format("{} chips", m.chips.size())
                                                : fmt::format("{} devices of {} chips", m.chips.size(), m.chips_per_device);
  return lower::join_chips(programs, m.transfers, cfg, micro_batches,
                           fmt::format("{} on {}, {} micro-batches", m.workload, on, micro_batches), m.chips_per_device);
}

PipelineRun run_pipeline(const PlacedModel& m, const sim::Config& cfg, std::uint32_t micro_batches, bool chip_alone) {
  if (micro_batches < 2) throw Error("a pipeline's interval needs at least 2 micro-batches");
  PipelineRun r;
  r.micro_batches = micro_batches;
  auto cycles = [&](const lower::Lowered& p, const sim::Config& c, double* seconds) {
    const sim::SimOutcome o = sim::simulate(c, p.program(c));
    if (seconds) *seconds += o.host_cpu_seconds;
    return o.results["total_cycles"].get<std::uint64_t>();
  };
  r.latency_cycles = cycles(join(m, cfg, 1), cfg, &r.sim_seconds);
  r.total_cycles = cycles(join(m, cfg, micro_batches), cfg, &r.sim_seconds);
  r.interval_cycles = static_cast<double>(r.total_cycles - std::min(r.total_cycles, r.latency_cycles)) /
                      static_cast<double>(micro_batches - 1);
  r.throughput_per_second = r.interval_cycles > 0 ? cfg.clock_ghz * 1e9 / r.interval_cycles : 0.0;
  if (chip_alone) {
    const sim::Config one = device_config(cfg, m.chips_per_device);
    for (const auto& c : m.chips) r.chip_cycles.push_back(cycles(c.program, one, nullptr));
  }
  return r;
}

}  // namespace tessera::compiler
