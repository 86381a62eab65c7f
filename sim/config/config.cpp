#include "sim/config/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "sim/common/error.h"
#include "sim/common/hash.h"

namespace tessera::sim {

namespace {

constexpr const char* kVecOpNames[kVecOps] = {"add",  "sub",  "mul", "div", "max",     "relu", "gelu", "exp",
                                              "copy", "rsqrt", "min", "pow", "sigmoid", "tanh", "erf",  "sqrt"};
// Default cycles per lane group: simple ALU ops issue every cycle, transcendental ones take a
// short microcoded sequence (assumption; calibrate against the target).
constexpr Cycles kDefaultVecCycles[kVecOps] = {1, 1, 1, 4, 1, 1, 8, 4, 1, 4, 1, 8, 8, 8, 8, 4};

void require(bool ok, const JsonReader& r, const std::string& key, const std::string& msg) {
  if (!ok) r.fail(key, msg);
}

// A rate (bytes or FLOPs per cycle) or a latency: bounded so that cycle counts stay far from
// overflow (a rate of 1e-20 bytes per cycle made transfers of a few bytes wrap round to nothing).
constexpr double kMinRate = 1e-6, kMaxRate = 1e12;
constexpr std::uint64_t kMaxLatencyCycles = 1000000000;

double rate(const JsonReader& r, const std::string& key, std::optional<double> def = {}) {
  const double v = def ? r.positive(key, *def) : r.positive(key);
  require(v >= kMinRate && v <= kMaxRate, r, key, fmt::format("expected {:g} .. {:g} per cycle, got {:g}", kMinRate, kMaxRate, v));
  return v;
}

std::uint64_t cycles(const JsonReader& r, const std::string& key, std::optional<std::uint64_t> def = {}) {
  const std::uint64_t v = def ? r.u64(key, *def) : r.u64(key);
  require(v <= kMaxLatencyCycles, r, key, fmt::format("expected at most {} cycles, got {}", kMaxLatencyCycles, v));
  return v;
}

MatrixUnitConfig parse_matrix(const JsonReader& r) {
  MatrixUnitConfig m;
  auto tile = [&](const char* key, std::uint32_t def) {
    const std::uint64_t v = r.u64(key, def);
    require(v >= 1 && v <= 4096, r, key, "expected 1..4096");
    return static_cast<std::uint32_t>(v);
  };
  m.tile_m = tile("tile_m", m.tile_m);
  m.tile_n = tile("tile_n", m.tile_n);
  m.tile_k = tile("tile_k", m.tile_k);
  JsonReader macs = r.object("macs_per_cycle");
  const Json& obj = r.value("macs_per_cycle");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    Dtype d;
    if (!parse_dtype(it.key(), d))
      macs.fail(it.key(), "not a dtype (expected int8, fp16, fp32 or int32)");
    std::uint64_t v = macs.u64(it.key());
    require(v >= 1 && v <= (1u << 24), macs, it.key(), "expected 1..16777216 MACs per cycle");
    m.macs_per_cycle[d] = static_cast<std::uint32_t>(v);
  }
  if (m.macs_per_cycle.empty()) r.fail("macs_per_cycle", "expected at least one dtype");
  m.pipeline_fill_cycles = cycles(r, "pipeline_fill_cycles", m.pipeline_fill_cycles);
  m.issue_cycles = cycles(r, "issue_cycles", m.issue_cycles);
  r.reject_unknown_keys();
  return m;
}

VectorUnitConfig parse_vector(const JsonReader& r) {
  VectorUnitConfig v;
  v.lanes = static_cast<std::uint32_t>(r.u64("lanes", v.lanes));
  require(v.lanes >= 1 && v.lanes <= 65536, r, "lanes", "expected 1..65536 lanes");
  v.issue_cycles = cycles(r, "issue_cycles", v.issue_cycles);
  for (int i = 0; i < kVecOps; ++i) v.op_cycles[i] = kDefaultVecCycles[i];
  if (r.has("op_cycles")) {
    JsonReader ops = r.object("op_cycles");
    const Json& obj = r.value("op_cycles");
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      auto op = parse_vec_op(it.key());
      if (!op) ops.fail(it.key(), "not a vector operation (expected add, sub, mul, div, max, "
                                  "relu, gelu, exp, copy, rsqrt, min, pow, sigmoid, tanh, erf or sqrt)");
      std::uint64_t c = ops.u64(it.key());
      require(c >= 1, ops, it.key(), "expected at least 1 cycle");
      v.op_cycles[static_cast<int>(*op)] = c;
    }
  }
  r.reject_unknown_keys();
  return v;
}

