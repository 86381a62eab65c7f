#pragma once
// The hardware description: one typed struct per component, parsed and validated in config.cpp
// (the only place that reads config JSON). Units are in the field names; docs/config.md lists
// every field with its default.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "sim/common/json_reader.h"
#include "sim/common/types.h"

namespace tessera::sim {

// Vector-unit operations; cycles per group of `lanes` elements are configurable.
enum class VecOp : std::uint8_t { Add, Sub, Mul, Div, Max, Relu, Gelu, Exp, Copy, Rsqrt, Min, Pow, Sigmoid, Tanh, Erf, Sqrt };
constexpr int kVecOps = 16;
const char* vec_op_name(VecOp op);
std::optional<VecOp> parse_vec_op(const std::string& name);

struct MatrixUnitConfig {
  std::uint32_t tile_m = 16, tile_n = 4, tile_k = 16;  // one block product per tile
  std::map<Dtype, std::uint32_t> macs_per_cycle;       // dtypes absent here are unsupported
  Cycles pipeline_fill_cycles = 8;                     // once per matmul: fill + drain
  Cycles issue_cycles = 6;                             // once per matmul: set-up of the unit
};

struct VectorUnitConfig {
  std::uint32_t lanes = 8;  // elements per cycle, any dtype
  Cycles issue_cycles = 4;  // once per vector operation
  std::array<Cycles, kVecOps> op_cycles{};  // cycles per lane group, indexed by VecOp
};

struct CoreConfig {
  Bytes sram_bytes = 0;
  double sram_read_bytes_per_cycle = 64;
  double sram_write_bytes_per_cycle = 32;
  MatrixUnitConfig matrix;
  VectorUnitConfig vector;
};

// IPU-style exchange: any core to any core, each core's send and receive port is a bandwidth cap.
struct ExchangeConfig {
  double send_bytes_per_cycle = 4;
  double recv_bytes_per_cycle = 4;
  Cycles latency_cycles = 30;
};

// Level of detail of a network: packets with virtual cut-through (fast, the default) or flits
// with wormhole switching, virtual channels and credits (the reference).
enum class NocModel : std::uint8_t { Packet, Flit };

// 2-D mesh or torus of routers, one core per router, dimension-order (X then Y) routing.
struct MeshConfig {
  NocModel model = NocModel::Packet;
  std::uint32_t rows = 0, cols = 0;
  bool torus = false;
  double link_bytes_per_cycle = 32;
  double ni_bytes_per_cycle = 32;  // core <-> router injection / ejection port
  Cycles link_latency_cycles = 1;
  Cycles router_latency_cycles = 2;
  Bytes packet_bytes = 256;
  Bytes buffer_bytes = 1024;  // packet level: input buffer per router port; whole packets
  std::uint32_t gateway_core = 0;  // where cross-chip traffic leaves and enters the chip
  // flit level: a flit is link_bytes_per_cycle bytes (one per cycle per link)
  std::uint32_t vcs = 4;             // virtual channels per input port
  Bytes vc_buffer_bytes = 0;         // per virtual channel; 0 = 8 flits
  Bytes flit_bytes() const { return static_cast<Bytes>(link_bytes_per_cycle); }
  std::uint32_t vc_buffer_flits() const { return static_cast<std::uint32_t>(vc_buffer_bytes / flit_bytes()); }
};

// A core's DMA engine (asynchronous send/recv/load/store).
struct DmaConfig {
  Cycles issue_cycles = 1;  // core cycles to start an asynchronous transfer
};

struct SyncConfig {
  Cycles latency_cycles = 118;
};

struct OffchipConfig {
  std::uint32_t channels = 1;
  double channel_bytes_per_cycle = 6;
  Cycles latency_cycles = 1330;
  Bytes capacity_bytes = 0;
};

// One dimension of a system of chips (docs/config.md, "system.dimensions"). Chips are addressed
// by coordinates, dimension 0 varying fastest: chip = sum of coordinate[d] * stride[d].
enum class DimensionKind : std::uint8_t { Ring, UnidirectionalRing, FullyConnected, Switch };

struct Dimension {
  DimensionKind kind = DimensionKind::Ring;
  std::uint32_t size = 1;
  std::uint32_t links_per_neighbour = 1;  // parallel links between two neighbours, striped as one
  double link_bytes_per_cycle = 120;      // raw rate of one link
  Cycles link_latency_cycles = 300;
  double link_efficiency = 1.0;           // share of the raw rate that carries payload
  // What the packet engine carries between two neighbours of this dimension.
  double bytes_per_cycle() const { return link_bytes_per_cycle * links_per_neighbour * link_efficiency; }
};

// The accelerator fabric interface of every chip: collective engines inject into it. Its NPU-AFI
// bus is a shared channel each way; each outgoing link has a port buffer in front of it.
struct AfiConfig {
  double bus_bytes_per_cycle = 0;
  Bytes port_buffer_bytes = 0;
};

// The NPU side of a collective (docs/collectives.md, "Engines"): what the endpoint engines
// spend besides the network. Memory is a read channel and a write channel of this rate per
// chip (the share of the NPU's memory bandwidth communication may use); the `cores` engine
// runs its kernels on `cores` cores (SMs) that each move `core_bytes_per_cycle`.
struct EndpointConfig {
  double memory_bytes_per_cycle = 0;
  std::uint32_t cores = 6;
  double core_bytes_per_cycle = 64;
};

// The ACE collectives engine beside each chip's AFI: an SRAM split into a partition per phase
// and a terminal one, FSMs shared out among the phases, ALUs for reductions.
// Which collective's chunks ACE admits first when several are pending on a chip: the one issued
// last (LIFO, the ACE paper's policy: during backpropagation the first layers' gradients, needed
// first by the next forward pass, are issued last) or the one issued first (FIFO).
enum class AceAdmission : std::uint8_t { Lifo, Fifo };

// How the endpoints that hold what arrives in their own buffers (the ideal and ace engines)
// forward a ring step: once the whole message they carry on has arrived (Message), or packet by
// packet, each packet of the next step leaving once the same packet of the message before it
// has arrived and been added (Packet: the ACE paper's "ACE's internal processing unit is the
// packet"). The baseline on cores always works on whole messages in memory.
enum class Forwarding : std::uint8_t { Message, Packet };

struct AceConfig {
  Bytes sram_bytes = Bytes{4} << 20;
  std::uint32_t fsms = 16;
  std::uint32_t alus = 4;
  double alu_bytes_per_cycle = 64;
  AceAdmission admission = AceAdmission::Lifo;
};

// A GPU-like NPU for training runs (`tessera train`): a layer takes the longer of its FLOPs at
// its share of the SMs and its bytes at its share of the memory bandwidth (a roofline).
struct NpuConfig {
  std::uint32_t sms = 80;
  double fp16_flops_per_cycle = 0;  // all SMs
  double memory_bytes_per_cycle = 0;
};

// How several chips are joined. Cores of all chips form one global index space.
struct SystemConfig {
  std::uint32_t chips = 1;
  std::vector<Dimension> dimensions;  // sizes multiply to `chips`; empty for one chip
  Forwarding collective_forwarding = Forwarding::Message;
  Cycles sync_latency_cycles = 1330;  // barrier over cores of more than one chip
  Bytes packet_bytes = 1024;           // inter-chip packet
  Bytes buffer_bytes = 8192;           // input buffer per inter-chip link
  // Level of detail of the links between chips and the AFIs (collectives run alone).
  NocModel model = NocModel::Packet;
  Bytes flit_bytes = 64;   // flit level: a flit of every channel
  std::uint32_t vcs = 2;   // flit level: virtual channels per dateline class of every buffer
  std::optional<AfiConfig> afi;
  std::optional<EndpointConfig> endpoint;
  std::optional<AceConfig> ace;
  std::optional<NpuConfig> npu;

