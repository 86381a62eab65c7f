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

Cycles Resource::occupy(Cycles start, Bytes b) {
  Cycles d = duration(b);
  free_cycle = start + d;
  bytes += b;
  busy_cycles += d;
  return free_cycle;
}

void Resource::record_departure(Cycles t) {
  if (departures.empty()) return;
  departures[head] = t;
  head = (head + 1) % departures.size();
}

Transfer reserve_coupled(Resource& src, Resource& dst, Cycles now, Bytes bytes,
                         TraceRecorder* trace) {
  const Cycles start = std::max({now, src.free_cycle, dst.free_cycle});
  const Cycles d = std::max(src.duration(bytes), dst.duration(bytes));
  for (Resource* r : {&src, &dst}) {
    r->free_cycle = start + d;
    r->bytes += bytes;
    r->busy_cycles += d;
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
      Cycles start = std::max(ready, s.free_cycle);
      if (i + 1 < n) start = std::max(start, stages[i + 1]->credit());
      s.record_departure(start);  // the packet leaves this stage's input buffer
      const Cycles end = s.occupy(start, p);
      if (sent == 0) ++s.transfers;
      if (trace) trace->span(s.trace_track, "pkt", start, end - start);
      if (i == 0) t.sender_done = end;
      ready = end + s.latency_cycles;
    }
    t.arrival = ready;
  }
  return t;
}

Cycles reserve_single(Resource& r, Cycles now, Bytes bytes, TraceRecorder* trace) {
  const Cycles start = std::max(now, r.free_cycle);
  const Cycles end = r.occupy(start, bytes);
  ++r.transfers;
  if (trace) trace->span(r.trace_track, "req", start, end - start);
  return end + r.latency_cycles;
}

}  // namespace tessera::sim
