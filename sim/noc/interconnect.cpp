#include "sim/noc/interconnect.h"

#include <fmt/format.h>

#include "sim/common/error.h"
#include "sim/noc/exchange.h"
#include "sim/noc/mesh.h"

namespace tessera::sim {

Interconnect::Interconnect(const Config& cfg) : cfg_(cfg) {
  const auto inbound_packets =
      static_cast<std::uint32_t>(cfg.system.buffer_bytes / cfg.system.packet_bytes);
  for (std::uint32_t c = 0; c < cfg.system.chips; ++c) {
    if (cfg.chip.exchange)
      chips_.push_back(std::make_unique<ExchangeFabric>(*cfg.chip.exchange, c, cfg.chip.cores, inbound_packets));
    else
      chips_.push_back(std::make_unique<MeshFabric>(*cfg.chip.mesh, c));
  }
}

Transfer Interconnect::transfer(std::uint32_t src, std::uint32_t dst, Cycles now, Bytes bytes,
                                ChipBoundaryIf* boundary, TraceRecorder* trace) {
  const std::uint32_t sc = cfg_.chip_of(src), dc = cfg_.chip_of(dst);
  const std::uint32_t ls = src % cfg_.chip.cores, ld = dst % cfg_.chip.cores;
  if (sc == dc) return chips_[sc]->transfer(ls, ld, now, bytes, trace);
  if (!boundary)
    throw Error(fmt::format("a message from core {} (chip {}) to core {} (chip {}) needs the "
                            "links between chips, and none are connected", src, sc, dst, dc));
  path_.clear();
  chips_[sc]->path_out(ls, path_);
  boundary->route(sc, dc, path_);
  chips_[dc]->path_in(ld, path_);
  return reserve_packets(path_, now, bytes, boundary->packet_bytes(), trace);
}

void Interconnect::resources(std::vector<Resource*>& out) {
  for (auto& c : chips_) c->resources(out);
}

}  // namespace tessera::sim