  // Chips between two neighbours along dimension d.
  std::uint32_t stride(std::size_t d) const {
    std::uint32_t s = 1;
    for (std::size_t i = 0; i < d; ++i) s *= dimensions[i].size;
    return s;
  }
  std::uint32_t coordinate(std::uint32_t chip, std::size_t d) const { return chip / stride(d) % dimensions[d].size; }
  // The chip whose coordinates are those of `chip` but with `x` along dimension d.
  std::uint32_t with_coordinate(std::uint32_t chip, std::size_t d, std::uint32_t x) const {
    return chip - coordinate(chip, d) * stride(d) + x * stride(d);
  }
};

struct ChipConfig {
  std::uint32_t cores = 0;
  CoreConfig core;
  std::optional<ExchangeConfig> exchange;  // exactly one of exchange / mesh
  std::optional<MeshConfig> mesh;
  SyncConfig sync;
  OffchipConfig offchip;
  DmaConfig dma;
};

struct Config {
  std::string name;
  std::string description;
  // Hash of every hardware field (not name or description): what a calibration was fitted on.
  std::string fingerprint;
  double clock_ghz = 1.0;
  ChipConfig chip;
  SystemConfig system;

  std::uint32_t total_cores() const { return chip.cores * system.chips; }
  std::uint32_t chip_of(std::uint32_t core) const { return core / chip.cores; }
};

Config parse_config(const Json& json, const std::string& what);
Config load_config(const std::string& path);

}  // namespace tessera::sim