CoreConfig parse_core(const JsonReader& r) {
  CoreConfig c;
  c.sram_bytes = r.u64("sram_bytes");
  require(c.sram_bytes > 0, r, "sram_bytes", "expected a positive size");
  c.sram_read_bytes_per_cycle = rate(r, "sram_read_bytes_per_cycle", c.sram_read_bytes_per_cycle);
  c.sram_write_bytes_per_cycle =
      rate(r, "sram_write_bytes_per_cycle", c.sram_write_bytes_per_cycle);
  c.matrix = parse_matrix(r.object("matrix"));
  static const Json kEmpty = Json::object();
  c.vector = parse_vector(r.has("vector") ? r.object("vector")
                                          : JsonReader(kEmpty, r.what(), r.where("vector"), 'c'));
  // Design rule: the vector unit is never starved by the scratchpad (two 4-byte operands in and
  // one out per lane per cycle), so vector timing is purely lane-bound. Say so if a config breaks it.
  if (2.0 * c.vector.lanes * 4 > c.sram_read_bytes_per_cycle)
    r.fail("sram_read_bytes_per_cycle",
           fmt::format("must be at least 8 x vector.lanes = {} so the vector unit can read two "
                       "32-bit operands per lane per cycle",
                       8 * c.vector.lanes));
  if (4.0 * c.vector.lanes > c.sram_write_bytes_per_cycle)
    r.fail("sram_write_bytes_per_cycle",
           fmt::format("must be at least 4 x vector.lanes = {}", 4 * c.vector.lanes));
  r.reject_unknown_keys();
  return c;
}

ExchangeConfig parse_exchange(const JsonReader& r) {
  ExchangeConfig e;
  e.send_bytes_per_cycle = rate(r, "send_bytes_per_cycle");
  e.recv_bytes_per_cycle = rate(r, "recv_bytes_per_cycle");
  e.latency_cycles = cycles(r, "latency_cycles");
  r.reject_unknown_keys();
  return e;
}

NocModel parse_model(const JsonReader& r) {
  const std::string model = r.string("model", "packet");
  if (model == "packet") return NocModel::Packet;
  if (model == "flit") return NocModel::Flit;
  r.fail("model", fmt::format("unknown model \"{}\" (expected \"packet\" or \"flit\")", model));
}

// Flit level: one flit per link per cycle, `vcs` virtual channels of whole flits per input port.
void parse_flit_fields(const JsonReader& r, MeshConfig& m) {
  m.vcs = static_cast<std::uint32_t>(r.u64("vcs", m.vcs));
  require(m.vcs >= 1 && m.vcs <= 64, r, "vcs", "expected 1..64 virtual channels");
  if (m.model == NocModel::Flit && m.torus)
    require(m.vcs >= 2, r, "vcs", "a torus needs at least 2 virtual channels (dateline classes)");
  if (m.model != NocModel::Flit) {
    if (r.has("vc_buffer_bytes")) r.value("vc_buffer_bytes");  // accepted, used at flit level only
    return;
  }
  const double flit = m.link_bytes_per_cycle;
  if (flit != static_cast<double>(static_cast<Bytes>(flit)) || flit < 1)
    r.fail("link_bytes_per_cycle", fmt::format("the flit level carries one flit per cycle per link, so "
                                               "link_bytes_per_cycle (the flit size) must be a whole "
                                               "number of bytes, got {}", flit));
  m.vc_buffer_bytes = r.u64("vc_buffer_bytes", 8 * m.flit_bytes());
  require(m.vc_buffer_bytes >= m.flit_bytes(), r, "vc_buffer_bytes",
          fmt::format("must hold at least one flit ({} bytes)", m.flit_bytes()));
  require(m.link_latency_cycles + m.router_latency_cycles >= 1, r, "router_latency_cycles",
          "the flit level needs link_latency_cycles + router_latency_cycles >= 1");
}

