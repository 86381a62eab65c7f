#pragma once
// Small configs and programs for tests, built in code so every number is visible in the test.
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "sim/common/json_reader.h"
#include "sim/config/config.h"
#include "sim/program/program.h"
#include "sim/simulate.h"

namespace tessera::test {

// An exchange chip: 4 B/cycle ports, 30-cycle exchange latency, 100-cycle barrier, one 8 B/cycle
// off-chip channel with 100 cycles latency; matrix unit as ipu-mk2; vector unit with no issue
// cost and 1 cycle per 8 lanes, so `copy` of 8*n elements is a delay of exactly n cycles.
inline Json exchange_config(std::uint32_t cores = 8) {
  Json c = Json::parse(R"({
    "name": "test-exchange", "clock_ghz": 1.0,
    "chip": {
      "cores": 8,
      "core": {
        "sram_bytes": 65536, "sram_read_bytes_per_cycle": 64, "sram_write_bytes_per_cycle": 32,
        "matrix": {"tile_m": 16, "tile_n": 4, "tile_k": 16, "macs_per_cycle": {"fp16": 64},
                   "pipeline_fill_cycles": 8, "issue_cycles": 6},
        "vector": {"lanes": 8, "issue_cycles": 0}
      },
      "exchange": {"send_bytes_per_cycle": 4, "recv_bytes_per_cycle": 4, "latency_cycles": 30},
      "sync": {"latency_cycles": 100},
      "offchip": {"channels": 1, "channel_bytes_per_cycle": 8, "latency_cycles": 100,
                  "capacity_bytes": 1048576}
    }
  })");
  c["chip"]["cores"] = cores;
  return c;
}

// Chips of exchange_config(2) joined by `dimensions`, with what collective engines need: an AFI
// (64 B/cycle bus, 4 KiB port buffers), 256-byte packets and 4 KiB link buffers, an endpoint
// (memory 32 B/cycle each way, one core of 16 B/cycle) and an ACE of 1 MiB with 4 FSMs.
inline Json collective_system(Json dimensions) {
  Json c = exchange_config(2);
  c["system"] = {{"dimensions", std::move(dimensions)},
                 {"packet_bytes", 256},
                 {"buffer_bytes", 4096},
                 {"afi", {{"bus_bytes_per_cycle", 64}, {"port_buffer_bytes", 4096}}},
                 {"endpoint", {{"memory_bytes_per_cycle", 32}, {"cores", 1}, {"core_bytes_per_cycle", 16}}},
                 {"ace", {{"sram_bytes", 1 << 20}, {"fsms", 4}}}};
  return c;
}

// A 1-row (or rows x cols) mesh: 32 B/cycle links and ports, 256-byte packets (8 cycles per
// hop), link latency 1, router latency 2, `buffer_bytes` per router input.
inline Json mesh_config(std::uint32_t rows, std::uint32_t cols, std::uint64_t buffer_bytes = 1024,
                        bool torus = false) {
  Json c = exchange_config(rows * cols);
  c["name"] = "test-mesh";
  c["chip"].erase("exchange");
  c["chip"]["mesh"] = {{"rows", rows}, {"cols", cols}, {"torus", torus},
                       {"link_bytes_per_cycle", 32}, {"ni_bytes_per_cycle", 32},
                       {"link_latency_cycles", 1}, {"router_latency_cycles", 2},
                       {"packet_bytes", 256}, {"buffer_bytes", buffer_bytes}};
  return c;
}

// Program builder: items per core, appended in order.
struct ProgramBuilder {
  Json cores = Json::array();
  Json groups = Json::object();
  Json tensors = Json::array();

  Json& core(std::uint32_t id) {
    for (auto& c : cores)
      if (c["core"] == id) return c["items"];
    cores.push_back({{"core", id}, {"items", Json::array()}});
    return cores.back()["items"];
  }
  ProgramBuilder& alloc(std::uint32_t c, const std::string& b, std::uint64_t bytes) {
    core(c).push_back({{"op", "alloc"}, {"buffer", b}, {"bytes", bytes}});
    return *this;
  }
  ProgramBuilder& send(std::uint32_t c, std::uint32_t peer, std::uint64_t bytes, const std::string& b = "buf") {
    core(c).push_back({{"op", "send"}, {"peer", peer}, {"buffer", b}, {"bytes", bytes}});
    return *this;
  }
  ProgramBuilder& recv(std::uint32_t c, std::uint32_t peer, std::uint64_t bytes, const std::string& b = "buf") {
    core(c).push_back({{"op", "recv"}, {"peer", peer}, {"buffer", b}, {"bytes", bytes}});
    return *this;
  }
  ProgramBuilder& sync(std::uint32_t c, const std::string& group = "all") {
    core(c).push_back({{"op", "sync"}, {"group", group}});
    return *this;
  }
  // Exactly `n` cycles on the test configs (copy of 8n elements, 1 cycle per 8 lanes).
  ProgramBuilder& delay(std::uint32_t c, std::uint64_t n) {
    core(c).push_back({{"op", "compute"}, {"kind", "copy"}, {"dtype", "int8"}, {"elements", 8 * n},
                       {"inputs", {"buf"}}, {"output", "buf"}});
    return *this;
  }
  Json json(const std::string& name = "test") const {
    Json p = {{"format", "tessera-program"}, {"version", 1}, {"name", name}, {"cores", cores}};
    if (!groups.empty()) p["groups"] = groups;
    if (!tensors.empty()) p["offchip_tensors"] = tensors;
    return p;
  }
};

inline sim::Config config(const Json& j) { return sim::parse_config(j, "test config"); }

// Simulates and returns the results document.
inline Json run(const Json& cfg_json, const Json& prog_json, const std::string& trace = "") {
  sim::Config cfg = config(cfg_json);
  sim::Program prog = sim::parse_program(prog_json, "test program", cfg);
  sim::SimOptions opt;
  opt.trace_path = trace;
  return sim::simulate(cfg, prog, opt).results;
}

inline std::uint64_t total(const Json& results) { return results["total_cycles"].get<std::uint64_t>(); }
inline std::uint64_t finish(const Json& results, std::uint32_t core) {
  for (const auto& c : results["cores"])
    if (c["core"] == core) return c["finish_cycle"].get<std::uint64_t>();
  return ~0ull;
}

// A two-layer MLP: X[64,96] x W1[96,128], relu, x W2[128,32].
inline ir::Workload mlp_workload() {
  ir::Workload w;
  w.name = "mlp";
  w.add_tensor("X", {64, 96}, ir::TensorRole::Input);
  w.add_tensor("W1", {96, 128}, ir::TensorRole::Weight);
  w.add_tensor("W2", {128, 32}, ir::TensorRole::Weight);
  w.add_op("fc1", "H[m,n] += X[m,k] * W1[k,n]");
  w.add_op("act", "A[m,n] = relu(H[m,n])");
  w.add_op("fc2", "Y[m,n] += A[m,k] * W2[k,n]");
  w.finalize();
  return w;
}

}  // namespace tessera::test
