#pragma once
// Flit level of the links between chips and the AFIs (`system.model: "flit"`), the reference
// for the packet level on the same channels, buffers and routes (NetTopology), for collectives
// run alone: wormhole switching, virtual channels and credit-based flow control, in time order.
//
// A flit is system.flit_bytes bytes. A channel of r bytes per cycle carries a flit in flit / r
// cycles (kept in 1/1024 cycle, so a fast channel carries several flits in one cycle); a flit
// that starts on it at s can leave the buffer behind it at ceil(s + flit / r) + the channel's
// latency. Each buffer has, per dateline class, `vcs` virtual channels, each a FIFO of
// buffer_bytes / vcs bytes in whole flits; a buffer's read port passes a flit in the time of
// the faster of the rate that fills it and the channel the flit leaves by (as at packet level). A packet's head takes a downstream virtual channel of
// its class that no other packet holds (the one with the most credits, then the lowest); the
// packet holds it until its tail has crossed, and packets queue one after another in it. A flit
// crosses when the channel and the read port are free, its flit is there, and the downstream
// channel has a credit; the credit comes back one cycle after the flit leaves the downstream
// buffer. Among the virtual channels and sources that can send on a channel in a cycle, a flit
// already in the network (relayed by this chip) goes before one entering it from this chip's AFI,
// then the oldest packet (the one its source put up first, as at packet level), then the
// requester next in round-robin order after the last one that crossed (a switch allocator).
// Ranking by the cycle a packet reached this router gave a chip's own packets, queued early in a
// large AFI port queue, precedence over what it relays, and larger buffers made collectives
// slower (a 4-ring direct all-reduce 13,294 -> 16,948 cycles with a 32 KiB port buffer instead
// of 16 KiB); age alone still let a chip's own traffic fill the relay's virtual channels (the
// 4 x 4 all-to-all 10.7% slower with 64 KiB port queues than with 16 KiB, at 128 KiB link
// buffers). Sources send their packets in order.
// docs/hardware-model.md, "Flit level of the chip links".
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/config/config.h"
#include "sim/noc/event_wheel.h"
#include "sim/noc/fixed_point.h"
#include "sim/noc/index_pool.h"
#include "sim/noc/topology.h"

namespace tessera::sim {

class FlitNetwork : public RoutedTransport {
 public:
  // The chip links and AFIs only (NetTopology without cores); throws ConfigError when the
  // config has fewer than two chips or no AFI.
  explicit FlitNetwork(const Config& cfg);

  void inject(std::uint64_t message, std::uint32_t src, std::uint32_t dst, Bytes bytes,
              Cycles when) override;
  void advance(Cycles t) override;
  Cycles next_event() const override { return wheel_.empty() ? kNever : wheel_.next(); }
  std::uint64_t in_flight() const override { return live_flits_; }
  std::string stuck_report() const override;
  std::uint64_t hops() const override { return hops_; }
  void stats(std::vector<ChannelStats*>& out) override;
  void set_listener(TransportListener* l) override { listener_ = l; }
  const NetTopology& topology() const override { return topo_; }

 private:
  static constexpr std::uint32_t kNil = ~0u;
  static constexpr std::uint32_t kSink = ~0u - 1;  // a packet's last channel: no buffer behind it