MeshConfig parse_mesh(const JsonReader& r, std::uint32_t cores) {
  MeshConfig m;
  m.model = parse_model(r);
  m.rows = static_cast<std::uint32_t>(r.u64("rows"));
  m.cols = static_cast<std::uint32_t>(r.u64("cols"));
  if (std::uint64_t(m.rows) * m.cols != cores)
    r.fail("rows", fmt::format("rows x cols = {} x {} = {} but chip.cores is {}", m.rows, m.cols,
                               std::uint64_t(m.rows) * m.cols, cores));
  m.torus = r.boolean("torus", m.torus);
  m.link_bytes_per_cycle = rate(r, "link_bytes_per_cycle");
  m.ni_bytes_per_cycle = rate(r, "ni_bytes_per_cycle", m.link_bytes_per_cycle);
  m.link_latency_cycles = cycles(r, "link_latency_cycles", m.link_latency_cycles);
  m.router_latency_cycles = cycles(r, "router_latency_cycles", m.router_latency_cycles);
  m.packet_bytes = r.u64("packet_bytes", m.packet_bytes);
  require(m.packet_bytes >= 1 && m.packet_bytes <= (Bytes{1} << 31), r, "packet_bytes", "expected 1 .. 2^31 bytes");
  m.buffer_bytes = r.u64("buffer_bytes", m.buffer_bytes);
  require(m.buffer_bytes >= m.packet_bytes, r, "buffer_bytes",
          fmt::format("must hold at least one packet ({} bytes)", m.packet_bytes));
  m.gateway_core = static_cast<std::uint32_t>(r.u64("gateway_core", 0));
  require(m.gateway_core < cores, r, "gateway_core", fmt::format("expected < {}", cores));
  parse_flit_fields(r, m);
  r.reject_unknown_keys();
  return m;
}

OffchipConfig parse_offchip(const JsonReader& r) {
  OffchipConfig o;
  o.channels = static_cast<std::uint32_t>(r.u64("channels", o.channels));
  require(o.channels >= 1 && o.channels <= 1024, r, "channels", "expected 1..1024");
  o.channel_bytes_per_cycle = rate(r, "channel_bytes_per_cycle");
  o.latency_cycles = cycles(r, "latency_cycles");
  o.capacity_bytes = r.u64("capacity_bytes");
  r.reject_unknown_keys();
  return o;
}

constexpr const char* kDimensionKinds[] = {"ring", "unidirectional_ring", "fully_connected", "switch"};
constexpr std::uint32_t kMaxChips = 4096;
constexpr std::uint32_t kMaxFullyConnected = 64;  // links per chip grow with the size

