#include "sim/noc/mesh.h"

#include <fmt/format.h>

namespace tessera::sim {

MeshFabric::MeshFabric(const MeshConfig& cfg, std::uint32_t chip) : cfg_(cfg) {
  const std::uint32_t nodes = cfg.rows * cfg.cols;
  const auto buffer_packets = static_cast<std::uint32_t>(cfg.buffer_bytes / cfg.packet_bytes);
  link_index_.assign(std::size_t(nodes) * 4, -1);
  const char* dir_names[4] = {"E", "W", "S", "N"};
  for (std::uint32_t n = 0; n < nodes; ++n) {
    const std::uint32_t r = n / cfg.cols, c = n % cfg.cols;
    inject_.emplace_back(fmt::format("chip{}.r{}c{}.inject", chip, r, c), cfg.ni_bytes_per_cycle,
                         cfg.router_latency_cycles);
    eject_.emplace_back(fmt::format("chip{}.r{}c{}.eject", chip, r, c), cfg.ni_bytes_per_cycle, 0,
                        buffer_packets);
    for (int d = 0; d < 4; ++d) {
      const bool horizontal = d == East || d == West;
      const std::uint32_t extent = horizontal ? cfg.cols : cfg.rows;
      const std::uint32_t pos = horizontal ? c : r;
      const bool up = d == East || d == South;
      if (extent < 2) continue;
      if (!cfg.torus && ((up && pos + 1 == extent) || (!up && pos == 0))) continue;
      if (cfg.torus && extent == 2 && !up) continue;  // a 2-ring has one link each way
      link_index_[n * 4 + d] = static_cast<int>(links_.size());
      links_.emplace_back(fmt::format("chip{}.r{}c{}.{}", chip, r, c, dir_names[d]),
                          cfg.link_bytes_per_cycle, cfg.link_latency_cycles + cfg.router_latency_cycles,
                          buffer_packets);
    }
  }
}

void MeshFabric::dimension(std::uint32_t a, std::uint32_t b, std::uint32_t n, Dir up, Dir down,
                           std::uint32_t& steps, Dir& dir) const {
  if (!cfg_.torus) {
    steps = a < b ? b - a : a - b;
    dir = a < b ? up : down;
    return;
  }
  const std::uint32_t fwd = (b + n - a) % n;  // ties go the "up" way, for determinism
  if (fwd <= n - fwd || n == 2) { steps = fwd; dir = up; }
  else { steps = n - fwd; dir = down; }
}

void MeshFabric::route(std::uint32_t from, std::uint32_t to, std::vector<Resource*>& out) {
  std::uint32_t r = from / cfg_.cols, c = from % cfg_.cols;
  const std::uint32_t tr = to / cfg_.cols, tc = to % cfg_.cols;
  std::uint32_t steps;
  Dir d;
  dimension(c, tc, cfg_.cols, East, West, steps, d);
  for (std::uint32_t i = 0; i < steps; ++i) {
    out.push_back(&link(r * cfg_.cols + c, d));
    c = d == East ? (c + 1) % cfg_.cols : (c + cfg_.cols - 1) % cfg_.cols;
  }
  dimension(r, tr, cfg_.rows, South, North, steps, d);
  for (std::uint32_t i = 0; i < steps; ++i) {
    out.push_back(&link(r * cfg_.cols + c, d));
    r = d == South ? (r + 1) % cfg_.rows : (r + cfg_.rows - 1) % cfg_.rows;
  }
}

std::uint32_t MeshFabric::hops(std::uint32_t from, std::uint32_t to) {
  path_.clear();
  route(from, to, path_);
  return static_cast<std::uint32_t>(path_.size());
}

Transfer MeshFabric::transfer(std::uint32_t src, std::uint32_t dst, Cycles now, Bytes bytes,
                              TraceRecorder* trace) {
  path_.clear();
  path_.push_back(&inject_[src]);
  route(src, dst, path_);
  path_.push_back(&eject_[dst]);
  return reserve_packets(path_, now, bytes, cfg_.packet_bytes, trace);
}

void MeshFabric::path_out(std::uint32_t src, std::vector<Resource*>& out) {
  out.push_back(&inject_[src]);
  route(src, cfg_.gateway_core, out);
}
void MeshFabric::path_in(std::uint32_t dst, std::vector<Resource*>& out) {
  route(cfg_.gateway_core, dst, out);
  out.push_back(&eject_[dst]);
}
void MeshFabric::resources(std::vector<Resource*>& out) {
  for (auto& r : inject_) out.push_back(&r);
  for (auto& r : eject_) out.push_back(&r);
  for (auto& r : links_) out.push_back(&r);
}

}  // namespace tessera::sim
