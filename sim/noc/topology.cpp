#include "sim/noc/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/noc/mesh_routing.h"

namespace tessera::sim {

namespace {
constexpr std::uint32_t kNone = ~0u;
}  // namespace

NetTopology::NetTopology(const Config& cfg, bool with_cores)
    : cfg_(cfg), chips_(cfg.system.chips), with_cores_(with_cores) {
  for (std::uint32_t c = 0; with_cores && c < cfg.system.chips; ++c) {
    if (cfg.chip.exchange) build_exchange(c);
    else build_mesh(c);
  }
  build_chip_links();
  endpoints_ = cfg.total_cores();
  if (cfg.system.afi) build_afi();
}

std::uint32_t NetTopology::add_channel(std::string name, double rate, Cycles latency, bool whole_cycles) {
  channels_.push_back({std::move(name), rate, latency, whole_cycles});
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
    add_channel(fmt::format("chip{}.core{}.send", chip, i), e.send_bytes_per_cycle, e.latency_cycles, true);
  for (std::uint32_t i = 0; i < n; ++i)
    add_channel(fmt::format("chip{}.core{}.recv", chip, i), e.recv_bytes_per_cycle, 0, true);
  // Cross-chip packets only: a core's outbound queue towards the chip links (fed by its send
  // port) and its inbound queue in front of its receive port (fed by the links into the chip).
  ch.first_buffer = static_cast<std::uint32_t>(buffers_.size());
  for (std::uint32_t i = 0; i < n; ++i) add_buffer(cfg_.system.buffer_bytes, e.send_bytes_per_cycle);
  double fastest_link = 0;  // what fills the inbound queues (used only with more than one chip)
  for (const Dimension& d : cfg_.system.dimensions) fastest_link = std::max(fastest_link, d.bytes_per_cycle());
  if (fastest_link == 0) fastest_link = e.recv_bytes_per_cycle;
  for (std::uint32_t i = 0; i < n; ++i) add_buffer(cfg_.system.buffer_bytes, fastest_link);
}

void NetTopology::build_mesh(std::uint32_t chip) {
  const MeshConfig& m = *cfg_.chip.mesh;
  const std::uint32_t nodes = m.rows * m.cols;
  Chip& ch = chips_[chip];
  ch.first_channel = static_cast<std::uint32_t>(channels_.size());
  for (std::uint32_t n = 0; n < nodes; ++n)
    add_channel(fmt::format("chip{}.r{}c{}.inject", chip, n / m.cols, n % m.cols), m.ni_bytes_per_cycle,
                m.router_latency_cycles, true);
  for (std::uint32_t n = 0; n < nodes; ++n)
    add_channel(fmt::format("chip{}.r{}c{}.eject", chip, n / m.cols, n % m.cols), m.ni_bytes_per_cycle, 0, true);
  ch.first_buffer = static_cast<std::uint32_t>(buffers_.size());
  for (std::uint32_t n = 0; n < nodes; ++n) add_buffer(m.buffer_bytes, m.ni_bytes_per_cycle);  // from its core
  ch.link.assign(std::size_t(nodes) * 4, kNone);
  ch.link_buf.assign(std::size_t(nodes) * 4, kNone);
  for (std::uint32_t n = 0; n < nodes; ++n)
    for (int d = 0; d < 4; ++d) {
      if (mesh_neighbour(m, n, d) == kNoRouter) continue;
      ch.link[n * 4 + d] = add_channel(fmt::format("chip{}.r{}c{}.{}", chip, n / m.cols, n % m.cols, mesh_dir_name(d)),
                                       m.link_bytes_per_cycle, m.link_latency_cycles + m.router_latency_cycles, true);
      ch.link_buf[n * 4 + d] = add_buffer(m.buffer_bytes, m.link_bytes_per_cycle);
    }
}

void NetTopology::build_chip_links() {
  const SystemConfig& s = cfg_.system;
  dims_ = s.dimensions.size();
  link_first_.assign(std::size_t{s.chips} * dims_, 0);
  for (std::uint32_t a = 0; a < s.chips; ++a)
    for (std::size_t d = 0; d < dims_; ++d) {
      const Dimension& dim = s.dimensions[d];
      link_first_[a * dims_ + d] = static_cast<std::uint32_t>(links_.size());
      const double rate = dim.bytes_per_cycle();
      auto to_chip = [&](std::uint32_t b) {
        const std::uint32_t c = add_channel(fmt::format("link.chip{}->chip{}", a, b), rate, dim.link_latency_cycles);
        links_.push_back({c, add_buffer(s.buffer_bytes, rate)});
        drives_.push_back(true);
      };
      auto unused = [&](Link l) {  // an entry no message starts on
        links_.push_back(l);
        drives_.push_back(false);
      };
      const std::uint32_t n = dim.size, x = s.coordinate(a, d);
      switch (dim.kind) {
        case DimensionKind::Ring:
          if (n == 1) break;
          to_chip(neighbour(a, d, 1));
          if (n == 2) unused(links_.back());  // the neighbour both ways: one link
          else to_chip(neighbour(a, d, -1));
          break;
        case DimensionKind::UnidirectionalRing:
          if (n > 1) to_chip(neighbour(a, d, 1));
          break;
        case DimensionKind::FullyConnected:
          for (std::uint32_t y = 0; y < n; ++y) {
            if (y == x) unused({});
            else to_chip(s.with_coordinate(a, d, y));
          }
          break;
        case DimensionKind::Switch: {
          const std::uint32_t up = add_channel(fmt::format("switch{}.chip{}.up", d, a), rate, dim.link_latency_cycles);
          links_.push_back({up, add_buffer(s.buffer_bytes, rate)});  // the switch's input buffer
          drives_.push_back(true);
          const std::uint32_t down = add_channel(fmt::format("switch{}.chip{}.down", d, a), rate, dim.link_latency_cycles);
          unused({down, add_buffer(s.buffer_bytes, rate)});  // into this chip: the last hop of others' routes
          break;
        }
      }
    }
}

// Per chip, an outbound and an inbound NPU-AFI bus, and a source with a port buffer per link
// the chip drives (the sources of links_ entries that are not links are never used).
void NetTopology::build_afi() {
  const SystemConfig& s = cfg_.system;
  const AfiConfig& afi = *s.afi;
  if (dims_ == 0) return;  // one chip: nothing to send to through an AFI
  afi_source_first_ = endpoints_;
  afi_sink_first_ = afi_source_first_ + static_cast<std::uint32_t>(links_.size());
  endpoints_ = afi_sink_first_ + s.chips;
  afi_port_.assign(links_.size(), kNone);
  afi_port_chip_.assign(links_.size(), kNone);
  for (std::uint32_t c = 0; c < s.chips; ++c) {
    afi_bus_.push_back(add_channel(fmt::format("chip{}.afi.bus_out", c), afi.bus_bytes_per_cycle, 0));
    add_channel(fmt::format("chip{}.afi.bus_in", c), afi.bus_bytes_per_cycle, 0);
    const std::uint32_t first = link_first_[c * dims_];
    const std::uint32_t last = c + 1 < s.chips ? link_first_[(c + 1) * dims_] : static_cast<std::uint32_t>(links_.size());
    for (std::uint32_t l = first; l < last; ++l) {
      afi_port_chip_[l] = c;
      if (drives_[l]) afi_port_[l] = add_buffer(afi.port_buffer_bytes, afi.bus_bytes_per_cycle);
    }
  }
}

std::uint32_t NetTopology::neighbour(std::uint32_t chip, std::size_t d, int step) const {
  const std::uint32_t n = cfg_.system.dimensions[d].size, x = cfg_.system.coordinate(chip, d);
  return cfg_.system.with_coordinate(chip, d, step > 0 ? (x + 1) % n : (x + n - 1) % n);
}

std::uint32_t NetTopology::first_link(std::uint32_t chip, std::size_t d, std::uint32_t to) const {
  const Dimension& dim = cfg_.system.dimensions[d];
  const std::uint32_t n = dim.size, x = cfg_.system.coordinate(chip, d);
  switch (dim.kind) {
    case DimensionKind::Ring: {
      const std::uint32_t fwd = (to + n - x) % n;
      return fwd <= n - fwd ? 0 : 1;
    }
    case DimensionKind::FullyConnected: return to;
    default: return 0;  // unidirectional ring: its one link; switch: up
  }
}

std::uint32_t NetTopology::afi_source(std::uint32_t from, std::uint32_t to) const {
  for (std::size_t d = 0; d < dims_; ++d) {
    const std::uint32_t y = cfg_.system.coordinate(to, d);
    if (cfg_.system.coordinate(from, d) != y)
      return afi_source_first_ + link_first_[from * dims_ + d] + first_link(from, d, y);
  }
  throw std::logic_error("afi_source: a chip does not send to itself through its AFI");
}

std::uint32_t NetTopology::next_chip(std::uint32_t from, std::uint32_t to) const {
  for (std::size_t d = 0; d < dims_; ++d) {
    const std::uint32_t y = cfg_.system.coordinate(to, d);
    if (cfg_.system.coordinate(from, d) == y) continue;
    const DimensionKind kind = cfg_.system.dimensions[d].kind;
    if (kind == DimensionKind::FullyConnected || kind == DimensionKind::Switch)
      return cfg_.system.with_coordinate(from, d, y);
    return neighbour(from, d, first_link(from, d, y) == 0 ? 1 : -1);
  }
  throw std::logic_error("next_chip: a chip is not on the way to itself");
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

// A ring's hops wait in class 1 from the one that wraps (coordinate n-1 to 0 going up, 0 to
// n-1 going down) on; every dimension starts again in class 0 (dimension order cannot close a
// cycle across dimensions).
void NetTopology::chips_route(std::uint32_t from, std::uint32_t to, std::vector<Hop>& out) const {
  std::uint32_t c = from;
  for (std::size_t d = 0; d < dims_; ++d) {
    const Dimension& dim = cfg_.system.dimensions[d];
    const std::uint32_t y = cfg_.system.coordinate(to, d);
    if (cfg_.system.coordinate(c, d) == y) continue;
    const std::uint32_t next = cfg_.system.with_coordinate(c, d, y);
    if (dim.kind == DimensionKind::FullyConnected) {
      out.push_back({links(c, d)[y].channel, links(c, d)[y].buffer, 0});
      c = next;
      continue;
    }
    if (dim.kind == DimensionKind::Switch) {  // up from c, down into next
      out.push_back({links(c, d)[0].channel, links(c, d)[0].buffer, 0});
      out.push_back({links(next, d)[1].channel, links(next, d)[1].buffer, 0});
      c = next;
      continue;
    }
    const std::uint32_t way = first_link(c, d, y);
    std::uint8_t cls = 0;
    while (cfg_.system.coordinate(c, d) != y) {
      const std::uint32_t x = cfg_.system.coordinate(c, d);
      if ((way == 0 && x == dim.size - 1) || (way == 1 && x == 0)) cls = 1;
      const Link& l = links(c, d)[way];
      out.push_back({l.channel, l.buffer, cls});
      c = neighbour(c, d, way == 0 ? 1 : -1);
    }
  }
}

bool NetTopology::route(std::uint32_t src, std::uint32_t dst, std::vector<Hop>& out) const {
  const std::uint32_t cores = cfg_.chip.cores;
  if (src >= afi_source_first_ && afi_source_first_ != 0) {  // AFI port queue -> bus -> links -> bus -> sink
    const std::uint32_t port = src - afi_source_first_;
    if (port >= links_.size() || !drives_[port] || dst < afi_sink_first_ || dst >= endpoints_)
      throw std::logic_error("NetTopology::route: an AFI message goes from a port queue to an AFI sink");
    const std::uint32_t from = afi_port_chip_[port], to = dst - afi_sink_first_;
    out.push_back({afi_bus_[from], afi_port_[port], 0});
    chips_route(from, to, out);
    out.push_back({afi_bus_[to] + 1, kNoBuffer, 0});
    return false;
  }
  if (!with_cores_) throw std::logic_error("NetTopology::route: this topology has the chip links and AFIs only");
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
  if (src >= cfg_.total_cores()) return cfg_.system.packet_bytes;  // from an AFI
  if (src / cores != dst / cores) return cfg_.system.packet_bytes;
  return cfg_.chip.mesh ? cfg_.chip.mesh->packet_bytes : 0;  // 0: the whole message
}

}  // namespace tessera::sim