Dimension parse_dimension(const JsonReader& r) {
  Dimension d;
  const std::string kind = r.string("kind");
  bool known = false;
  for (int k = 0; k < 4; ++k)
    if (kind == kDimensionKinds[k]) {
      d.kind = static_cast<DimensionKind>(k);
      known = true;
    }
  if (!known)
    r.fail("kind", fmt::format("expected \"ring\", \"unidirectional_ring\", \"fully_connected\" or \"switch\", got \"{}\"", kind));
  const std::uint64_t size = r.u64("size");  // checked before it is narrowed
  require(size >= 1 && size <= kMaxChips, r, "size", fmt::format("expected 1..{}", kMaxChips));
  d.size = static_cast<std::uint32_t>(size);
  if (d.kind == DimensionKind::FullyConnected)
    require(d.size <= kMaxFullyConnected, r, "size",
            fmt::format("a fully connected dimension has at most {} chips (use a switch for more)", kMaxFullyConnected));
  const std::uint64_t links = r.u64("links_per_neighbour", 1);
  require(links >= 1 && links <= 64, r, "links_per_neighbour", "expected 1..64");
  d.links_per_neighbour = static_cast<std::uint32_t>(links);
  d.link_bytes_per_cycle = rate(r, "link_bytes_per_cycle");
  d.link_latency_cycles = cycles(r, "link_latency_cycles");
  d.link_efficiency = r.positive("link_efficiency", 1.0);
  require(d.link_efficiency <= 1.0, r, "link_efficiency", "expected a share in (0, 1]");
  r.reject_unknown_keys();
  return d;
}

// A count field: an integer in [1, hi], `def` when absent.
std::uint32_t count(const JsonReader& r, const std::string& key, std::uint32_t def, std::uint32_t hi) {
  const std::uint64_t v = r.u64(key, def);
  require(v >= 1 && v <= hi, r, key, fmt::format("expected 1..{}", hi));
  return static_cast<std::uint32_t>(v);
}

EndpointConfig parse_endpoint(const JsonReader& e) {
  EndpointConfig ep;
  ep.memory_bytes_per_cycle = rate(e, "memory_bytes_per_cycle");
  ep.cores = count(e, "cores", ep.cores, 4096);
  ep.core_bytes_per_cycle = rate(e, "core_bytes_per_cycle", ep.core_bytes_per_cycle);
  e.reject_unknown_keys();
  return ep;
}

AceConfig parse_ace(const JsonReader& a) {
  AceConfig ace;
  ace.sram_bytes = a.u64("sram_bytes", ace.sram_bytes);
  require(ace.sram_bytes >= 1024 && ace.sram_bytes <= (Bytes{1} << 40), a, "sram_bytes", "expected 1 KiB .. 1 TiB");
  ace.fsms = count(a, "fsms", ace.fsms, 1024);
  ace.alus = count(a, "alus", ace.alus, 1024);
  ace.alu_bytes_per_cycle = rate(a, "alu_bytes_per_cycle", ace.alu_bytes_per_cycle);
  const std::string admission = a.string("admission", "lifo");
  if (admission == "fifo") ace.admission = AceAdmission::Fifo;
  else if (admission != "lifo")
    a.fail("admission", fmt::format("unknown admission \"{}\" (expected \"lifo\" or \"fifo\")", admission));
  a.reject_unknown_keys();
  return ace;
}

NpuConfig parse_npu(const JsonReader& n) {
  NpuConfig npu;
  npu.sms = count(n, "sms", npu.sms, 4096);
  npu.fp16_flops_per_cycle = rate(n, "fp16_flops_per_cycle");
  npu.memory_bytes_per_cycle = rate(n, "memory_bytes_per_cycle");
  n.reject_unknown_keys();
  return npu;
}

