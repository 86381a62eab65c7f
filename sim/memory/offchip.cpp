#include "sim/memory/offchip.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/common/clock.h"
#include "sim/results/trace.h"

namespace tessera::sim {

OffchipMemory::OffchipMemory(sc_core::sc_module_name name, const Config& cfg, TraceRecorder* trace)
    : sc_core::sc_module(name), cfg_(cfg), channels_(cfg.chip.offchip.channels), trace_(trace),
      read_(cfg.system.chips, 0), written_(cfg.system.chips, 0) {
  for (std::uint32_t c = 0; c < cfg.system.chips; ++c)
    for (std::uint32_t i = 0; i < channels_; ++i) {
      channel_.emplace_back();
      channel_.back().stats.name = fmt::format("chip{}.offchip.ch{}", c, i);
    }
  SC_METHOD(serve);
  sensitive << wake_;
  dont_initialize();
}

void OffchipMemory::transfer(std::uint32_t core, Bytes bytes, bool write, Completion& done) {
  const std::uint32_t chip = cfg_.chip_of(core);
  (write ? written_ : read_)[chip] += bytes;
  requests_.push_back({core, order_++, bytes, &done});
  wake_.notify(sc_core::sc_time::from_value(kTicksPerCycle / 2));
}

// Channel i gets bytes/channels, the first (bytes % channels) channels one byte more; the
// request is done `latency` cycles after its last share has passed its channel.
void OffchipMemory::serve() {
  const Cycles now = now_cycles();
  const OffchipConfig& o = cfg_.chip.offchip;
  std::sort(requests_.begin(), requests_.end(), [](const Request& a, const Request& b) {
    return a.core != b.core ? a.core < b.core : a.order < b.order;
  });
  for (const Request& r : requests_) {
    Cycles done = now;
    const std::uint32_t chip = cfg_.chip_of(r.core);
    for (std::uint32_t i = 0; i < channels_; ++i) {
      const Bytes share = r.bytes / channels_ + (i < r.bytes % channels_ ? 1 : 0);
      if (share == 0) continue;
      Channel& ch = channel_[chip * channels_ + i];
      const Cycles d = static_cast<Cycles>(std::ceil(static_cast<double>(share) / o.channel_bytes_per_cycle));
      const Cycles start = std::max(now, ch.free);
      ch.free = start + d;
      ch.stats.bytes += share;
      ch.stats.busy_cycles += d;
      ++ch.stats.transfers;
      if (trace_ && ch.stats.trace_track >= 0) trace_->span(ch.stats.trace_track, "req", start, d);
      done = std::max(done, ch.free + o.latency_cycles);
    }
    r.done->complete(std::max(done, now + 1));
  }
  requests_.clear();
}

bool OffchipMemory::quiet_at(Cycles t) const {
  if (!requests_.empty()) return false;
  for (const Channel& ch : channel_)
    if (ch.free > t) return false;
  return true;
}

void OffchipMemory::read_counters(std::vector<std::uint64_t>& out) const {
  for (std::size_t c = 0; c < read_.size(); ++c) {
    out.push_back(read_[c]);
    out.push_back(written_[c]);
  }
  for (const Channel& ch : channel_) {
    out.push_back(ch.stats.bytes);
    out.push_back(ch.stats.busy_cycles);
    out.push_back(ch.stats.transfers);
  }
}

void OffchipMemory::add_counter(std::size_t i, std::uint64_t delta) {
  if (i < 2 * read_.size()) {
    (i % 2 ? written_ : read_)[i / 2] += delta;
    return;
  }
  i -= 2 * read_.size();
  ChannelStats& st = channel_[i / 3].stats;
  switch (i % 3) {
    case 0: st.bytes += delta; break;
    case 1: st.busy_cycles += delta; break;
    default: st.transfers += delta; break;
  }
}

void OffchipMemory::stats(std::vector<ChannelStats*>& out) {
  for (auto& c : channel_) out.push_back(&c.stats);
}

}  // namespace tessera::sim
