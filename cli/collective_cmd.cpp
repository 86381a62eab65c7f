#include "cli/collective_cmd.h"
#include "cli/validators.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/compile_cmd.h"
#include "sim/common/error.h"

namespace tessera::cli {

void add_collective_options(CLI::App* cmd, CollectiveArgs& a) {
  cmd->add_option("--config", a.config, "a system of chips with an AFI (system.dimensions, system.afi; docs/config.md)")
      ->required();
  cmd->add_option("--op", a.op, "allreduce, reducescatter, allgather or alltoall")->capture_default_str();
  cmd->add_option("--bytes", a.bytes, "bytes per chip (e.g. 64MiB; all-gather: the gathered result)")
      ->transform(::tessera::cli::size_value())
      ->required();
  cmd->add_option("--algorithm", a.algorithm, "ring (one ring over all chips: the system's one dimension, both "
                                              "ways if a bidirectional ring; else chips in index order), direct, "
                                              "hierarchical (one phase per dimension: the torus all-reduce) or "
                                              "halving-doubling (a power-of-two number of chips)")
      ->capture_default_str();
  cmd->add_option("--chunk-bytes", a.chunk_bytes, "pipelining unit (0: one chunk); see --chunks-in-flight")
      ->transform(::tessera::cli::size_value())
      ->capture_default_str();
  cmd->add_option("--chunks-in-flight", a.chunks_in_flight, "a chip starts a chunk once it is done with the chunk "
                                                            "this many before it (0: every chunk at once)")
      ->capture_default_str();
  cmd->add_option("--engine", a.engine, "ideal (a message handled in one cycle), cores (kernels on cores through "
                                        "memory: the baseline) or ace (the collectives engine beside the AFI)")
      ->capture_default_str();
  cmd->add_option("--memory-gb-per-s", a.memory_gb_per_s, "memory bandwidth the collective may use, each of read "
                                                          "and write (sets system.endpoint.memory_bytes_per_cycle)")
      ->check(::tessera::cli::positive())->check(CLI::Range(1e-3, 1e6));  // GB/s: 1 MB/s .. 1 PB/s
  cmd->add_option("--cores", a.cores, "cores running the cores engine's kernels (system.endpoint.cores)")
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--ace-sram-bytes", a.ace_sram_bytes, "ACE SRAM (system.ace.sram_bytes), e.g. 4MiB; 0: the config's")
      ->transform(::tessera::cli::size_value());
  cmd->add_option("--ace-fsms", a.ace_fsms, "ACE FSMs (system.ace.fsms)")->check(CLI::Range(1u, 1024u));
  cmd->add_option("--packet-bytes", a.packet_bytes, "packet size on the chip links (system.packet_bytes); link and "
                                                    "AFI port buffers smaller than two packets grow to two. A packet "
                                                    "as large as a message simulates at message granularity; 0: the config's")
      ->transform(::tessera::cli::size_value());
  cmd->add_option("--model", a.model, "level of detail of the chip links and AFIs, overriding system.model: packet "
                                      "(virtual cut-through, fast) or flit (wormhole, virtual channels, credits)");
  cmd->add_option("--forwarding", a.forwarding, "how the ideal and ace engines forward a ring step, overriding "
                                                "system.collective_forwarding: message (once the whole message "
                                                "arrived) or packet (packet by packet)")
      ->check(CLI::IsMember({"message", "packet"}));
  cmd->add_option("--out", a.out, "results JSON")->check(::tessera::cli::writable_path());
}

namespace {
// The command line's overrides of the endpoint and ACE parts, checked as the config's are.
void override_parts(sim::Config& cfg, const CollectiveArgs& a) {
  if (a.memory_gb_per_s > 0) {
    if (!cfg.system.endpoint) cfg.system.endpoint = sim::EndpointConfig{};
    cfg.system.endpoint->memory_bytes_per_cycle = a.memory_gb_per_s / cfg.clock_ghz;
  }
  if (a.cores > 0) {
    if (!cfg.system.endpoint)
      throw Error(fmt::format("--cores: config {} has no system.endpoint; give --memory-gb-per-s too", cfg.name));
    cfg.system.endpoint->cores = a.cores;
  }
  if ((a.ace_sram_bytes > 0 || a.ace_fsms > 0) && !cfg.system.ace) cfg.system.ace = sim::AceConfig{};
  if (a.ace_sram_bytes > 0) {
    if (a.ace_sram_bytes < 1024 || a.ace_sram_bytes > (Bytes{1} << 40))
      throw Error(fmt::format("--ace-sram-bytes {}: expected 1 KiB .. 1 TiB (as system.ace.sram_bytes)", a.ace_sram_bytes));
    cfg.system.ace->sram_bytes = a.ace_sram_bytes;
  }
  if (a.ace_fsms > 0) cfg.system.ace->fsms = a.ace_fsms;
  if (!a.forwarding.empty())
    cfg.system.collective_forwarding = a.forwarding == "packet" ? sim::Forwarding::Packet : sim::Forwarding::Message;
  if (a.packet_bytes > 0) {
    if (a.packet_bytes > (std::uint64_t{1} << 31)) throw Error("--packet-bytes: expected 1 .. 2^31 bytes");
    sim::SystemConfig& s = cfg.system;
    s.packet_bytes = a.packet_bytes;
    const auto grow = [&](Bytes& b, const char* what) {
      if (b >= 2 * a.packet_bytes) return;
      fmt::print("--packet-bytes {}: {} grows from {} to {} bytes (two packets)\n", a.packet_bytes, what, b,
                 2 * a.packet_bytes);
      b = 2 * a.packet_bytes;
    };
    grow(s.buffer_bytes, "system.buffer_bytes");
    if (s.afi) grow(s.afi->port_buffer_bytes, "system.afi.port_buffer_bytes");
    if (s.model == sim::NocModel::Flit && s.flit_bytes > s.packet_bytes)
      throw Error(fmt::format("--packet-bytes {}: smaller than a flit (system.flit_bytes = {})", s.packet_bytes,
                              s.flit_bytes));
    // The flit level keeps every buffer's flits: buffers of two 2 GiB packets asked for 21 GiB
    // of host memory on ace-torus-64 before failing. 1 MiB packets are more than any link's.
    if (s.model == sim::NocModel::Flit && s.packet_bytes > (Bytes{1} << 20))
      throw Error(fmt::format("--packet-bytes {}: at most 1 MiB at the flit level (it holds every buffered flit)",
                              s.packet_bytes));
  }
}

// The config with system.model set to `model` (when given) before it is checked.
sim::Config load_at_level(const std::string& path, const std::string& model) {
  Json j = read_json_file(path);
  if (!model.empty()) {
    if (model != "packet" && model != "flit")
      throw Error(fmt::format("--model: unknown model \"{}\" (expected packet or flit)", model));
    if (!j.contains("system"))
      throw Error(fmt::format("--model: config {} has no system section (a system of chips)", path));
    j["system"]["model"] = model;
  }
  return sim::parse_config(j, path);
}
}  // namespace

int collective_cmd(const CollectiveArgs& a) {
  sim::Config cfg = load_at_level(a.config, a.model);
  override_parts(cfg, a);
  sim::CollectiveSpec spec;
  spec.op = sim::parse_collective_op(a.op);
  spec.algorithm = sim::parse_collective_algorithm(a.algorithm);
  spec.bytes = a.bytes;
  spec.chunk_bytes = a.chunk_bytes;
  spec.engine = a.engine;
  spec.chunks_in_flight = a.chunks_in_flight;
  const sim::CollectiveResult r = sim::run_collective(cfg, spec);
  const double us = double(r.cycles) / (cfg.clock_ghz * 1e3);
  const bool flit = cfg.system.model == sim::NocModel::Flit;
  fmt::print("{} of {} bytes on {} ({} chips, {} level), {} algorithm, {} engine, chunks of {} bytes, {}\n", a.op,
             a.bytes, cfg.name, cfg.system.chips, flit ? "flit" : "packet", a.algorithm, a.engine,
             spec.chunk_bytes ? std::min<std::uint64_t>(spec.chunk_bytes, a.bytes) : a.bytes,
             a.engine == "ace"    ? std::string("as many in flight as ACE's FSMs and SRAM admit")
             : a.chunks_in_flight ? fmt::format("{} in flight", a.chunks_in_flight)
                                  : std::string("all in flight"));
  if (cfg.system.collective_forwarding == sim::Forwarding::Packet && a.engine != "cores")
    fmt::print("forwarding by packet: a ring step's packets leave as the same packets of the step before arrive\n");
  fmt::print("time {} cycles = {:.3f} us; {} messages, {} {}-hops\n", r.cycles, us, r.messages, r.packet_hops,
             flit ? "flit" : "packet");
  fmt::print("algorithm bandwidth {:.2f} GB/s, bus bandwidth {:.2f} GB/s, injected per chip {:.2f} GB/s\n",
             r.algorithm_gb_per_s, r.bus_gb_per_s, r.injected_gb_per_s);
  const auto [lo, hi] = std::minmax_element(r.sent_bytes.begin(), r.sent_bytes.end());
  fmt::print("bytes sent per chip: {} .. {} ({:.4f} .. {:.4f} x bytes)\n", *lo, *hi, double(*lo) / a.bytes,
             double(*hi) / a.bytes);
  if (a.engine != "ideal") {
    const auto [rlo, rhi] = std::minmax_element(r.memory_read_bytes.begin(), r.memory_read_bytes.end());
    const auto [wlo, whi] = std::minmax_element(r.memory_write_bytes.begin(), r.memory_write_bytes.end());
    fmt::print("memory per chip: read {} .. {} ({:.4f} .. {:.4f} x bytes), written {} .. {} ({:.4f} .. {:.4f} x bytes)\n",
               *rlo, *rhi, double(*rlo) / a.bytes, double(*rhi) / a.bytes, *wlo, *whi, double(*wlo) / a.bytes,
               double(*whi) / a.bytes);
  }
  if (a.engine == "ace")
    fmt::print("ace: {} chunk completions out of order, {} cycles waited for an FSM or partition room in all\n",
               r.chunks_out_of_order, r.admission_wait_cycles);
  if (!r.link_utilization.empty()) {
    double sum = 0, top = 0;
    for (const auto& [name, u] : r.link_utilization) {
      sum += u;
      top = std::max(top, u);
    }
    fmt::print("chip links: {} in use, busy {:.1f}% on average, {:.1f}% at most\n", r.link_utilization.size(),
               100 * sum / double(r.link_utilization.size()), 100 * top);
  }
  if (!a.out.empty()) {
    write_json(a.out, sim::collective_json(cfg, spec, r));
    fmt::print("results written to {}\n", a.out);
  }
  return 0;
}

}  // namespace tessera::cli