// The flit level of the links between chips: every buffer splits its bytes per dateline class
// evenly over `vcs` virtual channels of whole flits, so each must hold at least one flit.
void parse_system_flit_fields(const JsonReader& r, SystemConfig& s) {
  s.model = parse_model(r);
  s.flit_bytes = r.u64("flit_bytes", std::min<Bytes>(s.flit_bytes, s.packet_bytes));
  require(s.flit_bytes >= 1 && s.flit_bytes <= s.packet_bytes, r, "flit_bytes",
          fmt::format("expected 1 .. packet_bytes ({}) bytes", s.packet_bytes));
  s.vcs = static_cast<std::uint32_t>(r.u64("vcs", s.vcs));
  require(s.vcs >= 1 && s.vcs <= 64, r, "vcs", "expected 1..64 virtual channels per dateline class");
  if (s.model != NocModel::Flit) return;
  const auto vc_too_small = [&](Bytes buffer) { return buffer / s.vcs < s.flit_bytes; };
  require(!vc_too_small(s.buffer_bytes), r, "buffer_bytes",
          fmt::format("{} bytes over {} virtual channels is less than a flit ({} bytes) each", s.buffer_bytes, s.vcs,
                      s.flit_bytes));
  if (s.afi)
    require(!vc_too_small(s.afi->port_buffer_bytes), r, "afi",
            fmt::format("afi.port_buffer_bytes ({}) over {} virtual channels is less than a flit ({} bytes) each",
                        s.afi->port_buffer_bytes, s.vcs, s.flit_bytes));
}

SystemConfig parse_system(const JsonReader& r) {
  SystemConfig s;
  for (const char* old : {"topology", "link_bytes_per_cycle", "link_latency_cycles"})
    if (r.present(old))  // a key of older configs: not listed among the known ones
      r.fail(old, "replaced by system.dimensions: a list of {\"kind\", \"size\", \"link_bytes_per_cycle\", "
                  "\"link_latency_cycles\", ...} (docs/config.md)");
  std::uint64_t product = 1;
  if (r.has("dimensions")) {
    const Json& dims = r.value("dimensions");
    if (!dims.is_array() || dims.empty()) r.fail("dimensions", "expected a non-empty list of dimensions");
    for (std::size_t i = 0; i < dims.size(); ++i) {
      s.dimensions.push_back(parse_dimension(JsonReader(dims[i], r.what(), fmt::format("{}[{}]", r.where("dimensions"), i), 'c')));
      product *= s.dimensions.back().size;
      require(product <= kMaxChips, r, "dimensions", fmt::format("the sizes multiply to more than {} chips", kMaxChips));
    }
  }
  const std::uint64_t chips = r.u64("chips", product);
  require(chips >= 1 && chips <= kMaxChips, r, "chips", fmt::format("expected 1..{}", kMaxChips));
  s.chips = static_cast<std::uint32_t>(chips);
  if (s.chips != product)
    r.fail("chips", s.dimensions.empty()
                        ? fmt::format("{} chips need system.dimensions saying how they are joined", s.chips)
                        : fmt::format("{} chips, but the sizes of system.dimensions multiply to {}", s.chips, product));
  s.sync_latency_cycles = cycles(r, "sync_latency_cycles", s.sync_latency_cycles);
  s.packet_bytes = r.u64("packet_bytes", s.packet_bytes);
  require(s.packet_bytes >= 1 && s.packet_bytes <= (Bytes{1} << 31), r, "packet_bytes", "expected 1 .. 2^31 bytes");
  s.buffer_bytes = r.u64("buffer_bytes", s.buffer_bytes);
  require(s.buffer_bytes >= s.packet_bytes, r, "buffer_bytes",
          fmt::format("must hold at least one packet ({} bytes)", s.packet_bytes));
  if (r.has("afi")) {
    JsonReader a = r.object("afi");
    AfiConfig afi;
    afi.bus_bytes_per_cycle = rate(a, "bus_bytes_per_cycle");
    afi.port_buffer_bytes = a.u64("port_buffer_bytes");
    require(afi.port_buffer_bytes >= s.packet_bytes, a, "port_buffer_bytes",
            fmt::format("must hold at least one packet ({} bytes)", s.packet_bytes));
    a.reject_unknown_keys();
    s.afi = afi;
  }
  const std::string forwarding = r.string("collective_forwarding", "message");
  if (forwarding == "packet") s.collective_forwarding = Forwarding::Packet;
  else if (forwarding != "message")
    r.fail("collective_forwarding",
           fmt::format("unknown forwarding \"{}\" (expected \"message\" or \"packet\")", forwarding));
  if (r.has("endpoint")) s.endpoint = parse_endpoint(r.object("endpoint"));
  if (r.has("ace")) s.ace = parse_ace(r.object("ace"));
  if (r.has("npu")) s.npu = parse_npu(r.object("npu"));
  parse_system_flit_fields(r, s);
  r.reject_unknown_keys();
  return s;
}

}  // namespace

