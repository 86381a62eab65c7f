#pragma once
// The channels, buffers and routes of a whole system, for the packet-level engine: per chip an
// IPU-style exchange (a send and a receive port per core) or a 2-D mesh/torus of routers (an
// injection and an ejection port per core, a link per neighbour and direction, an input buffer
// at the far end of every link), and the links between chips: per dimension of the system a
// ring, a unidirectional ring, a fully connected set or a switch, routed in dimension order.
//
// Endpoints are the cores (global ids 0 .. total_cores - 1) and, when the system has an AFI,
// each chip's AFI: one source per outgoing link (its port queue) and one sink. Collective
// engines send from AFI sources to AFI sinks.
//
// A route is a list of hops; a hop is a channel the packet crosses and the buffer it waits in
// afterwards, in a class (0, or 1 after crossing a dateline on a torus or a ring of chips, so
// routes that wrap around cannot wait on each other in a cycle). docs/hardware-model.md.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/config.h"
#include "sim/noc/transport.h"

namespace tessera::sim {

constexpr std::uint32_t kNoBuffer = ~0u;

struct Hop {
  std::uint32_t channel;
  std::uint32_t buffer;  // where the packet waits after the channel; kNoBuffer at the end
  std::uint8_t cls;      // dateline class of that buffer
};

struct ChannelSpec {
  std::string name;
  double bytes_per_cycle;
  Cycles latency_cycles;  // from the head leaving this channel to the head at the next one
  // A mesh link or port, or an exchange port, moves a flit of its width a cycle: a packet holds
  // it a cycle at least. Chip links and AFI buses carry a packet in its bytes' time (at least a
  // flit's, system.flit_bytes), so one faster than a packet a cycle carries more than one a cycle.
  bool whole_cycles = false;
};

struct BufferSpec {
  Bytes capacity_bytes;         // per class
  double fill_bytes_per_cycle;  // the rate of the fastest channel that puts packets into it
};

class NetTopology {
 public:
  // `with_cores` false: only the chip links and the AFIs (a collective run alone); a route from
  // or to a core is then an error.
  explicit NetTopology(const Config& cfg, bool with_cores = true);

  const std::vector<ChannelSpec>& channels() const { return channels_; }
  const std::vector<BufferSpec>& buffers() const { return buffers_; }

  // The hops from global core `src` to global core `dst`. Returns true when the message is
  // coupled: an exchange message within one chip holds its sender's send port and its
  // receiver's receive port together, for its whole length, as one unit (no packets).
  bool route(std::uint32_t src, std::uint32_t dst, std::vector<Hop>& out) const;
  // Packet size of a message between the two endpoints.
  Bytes packet_bytes(std::uint32_t src, std::uint32_t dst) const;
  // Every endpoint id is below this.
  std::uint32_t endpoints() const { return endpoints_; }
  // AFI endpoints (the system must have an AFI): the port queue of `from` whose link is the
  // first hop towards chip `to` (from != to), and the sink of chip `chip`.
  std::uint32_t afi_source(std::uint32_t from, std::uint32_t to) const;
  std::uint32_t afi_sink(std::uint32_t chip) const { return afi_sink_first_ + chip; }
  // The chips next to `chip` along dimension d, one step in the positive direction (ring,
  // unidirectional ring, switch: the next coordinate, wrapping round).
  std::uint32_t neighbour(std::uint32_t chip, std::size_t d, int step) const;
  // The first chip after `from` on the route to chip `to` (from != to): a ring's neighbour,
  // or `to`'s coordinate in a fully connected or switch dimension (a switch is no chip).
  std::uint32_t next_chip(std::uint32_t from, std::uint32_t to) const;

 private:
  struct Chip {
    std::uint32_t first_channel = 0;  // exchange: send i = first + i, recv i = first + cores + i
                                      // mesh: inject i, eject i = first + cores + i
    std::uint32_t first_buffer = 0;   // exchange: afi_out i, recv_in i; mesh: inject buffer i
    std::vector<std::uint32_t> link;      // mesh: node*4+dir -> channel, or ~0
    std::vector<std::uint32_t> link_buf;  // mesh: node*4+dir -> buffer at its far end
  };

  std::uint32_t add_channel(std::string name, double rate, Cycles latency, bool whole_cycles = false);
  std::uint32_t add_buffer(Bytes capacity, double fill_bytes_per_cycle);
  void build_exchange(std::uint32_t chip);
  void build_mesh(std::uint32_t chip);
  void build_chip_links();
  void build_afi();
  // Mesh links from local router `from` to `to` on `chip`.
  void mesh_route(std::uint32_t chip, std::uint32_t from, std::uint32_t to, std::vector<Hop>& out) const;
  // The links from chip `from` to chip `to`, dimension by dimension; the first hop's buffer is
  // the far end of the first link, and so on.
  void chips_route(std::uint32_t from, std::uint32_t to, std::vector<Hop>& out) const;
  // One dimension's links of a chip: ring: [+1, -1]; unidirectional ring: [+1]; fully
  // connected: one per coordinate (its own unused); switch: [up to the switch, down from it].
  struct Link {
    std::uint32_t channel = ~0u, buffer = ~0u;
  };
  const Link* links(std::uint32_t chip, std::size_t d) const { return &links_[link_first_[chip * dims_ + d]]; }
  // The index in links(chip, d) of the first hop towards coordinate `to` (ring: by the shorter
  // way, ties going up).
  std::uint32_t first_link(std::uint32_t chip, std::size_t d, std::uint32_t to) const;

  const Config& cfg_;
  std::vector<ChannelSpec> channels_;
  std::vector<BufferSpec> buffers_;
  std::vector<Chip> chips_;
  std::size_t dims_ = 0;
  std::vector<Link> links_;
  std::vector<bool> drives_;  // per entry of links_: a link the chip sends on (has an AFI queue)
  std::vector<std::uint32_t> link_first_;  // chip * dims + d -> first of its links in links_
  std::uint32_t endpoints_ = 0;
  bool with_cores_ = true;
  // AFI: sources are numbered from afi_source_first_, chip by chip, one per entry of links_ of
  // the chip (entries that are not links stay unused); sinks follow.
  std::uint32_t afi_source_first_ = 0, afi_sink_first_ = 0;
  std::vector<std::uint32_t> afi_bus_;   // chip -> its NPU-AFI bus, outbound (inbound = + 1)
  std::vector<std::uint32_t> afi_port_;       // entry of links_ -> port buffer in front of that link
  std::vector<std::uint32_t> afi_port_chip_;  // entry of links_ -> the chip it belongs to
};

// A network engine over a NetTopology, at packet or flit level: what the collective engines
// inject into (they address the AFIs through the topology).
class RoutedTransport : public Transport {
 public:
  virtual const NetTopology& topology() const = 0;
};

}  // namespace tessera::sim