  struct Flit {
    Cycles eligible;       // when it may leave this buffer
    std::uint32_t packet;
    std::uint16_t hop;     // index in the packet's route of the channel it takes next
    bool head, tail;
  };
  struct Vc {
    std::uint32_t ring = kNil;  // its first slot in flits_ (allocated when first used)
    std::uint32_t front = 0, count = 0, credits = 0;
    std::uint32_t out = kNil;   // the downstream VC (or kSink) its front packet holds, kNil before
    std::uint32_t wants = kNil; // the channel its front flit waits for (kNil: empty)
    std::uint32_t buffer = 0;
    bool held = false;          // taken by an upstream packet whose tail has not crossed yet
  };
  struct Source {
    std::uint32_t head = kNil, tail = kNil;  // queue of packets (Packet::next)
    std::uint32_t sent = 0;                  // flits of the head packet sent
    std::uint32_t out = kNil;
    std::uint32_t wants = kNil;
  };
  struct Channel {
    std::int64_t flit_fp = 1, free_fp = 0, busy_fp = 0;
    Cycles latency = 0;
    std::vector<std::uint32_t> requests;  // requesters (VC index, or vcs + source) whose front flit wants it
    Cycles wake = kNever;
    std::uint32_t last = 0;  // the requester that crossed last (round-robin among equals)
  };
  struct Buffer {
    std::uint32_t first_vc = 0, depth = 0;
    std::int64_t read_fp = 1, read_free_fp = 0;
    std::vector<std::uint32_t> waiting;  // channels waiting for a credit or a free VC here
    Cycles reserved_cycle = kNever;      // the read port goes first to `reserved_for` in that cycle
    std::uint32_t reserved_for = kNil;
  };
  using Route = std::vector<Hop>;
  struct Packet {
    std::uint32_t msg, flits, bytes;
    std::uint32_t next = kNil;
    Cycles born;  // when it became its source's next packet to send: its age in arbitration
  };
  struct Message {
    std::uint64_t id;
    const Route* route;
    std::uint32_t src, outstanding;
    Cycles arrival;
    std::uint64_t order;
    std::uint32_t first = kNil, last = kNil;  // its packets, chained by Packet::next
  };
  enum class Kind : std::uint8_t { Inject, Credit, Try };
  struct Event {
    Kind kind;
    std::uint32_t a;  // Inject: message; Credit: VC; Try: channel
  };
  // Why a requester cannot cross now: it can at a later cycle, or it waits for a buffer.
  struct Blocked {
    Cycles retry = kNever;
    std::uint32_t buffer = kNil;
  };

  void cycle(Cycles t);
  void start_message(std::uint32_t m, Cycles t);
  void try_channel(std::uint32_t c, Cycles t);
  // True when requester r can send a flit on channel c in cycle t; else says why in `b`.
  bool ready(std::uint32_t r, std::uint32_t c, Cycles t, Blocked& b, std::uint32_t& packet);
  // Precedence among flits that can start on a channel at once (smaller goes first).
  struct Rank {
    bool entering;     // from a source or an AFI port queue, onto the route's first link
    Cycles born;
    std::uint64_t turn;
    bool operator<(const Rank& o) const {
      if (entering != o.entering) return !entering;
      return born != o.born ? born < o.born : turn < o.turn;
    }
  };
  // Requester r's place in channel ch's round-robin: 0 for the one after the last to cross.
  std::uint64_t turn(const Channel& ch, std::uint32_t r) const {
    const std::uint64_t n = vcs_state_.size() + sources_.size();
    return (r + n - ch.last - 1) % n;
  }
  // The downstream VC a head flit at hop `hop` of `route` may take, kSink, or kNil (none free).
  std::uint32_t pick_vc(const Hop& hop) const;
  void cross(std::uint32_t r, std::uint32_t c, Cycles t);
  void enter(std::uint32_t down, const Flit& f, Cycles arrive, Cycles t);
  void offer_next(std::uint32_t r, const Flit& f, std::uint32_t next, std::uint32_t msg, Cycles sent_at, Cycles t);
  void deliver(const Flit& f, Cycles when);
  void set_wants(std::uint32_t r, std::uint32_t channel, Cycles at);
  void schedule(std::uint32_t c, Cycles at);
  void wake_waiting(std::uint32_t buffer, Cycles at);
  Flit& front(Vc& v) { return flits_[v.ring + v.front]; }
  const Route& route_of(std::uint32_t src, std::uint32_t dst);
  // Hop `h` of packet p's route.
  const Hop& hop_of(std::uint32_t p, std::uint32_t h) const { return (*messages_[packets_[p].msg].route)[h]; }

  NetTopology topo_;
  Bytes flit_bytes_, packet_bytes_;
  std::uint32_t vcs_;  // per class
  TransportListener* listener_ = nullptr;
  std::vector<Channel> channels_;
  std::vector<ChannelStats> stats_;
  std::vector<Buffer> buffers_;
  std::vector<Vc> vcs_state_;
  std::vector<Source> sources_;
  std::vector<Flit> flits_;
  std::unordered_map<std::uint64_t, Route> routes_;  // (src, dst) -> route; nodes stay put
  IndexPool<Packet> packets_;
  IndexPool<Message> messages_;
  EventWheel<Event> wheel_;
  std::vector<Event> now_;
  std::vector<std::uint32_t> injects_;
  std::uint64_t order_ = 0, hops_ = 0, live_flits_ = 0;
};

// The links between chips and the AFIs, without the cores (collectives run alone), at the level
// of detail of system.model: PacketNetwork or FlitNetwork.
std::unique_ptr<RoutedTransport> make_chip_links(const Config& cfg);

}  // namespace tessera::sim
