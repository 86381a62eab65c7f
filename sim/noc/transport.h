#pragma once
// One interface for every level of detail of the interconnect. A transport is a plain C++
// discrete-event engine for a whole system's network (no SystemC inside): messages are injected
// at a cycle, the engine advances cycle by cycle through the cycles at which something happens,
// and it reports, as soon as it knows them, the cycle at which a message's source has sent its
// last byte and the cycle at which its last byte is at the destination. Contention is decided in
// time order: a port, link or buffer goes to the packets (or flits) that are there at that cycle.
//
// Contract: calls to advance() never go back in time; inject() is for the current cycle or a
// later one; every cycle reported by a listener call made while advancing cycle t is > t, so a
// SystemC wrapper that advances cycle t half a cycle after t can always notify in the future.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/types.h"

namespace tessera::sim {

// Statistics of one channel (a port, link or memory channel) for the results document.
struct ChannelStats {
  std::string name;
  Bytes bytes = 0;
  Cycles busy_cycles = 0;
  std::uint64_t transfers = 0;  // packets (flit level: packets) that crossed it
  int trace_track = -1;
};

class TransportListener {
 public:
  virtual ~TransportListener() = default;
  // The source has handed over the message's last byte at cycle `when`.
  virtual void sent(std::uint64_t message, Cycles when) = 0;
  // The message's last byte is at the destination at cycle `when`.
  virtual void delivered(std::uint64_t message, Cycles when) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // `message` is the caller's id, echoed to the listener. Messages injected for the same cycle
  // enter in the order of (src, call order): the result does not depend on the caller's order
  // across sources.
  virtual void inject(std::uint64_t message, std::uint32_t src, std::uint32_t dst, Bytes bytes,
                      Cycles when) = 0;
  // Processes every event at cycles <= t.
  virtual void advance(Cycles t) = 0;
  // The next cycle with something to do, or kNever when the network is idle.
  virtual Cycles next_event() const = 0;
  // Packets (or flits) inside the network now (for deadlock reports).
  virtual std::uint64_t in_flight() const = 0;
  // Where those wait, in words, or "" when the level of detail does not say (deadlock reports).
  virtual std::string stuck_report() const { return ""; }
  // Packet-hops (packet level) or flit-hops (flit level) simulated so far (for the benchmark).
  virtual std::uint64_t hops() const = 0;
  virtual void stats(std::vector<ChannelStats*>& out) = 0;
  virtual void set_listener(TransportListener* l) = 0;

  // Fast-forward (sim/system/fast_forward.h). True when the network is empty and idle at cycle
  // t: nothing in it, no event pending, and no port, link or buffer busy after t, so that what
  // is injected from t on is timed exactly as it would be in any other such state. A level of
  // detail that cannot tell says false (and is never fast-forwarded).
  virtual bool quiet_at(Cycles) const { return false; }
  // The counters a stretch of simulation adds to (hops, then per channel: bytes, transfers,
  // busy time in the transport's own units), appended flat to `out`; add_counter adds a
  // replayed stretch's difference to counter i.
  virtual void read_counters(std::vector<std::uint64_t>&) const {}
  virtual void add_counter(std::size_t, std::uint64_t) {}
};

}  // namespace tessera::sim
