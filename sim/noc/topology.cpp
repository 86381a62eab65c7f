#include "sim/noc/topology.h"

#include <fmt/format.h>

#include "sim/noc/mesh_routing.h"

namespace tessera::sim {

namespace {
constexpr std::uint32_t kNone = ~0u;
}  // namespace

NetTopology::NetTopology(const Config& cfg) : cfg_(cfg), chips_(cfg.system.chips) {
  for (std::uint32_t c = 0; c < cfg.system.chips; ++c) {
    if (cfg.chip.exchange) build_exchange(c);
    else build_mesh(c);
  }
  build_chip_links();
}

std::uint32_t NetTopology::add_channel(std::string name, double rate, Cycles latency) {
  channels_.push_back({std::move(name), rate, latency});
  return static_cast<std::uint32_t>(channels_.size() - 1);
}

std::uint32_t NetTopology::add_buffer(Bytes capacity, double fill_bytes_per_cycle) {
  buffers_.push_back({capacity, fill_bytes_per_cycle});
  return static_cast<std::uint32_t>(buffers_.size() - 1);
}

void NetTopology::build_exchange(std::uint32_t chip) {
  const ExchangeConfig& e = *cfg_.chip.exchange;
  const std::uint32_t n = cfg_.chip.cores;
  Chip& ch = chips_[chip];
  ch.first_channel = static_cast<std::uint32_t>(channels_.size());
  for (std::uint32_t i = 0; i < n; ++i)
    add_channel(fmt::format("chip{}.core{}.send", chip, i), e.send_bytes_per_cycle, e.latency_cycles);
  for (std::uint32_t i = 0; i < n; ++i)
    add_channel(fmt::format("chip{}.core{}.recv", chip, i), e.recv_bytes_per_cycle, 0);
  // Cross-chip packets only: a core's outbound queue towards the chip links (fed by its send
  // port) and its inbound queue in front of its receive port (fed by the links into the chip).
  ch.first_buffer = static_cast<std::uint32_t>(buffers_.size());
  for (std::uint32_t i = 0; i < n; ++i) add_buffer(cfg_.system.buffer_bytes, e.send_bytes_per_cycle);
  for (std::uint32_t i = 0; i < n; ++i) add_buffer(cfg_.system.buffer_bytes, cfg_.system.link_bytes_per_cycle);
}

void NetTopology::build_mesh(std::uint32_t chip) {
  const MeshConfig& m = *cfg_.chip.mesh;
  const std::uint32_t nodes = m.rows * m.cols;
  Chip& ch = chips_[chip];
  ch.first_channel = static_cast<std::uint32_t>(channels_.size());
  for (std::uint32_t n = 0; n < nodes; ++n)
    add_channel(fmt::format("chip{}.r{}c{}.inject", chip, n / m.cols, n % m.cols), m.ni_bytes_per_cycle,
                m.router_latency_cycles);
  for (std::uint32_t n = 0; n < nodes; ++n)
    add_channel(fmt::format("chip{}.r{}c{}.eject", chip, n / m.cols, n % m.cols), m.ni_bytes_per_cycle, 0);
  ch.first_buffer = static_cast<std::uint32_t>(buffers_.size());
  for (std::uint32_t n = 0; n < nodes; ++n) add_buffer(m.buffer_bytes, m.ni_bytes_per_cycle);  // from its core
  ch.link.assign(std::size_t(nodes) * 4, kNone);
  ch.link_buf.assign(std::size_t(nodes) * 4, kNone);
  for (std::uint32_t n = 0; n < nodes; ++n)
    for (int d = 0; d < 4; ++d) {
      if (mesh_neighbour(m, n, d) == kNoRouter) continue;
      ch.link[n * 4 + d] = add_channel(fmt::format("chip{}.r{}c{}.{}", chip, n / m.cols, n % m.cols, mesh_dir_name(d)),
                                       m.link_bytes_per_cycle, m.link_latency_cycles + m.router_latency_cycles);
      ch.link_buf[n * 4 + d] = add_buffer(m.buffer_bytes, m.link_bytes_per_cycle);
    }
}

void NetTopology::build_chip_links() {
  const SystemConfig& s = cfg_.system;
  const std::uint32_t n = s.chips;
  chip_link_.assign(std::size_t(n) * n, kNone);
  chip_link_buf_.assign(std::size_t(n) * n, kNone);
  auto add = [&](std::uint32_t a, std::uint32_t b) {
    if (a == b || chip_link_[a * n + b] != kNone) return;
    const std::uint32_t l = add_channel(fmt::format("link.chip{}->chip{}", a, b), s.link_bytes_per_cycle,
                                        s.link_latency_cycles);
    chip_link_[a * n + b] = l;
    chip_link_buf_[a * n + b] = add_buffer(s.buffer_bytes, s.link_bytes_per_cycle);
  };
  for (std::uint32_t a = 0; a < n; ++a) {
    if (s.topology == sim::Topology::FullyConnected) {
      for (std::uint32_t b = 0; b < n; ++b) add(a, b);
    } else {
      add(a, (a + 1) % n);
      add(a, (a + n - 1) % n);
    }
  }
}

// Dateline: a hop that wraps round a torus dimension, and every later hop in that dimension,
// waits in class 1.
void NetTopology::mesh_route(std::uint32_t chip, std::uint32_t from, std::uint32_t to,
                             std::vector<Hop>& out) const {
  const MeshConfig& m = *cfg_.chip.mesh;
  const Chip& ch = chips_[chip];
  std::uint8_t cls = 0;
  int dimension = -1;
  mesh_walk(m, from, to, [&](std::uint32_t node, int d) {
    if (d / 2 != dimension) {
      dimension = d / 2;
      cls = 0;
    }
    if (mesh_wraps(m, node, d)) cls = 1;
    out.push_back({ch.link[node * 4 + d], ch.link_buf[node * 4 + d], cls});
  });
}

void NetTopology::chips_route(std::uint32_t from, std::uint32_t to, std::vector<Hop>& out) const {
  const std::uint32_t n = cfg_.system.chips;
  if (cfg_.system.topology == sim::Topology::FullyConnected) {
    out.push_back({chip_link(from, to), chip_link_buf_[from * n + to], 0});
    return;
  }
  const std::uint32_t fwd = (to + n - from) % n;
  const bool up = fwd <= n - fwd;
  std::uint8_t cls = 0;
  for (std::uint32_t c = from; c != to;) {
    const std::uint32_t next = up ? (c + 1) % n : (c + n - 1) % n;
    if ((up && next == 0) || (!up && c == 0)) cls = 1;  // dateline between chip n-1 and chip 0
    out.push_back({chip_link(c, next), chip_link_buf_[c * n + next], cls});
    c = next;
  }
}

bool NetTopology::route(std::uint32_t src, std::uint32_t dst, std::vector<Hop>& out) const {
  const std::uint32_t cores = cfg_.chip.cores;
  const std::uint32_t sc = src / cores, dc = dst / cores, ls = src % cores, ld = dst % cores;
  const Chip& s = chips_[sc];
  const Chip& d = chips_[dc];
  if (cfg_.chip.exchange) {
    if (sc == dc) {
      out.push_back({s.first_channel + ls, kNoBuffer, 0});
      out.push_back({s.first_channel + cores + ld, kNoBuffer, 0});
      return true;
    }
    out.push_back({s.first_channel + ls, s.first_buffer + ls, 0});
    chips_route(sc, dc, out);
    out.back().buffer = d.first_buffer + cores + ld;  // the last link fills the receiver's queue
    out.back().cls = 0;
    out.push_back({d.first_channel + cores + ld, kNoBuffer, 0});
    return false;
  }
  const std::uint32_t gateway = cfg_.chip.mesh->gateway_core;
  out.push_back({s.first_channel + ls, s.first_buffer + ls, 0});
  if (sc == dc) {
    mesh_route(sc, ls, ld, out);
  } else {
    mesh_route(sc, ls, gateway, out);
    chips_route(sc, dc, out);
    mesh_route(dc, gateway, ld, out);
  }
  out.push_back({d.first_channel + cores + ld, kNoBuffer, 0});
  return false;
}

Bytes NetTopology::packet_bytes(std::uint32_t src, std::uint32_t dst) const {
  const std::uint32_t cores = cfg_.chip.cores;
  if (src / cores != dst / cores) return cfg_.system.packet_bytes;
  return cfg_.chip.mesh ? cfg_.chip.mesh->packet_bytes : 0;  // 0: the whole message
}

}  // namespace tessera::sim
