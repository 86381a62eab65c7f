#include "sim/noc/exchange.h"

#include <fmt/format.h>

namespace tessera::sim {

ExchangeFabric::ExchangeFabric(const ExchangeConfig& cfg, std::uint32_t chip, std::uint32_t cores,
                               std::uint32_t inbound_buffer_packets) {
  for (std::uint32_t i = 0; i < cores; ++i) {
    send_.emplace_back(fmt::format("chip{}.core{}.send", chip, i), cfg.send_bytes_per_cycle,
                       cfg.latency_cycles);
    recv_.emplace_back(fmt::format("chip{}.core{}.recv", chip, i), cfg.recv_bytes_per_cycle, 0,
                       inbound_buffer_packets);
  }
}

Transfer ExchangeFabric::transfer(std::uint32_t src, std::uint32_t dst, Cycles now, Bytes bytes,
                                  TraceRecorder* trace) {
  return reserve_coupled(send_[src], recv_[dst], now, bytes, trace);
}

void ExchangeFabric::path_out(std::uint32_t src, std::vector<Resource*>& out) {
  out.push_back(&send_[src]);
}
void ExchangeFabric::path_in(std::uint32_t dst, std::vector<Resource*>& out) {
  out.push_back(&recv_[dst]);
}
void ExchangeFabric::resources(std::vector<Resource*>& out) {
  for (auto& r : send_) out.push_back(&r);
  for (auto& r : recv_) out.push_back(&r);
}

}  // namespace tessera::sim
