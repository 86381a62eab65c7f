#include "sim/system/chip_links.h"

#include <fmt/format.h>

namespace tessera::sim {

InterChipLinks::InterChipLinks(const SystemConfig& cfg)
    : cfg_(cfg), links_(std::size_t(cfg.chips) * cfg.chips, nullptr) {
  const std::uint32_t n = cfg.chips;
  const auto buffer_packets = static_cast<std::uint32_t>(cfg.buffer_bytes / cfg.packet_bytes);
  auto add = [&](std::uint32_t a, std::uint32_t b) {
    if (a == b || links_[a * n + b]) return;
    storage_.emplace_back(fmt::format("link.chip{}->chip{}", a, b), cfg.link_bytes_per_cycle,
                          cfg.link_latency_cycles, buffer_packets);
    links_[a * n + b] = &storage_.back();
  };
  for (std::uint32_t a = 0; a < n; ++a) {
    if (cfg.topology == Topology::FullyConnected) {
      for (std::uint32_t b = 0; b < n; ++b) add(a, b);
    } else {
      add(a, (a + 1) % n);
      add(a, (a + n - 1) % n);
    }
  }
}

void InterChipLinks::route(std::uint32_t from, std::uint32_t to, std::vector<Resource*>& out) {
  const std::uint32_t n = cfg_.chips;
  if (cfg_.topology == Topology::FullyConnected) {
    out.push_back(link(from, to));
    return;
  }
  const std::uint32_t fwd = (to + n - from) % n;
  const bool up = fwd <= n - fwd;
  for (std::uint32_t c = from; c != to;) {
    const std::uint32_t next = up ? (c + 1) % n : (c + n - 1) % n;
    out.push_back(link(c, next));
    c = next;
  }
}

void InterChipLinks::resources(std::vector<Resource*>& out) {
  for (auto& r : storage_) out.push_back(&r);
}

}  // namespace tessera::sim
