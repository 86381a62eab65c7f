#include "sim/memory/offchip.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/common/clock.h"

namespace tessera::sim {

OffchipMemory::OffchipMemory(sc_core::sc_module_name name, const Config& cfg, TraceRecorder* trace)
    : sc_core::sc_module(name), channels_(cfg.chip.offchip.channels), trace_(trace),
      read_(cfg.system.chips, 0), written_(cfg.system.chips, 0) {
  for (std::uint32_t c = 0; c < cfg.system.chips; ++c)
    for (std::uint32_t i = 0; i < channels_; ++i)
      channel_.emplace_back(fmt::format("chip{}.offchip.ch{}", c, i),
                            cfg.chip.offchip.channel_bytes_per_cycle, cfg.chip.offchip.latency_cycles);
}

void OffchipMemory::transfer(std::uint32_t chip, Bytes bytes, bool write) {
  const Cycles now = now_cycles();
  Cycles done = now;
  // Channel i gets bytes/channels, the first (bytes % channels) channels one byte more.
  for (std::uint32_t i = 0; i < channels_; ++i) {
    const Bytes share = bytes / channels_ + (i < bytes % channels_ ? 1 : 0);
    if (share == 0) continue;
    done = std::max(done, reserve_single(channel_[chip * channels_ + i], now, share, trace_));
  }
  (write ? written_ : read_)[chip] += bytes;
  wait_until(done);
}

void OffchipMemory::resources(std::vector<Resource*>& out) {
  for (auto& r : channel_) out.push_back(&r);
}

}  // namespace tessera::sim
