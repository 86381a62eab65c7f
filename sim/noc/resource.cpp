#include "sim/noc/resource.h"

#include <algorithm>
#include <cmath>

#include "sim/results/trace.h"

namespace tessera::sim {

Resource::Resource(std::string name_, double bytes_per_cycle_, Cycles latency_cycles_,
                   std::uint32_t buffer_packets)
    : name(std::move(name_)), bytes_per_cycle(bytes_per_cycle_), latency_cycles(latency_cycles_),
      departures(buffer_packets, 0) {}

Cycles Resource::duration(Bytes b) const {
  return static_cast<Cycles>(std::ceil(static_cast<double>(b) / bytes_per_cycle));
}

Cycles Resource::earliest(Cycles ready, Cycles d) const {
  Cycles t = ready;
  for (const auto& [s, e] : busy_) {
    if (e <= t) continue;
    if (t + d <= s) break;  // fits in the gap before this reservation
    t = e;
  }
  return t;
}

Cycles Resource::occupy(Cycles start, Cycles d, Bytes b) {
  const Cycles end = start + d;
  bytes += b;
  busy_cycles += d;
  if (d == 0) return end;
  auto it = std::upper_bound(busy_.begin(), busy_.end(), std::make_pair(start, end));
  // merge with touching neighbours so back-to-back traffic stays one interval
  if (it != busy_.begin() && std::prev(it)->second == start) {
    auto prev = std::prev(it);
    prev->second = end;
    if (it != busy_.end() && it->first == end) {
      prev->second = it->second;
      busy_.erase(it);
    }
  } else if (it != busy_.end() && it->first == end) {
    it->first = start;
  } else {
    busy_.insert(it, {start, end});
  }
  return end;
}

void Resource::forget_before(Cycles now) {
  auto it = busy_.begin();
  while (it != busy_.end() && it->second <= now) ++it;
  busy_.erase(busy_.begin(), it);
}

void Resource::record_departure(Cycles t) {
  if (departures.empty()) return;
  departures[head] = t;
  head = (head + 1) % departures.size();
}

void Resource::reset() {
  busy_.clear();
  std::fill(departures.begin(), departures.end(), 0);
  head = 0;
  bytes = 0;
  busy_cycles = 0;
  transfers = 0;
}

Transfer reserve_coupled(Resource& src, Resource& dst, Cycles now, Bytes bytes,
                         TraceRecorder* trace) {
  const Cycles d = std::max(src.duration(bytes), dst.duration(bytes));
  src.forget_before(now);
  dst.forget_before(now);
  // the first stretch in which both ports are idle for d cycles
  Cycles start = now;
  for (;;) {
    const Cycles a = src.earliest(start, d), b = dst.earliest(a, d);
    if (a == b) { start = a; break; }
    start = b;
  }
  for (Resource* r : {&src, &dst}) {
    r->occupy(start, d, bytes);
    ++r->transfers;
    if (trace) trace->span(r->trace_track, "msg", start, d);
  }
  return {start + d, start + d + src.latency_cycles + dst.latency_cycles};
}

Transfer reserve_packets(const std::vector<Resource*>& stages, Cycles now, Bytes bytes,
                         Bytes packet_bytes, TraceRecorder* trace) {
  Transfer t{now, now};
  const std::size_t n = stages.size();
  for (Bytes sent = 0; sent < bytes; sent += packet_bytes) {
    const Bytes p = std::min(packet_bytes, bytes - sent);
    Cycles ready = now;  // when the packet is available at the current stage
    for (std::size_t i = 0; i < n; ++i) {
      Resource& s = *stages[i];
      if (sent == 0) s.forget_before(now);
      Cycles start = ready;
      if (i + 1 < n) start = std::max(start, stages[i + 1]->credit());
      start = s.earliest(start, s.duration(p));
      s.record_departure(start);  // the packet leaves this stage's input buffer
      const Cycles end = s.occupy(start, s.duration(p), p);
      if (sent == 0) ++s.transfers;
      if (trace) trace->span(s.trace_track, "pkt", start, end - start);
      // gap filling can let a later packet overtake an earlier one: keep the latest
      if (i == 0) t.sender_done = std::max(t.sender_done, end);
      ready = end + s.latency_cycles;
    }
    t.arrival = std::max(t.arrival, ready);
  }
  return t;
}

Cycles reserve_single(Resource& r, Cycles now, Bytes bytes, TraceRecorder* trace) {
  r.forget_before(now);
  const Cycles start = r.earliest(now, r.duration(bytes));
  const Cycles end = r.occupy(start, r.duration(bytes), bytes);
  ++r.transfers;
  if (trace) trace->span(r.trace_track, "req", start, end - start);
  return end + r.latency_cycles;
}

}  // namespace tessera::sim
