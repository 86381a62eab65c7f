#pragma once
// The channels, buffers and routes of a whole system, for the packet-level engine: per chip an
// IPU-style exchange (a send and a receive port per core) or a 2-D mesh/torus of routers (an
// injection and an ejection port per core, a link per neighbour and direction, an input buffer
// at the far end of every link), and the links between chips (ring or fully connected).
//
// A route is a list of hops; a hop is a channel the packet crosses and the buffer it waits in
// afterwards, in a class (0, or 1 after crossing a dateline on a torus or a ring of chips, so
// routes that wrap around cannot wait on each other in a cycle). docs/hardware-model.md.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/config.h"

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
};

struct BufferSpec {
  Bytes capacity_bytes;         // per class
  double fill_bytes_per_cycle;  // the rate of the fastest channel that puts packets into it
};

class NetTopology {
 public:
  explicit NetTopology(const Config& cfg);

  const std::vector<ChannelSpec>& channels() const { return channels_; }
  const std::vector<BufferSpec>& buffers() const { return buffers_; }

  // The hops from global core `src` to global core `dst`. Returns true when the message is
  // coupled: an exchange message within one chip holds its sender's send port and its
  // receiver's receive port together, for its whole length, as one unit (no packets).
  bool route(std::uint32_t src, std::uint32_t dst, std::vector<Hop>& out) const;
  // Packet size of a message between the two cores.
  Bytes packet_bytes(std::uint32_t src, std::uint32_t dst) const;

 private:
  struct Chip {
    std::uint32_t first_channel = 0;  // exchange: send i = first + i, recv i = first + cores + i
                                      // mesh: inject i, eject i = first + cores + i
    std::uint32_t first_buffer = 0;   // exchange: afi_out i, recv_in i; mesh: inject buffer i
    std::vector<std::uint32_t> link;      // mesh: node*4+dir -> channel, or ~0
    std::vector<std::uint32_t> link_buf;  // mesh: node*4+dir -> buffer at its far end
  };

  std::uint32_t add_channel(std::string name, double rate, Cycles latency);
  std::uint32_t add_buffer(Bytes capacity, double fill_bytes_per_cycle);
  void build_exchange(std::uint32_t chip);
  void build_mesh(std::uint32_t chip);
  void build_chip_links();
  // Mesh links from local router `from` to `to` on `chip`.
  void mesh_route(std::uint32_t chip, std::uint32_t from, std::uint32_t to, std::vector<Hop>& out) const;
  void chips_route(std::uint32_t from, std::uint32_t to, std::vector<Hop>& out) const;
  std::uint32_t chip_link(std::uint32_t a, std::uint32_t b) const { return chip_link_[a * cfg_.system.chips + b]; }

  const Config& cfg_;
  std::vector<ChannelSpec> channels_;
  std::vector<BufferSpec> buffers_;
  std::vector<Chip> chips_;
  std::vector<std::uint32_t> chip_link_;      // from*chips+to -> channel, or ~0
  std::vector<std::uint32_t> chip_link_buf_;  // same index -> buffer at its far end
};

}  // namespace tessera::sim