const char* vec_op_name(VecOp op) { return kVecOpNames[static_cast<int>(op)]; }

std::optional<VecOp> parse_vec_op(const std::string& name) {
  for (int i = 0; i < kVecOps; ++i)
    if (name == kVecOpNames[i]) return static_cast<VecOp>(i);
  return std::nullopt;
}

namespace {
// FNV-1a over the canonical text of every hardware field (object keys sorted; name and
// description left out, so a renamed copy of a config keeps its calibration).
std::string fingerprint(const Json& json) {
  Json hw = json;
  hw.erase("name");
  hw.erase("description");
  return fnv1a_hex(hw.dump());
}
}  // namespace

Config parse_config(const Json& json, const std::string& what) {
  JsonReader r(json, what, "", 'c');
  Config c;
  c.name = r.string("name");
  c.description = r.string("description", "");
  c.clock_ghz = r.positive("clock_ghz");
  require(c.clock_ghz >= 1e-3 && c.clock_ghz <= 1e3, r, "clock_ghz", fmt::format("expected 0.001 .. 1000 GHz, got {:g}", c.clock_ghz));
  JsonReader chip = r.object("chip");
  c.chip.cores = static_cast<std::uint32_t>(chip.u64("cores"));
  require(c.chip.cores >= 1 && c.chip.cores <= (1u << 20), chip, "cores", "expected 1..1048576");
  c.chip.core = parse_core(chip.object("core"));
  if (chip.has("exchange") == chip.has("mesh"))
    chip.fail("exchange", "exactly one of chip.exchange and chip.mesh must be given");
  if (chip.has("exchange")) c.chip.exchange = parse_exchange(chip.object("exchange"));
  if (chip.has("mesh")) c.chip.mesh = parse_mesh(chip.object("mesh"), c.chip.cores);
  {
    JsonReader s = chip.object("sync");
    c.chip.sync.latency_cycles = cycles(s, "latency_cycles");
    s.reject_unknown_keys();
  }
  c.chip.offchip = parse_offchip(chip.object("offchip"));
  if (chip.has("dma")) {
    JsonReader d = chip.object("dma");
    c.chip.dma.issue_cycles = cycles(d, "issue_cycles", c.chip.dma.issue_cycles);
    d.reject_unknown_keys();
  }
  chip.reject_unknown_keys();
  if (r.has("system")) c.system = parse_system(r.object("system"));
  r.reject_unknown_keys();
  if (std::uint64_t{c.chip.cores} * c.system.chips > (std::uint64_t{1} << 26))
    r.fail("system", fmt::format("{} chips of {} cores is more than 2^26 cores in all", c.system.chips, c.chip.cores));
  if (c.chip.mesh && c.system.chips > 1) {
    if (c.chip.mesh->model == NocModel::Flit)
      r.fail("chip", "chip.mesh.model \"flit\" is built for a single chip; a system of several "
                     "chips runs at packet level (set system.chips to 1 or model to \"packet\")");
    if (c.system.packet_bytes > c.chip.mesh->buffer_bytes)
      r.fail("system", fmt::format("system.packet_bytes ({}) must fit in a mesh router's input "
                                   "buffer (chip.mesh.buffer_bytes = {}): cross-chip packets cross "
                                   "the mesh whole", c.system.packet_bytes, c.chip.mesh->buffer_bytes));
  }
  c.fingerprint = fingerprint(json);
  return c;
}

Config load_config(const std::string& path) { return parse_config(read_json_file(path), path); }

}  // namespace tessera::sim
