#pragma once
// Timing of shared transfer resources (ports, links, memory channels) by reservation: when a
// transfer is issued, its passage through every resource on its path is computed at once, in
// issue order; each resource keeps its reserved intervals, and a request takes the first idle
// stretch long enough for it. No process wakes per byte, flit or cycle,
// yet a resource used by two transfers serves them one after the other, and a full input buffer
// holds the upstream resource busy (back-pressure). See docs/hardware-model.md.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/types.h"

namespace tessera::sim {

class TraceRecorder;

struct Resource {
  Resource(std::string name_, double bytes_per_cycle_, Cycles latency_cycles_,
           std::uint32_t buffer_packets = 0);

  Cycles duration(Bytes bytes) const;  // cycles to pass `bytes` at this resource's rate
  // Earliest start >= `ready` of an idle stretch of `cycles` cycles. Reservations are made when
  // a transfer is issued, so a later transfer may use an idle gap before an earlier one's
  // reservation: without this, one slow sender whose packets are spaced out would hold a fast
  // link for the whole message.
  Cycles earliest(Cycles ready, Cycles cycles) const;
  // Reserve [start, start + cycles) for `bytes`; returns the end.
  Cycles occupy(Cycles start, Cycles cycles, Bytes bytes);
  // Drops reservations that ended by `now`: no later request can start before the present.
  void forget_before(Cycles now);
  // Earliest cycle at which a packet may be sent into this resource's input buffer
  // (the oldest of the last `buffer_packets` packets has left it).
  Cycles credit() const { return departures.empty() ? 0 : departures[head]; }
  void record_departure(Cycles t);
  // Back to idle with no reservations or statistics (a replay reuses its resources).
  void reset();

  std::string name;
  double bytes_per_cycle;
  Cycles latency_cycles;  // from the end of this resource to the next one
  Bytes bytes = 0;        // statistics
  Cycles busy_cycles = 0;
  std::uint64_t transfers = 0;
  int trace_track = -1;   // set when tracing

 private:
  std::vector<std::pair<Cycles, Cycles>> busy_;  // reserved [start, end), sorted, disjoint
  std::vector<Cycles> departures;  // ring of the last departures from the input buffer
  std::size_t head = 0;
};

struct Transfer {
  Cycles sender_done;  // the source has handed over its last byte
  Cycles arrival;      // the last byte is at the destination
};

// A message whose source and destination ports are connected for its whole duration (IPU
// exchange): both are held for bytes / min(rate) cycles starting when both are free.
Transfer reserve_coupled(Resource& src, Resource& dst, Cycles now, Bytes bytes,
                         TraceRecorder* trace);

// A message cut into packets that move store-and-forward through `stages`; stage i+1 accepts a
// packet only while its input buffer has room, else stage i waits (back-pressure).
Transfer reserve_packets(const std::vector<Resource*>& stages, Cycles now, Bytes bytes,
                         Bytes packet_bytes, TraceRecorder* trace);

// A single request on one resource (a memory channel): start when free, done after latency.
Cycles reserve_single(Resource& r, Cycles now, Bytes bytes, TraceRecorder* trace);

}  // namespace tessera::sim
