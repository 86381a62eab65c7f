#pragma once
// Packet level, the default and fast level of detail: every packet moves hop by hop in time
// order with virtual cut-through. A packet waiting at a channel (port or link) takes it when the
// channel is idle and the buffer behind the channel has room for the whole packet, at that
// cycle, and the buffer it is in is not being read by another packet (one crossbar input per
// router port); among the packets waiting for one channel the oldest goes first: the one its
// source put up first (packets are numbered as sources put them up, in time order). Ranking by
// the cycle a packet reached the channel instead gave a chip's own packets, queued early in a
// large AFI port buffer, precedence over traffic it relays, so larger buffers made collectives
// slower. Space in a buffer comes back when the packet's tail leaves it.
// Nothing is reserved ahead of time. The head moves on after the channel's latency, so a packet
// pays its serialisation once, not per hop; a packet never starts on a channel so early that
// the channel would idle waiting for its tail (a fast link after a slow port waits until the
// packet could stream at the link's rate), so a slow sender does not hold a fast link.
// Exchange messages within a chip are one unit holding both the sender's and the receiver's
// port (IPU exchange). docs/hardware-model.md has the rules and the formulas.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/config/config.h"
#include "sim/noc/event_wheel.h"
#include "sim/noc/fixed_point.h"
#include "sim/noc/index_pool.h"
#include "sim/noc/topology.h"
#include "sim/noc/transport.h"

namespace tessera::sim {

// The per-hop path (arrival, arbitration, grant) is a handful of short functions called once per
// hop each; inlined into the cycle loop they cost no calls or register saves (measured with
// callgrind on 8x8 uniform traffic: about 70 instructions per packet-hop). Undefined at the end.
#define TESSERA_HOT_INLINE [[gnu::always_inline]] inline

class TraceRecorder;

class PacketNetwork : public RoutedTransport {
 public:
  // `with_cores`: NetTopology's (false: the chip links and AFIs only, for collectives run alone).
  PacketNetwork(const Config& cfg, TraceRecorder* trace = nullptr, bool with_cores = true);

  void inject(std::uint64_t message, std::uint32_t src, std::uint32_t dst, Bytes bytes,
              Cycles when) override;
  void advance(Cycles t) override;
  Cycles next_event() const override { return wheel_.empty() ? kNever : wheel_.next(); }
  std::uint64_t in_flight() const override { return live_packets_; }
  // Where the packets still in the network wait (for deadlock reports): at a channel, set aside
  // for room in a full buffer, set aside for room in a buffer that has it, set aside for a read.
  std::string stuck_report() const override;
  std::uint64_t hops() const override { return hops_; }
  void stats(std::vector<ChannelStats*>& out) override;
  void set_listener(TransportListener* l) override { listener_ = l; }
  bool quiet_at(Cycles t) const override;
  void read_counters(std::vector<std::uint64_t>& out) const override;
  void add_counter(std::size_t i, std::uint64_t delta) override;
  const NetTopology& topology() const override { return topo_; }
  // Back to cycle 0: idle, empty, statistics zeroed (a replay reuses one engine).
  void reset();

 private:
  static constexpr std::uint32_t kNil = ~0u;

  // 16 bytes (the cycle it reached the channel is the packet's own `ready`): queues of these are
  // indexed and sized on every hop, and a power-of-two size keeps that to shifts.
  //
  // Small records on the hot path are written field by field and copied field by field: built as
  // a temporary (an 8-byte and a 4-byte store) and copied whole (one 16-byte load), the load
  // cannot be forwarded from the stores and waits for them to reach the cache (perf put about a
  // fifth of its samples there; copying field by field made 8x8 uniform traffic 12% faster).
  struct Waiting {
    std::uint64_t seq;
    std::uint32_t packet;
    Waiting(std::uint64_t s, std::uint32_t p) : seq(s), packet(p) {}
    Waiting(const Waiting& o) : seq(o.seq), packet(o.packet) {}
    Waiting& operator=(const Waiting& o) {
      seq = o.seq;
      packet = o.packet;
      return *this;
    }
  };
  // Packets waiting for a channel, oldest first. Most leave from the front; a packet arriving
  // from a source is the youngest and goes at the back, one relayed or coming back from being set
  // aside is older and goes in further forward. A vector with a moving front: both ends cost no
  // more than the distance to the nearer end. Most of the time a channel has one packet waiting
  // or none: that one is kept inline (`solo_`), so the common hop touches no vector storage
  // (a separate line per channel, which was the costliest load of the arbitration).
  class WaitQueue {
   public:
    bool empty() const { return n_ == 0; }
    std::size_t size() const { return n_; }
    const Waiting* begin() const { return solo_.packet != kNil ? &solo_ : v_.data() + head_; }
    const Waiting* end() const { return solo_.packet != kNil ? &solo_ + 1 : v_.data() + v_.size(); }
    const Waiting& front() const { return solo_.packet != kNil ? solo_ : v_[head_]; }
    void pop_front() {
      --n_;
      if (solo_.packet != kNil) {
        solo_.packet = kNil;
      } else if (++head_ == v_.size()) {
        v_.clear();
        head_ = 0;
      } else if (head_ > 64 && head_ * 2 > v_.size()) {
        v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
    }
    void insert(const Waiting& w) { insert(w.seq, w.packet); }
    void insert(std::uint64_t seq, std::uint32_t packet) {
      if (n_++ == 0) {
        solo_.seq = seq;
        solo_.packet = packet;
        return;
      }
      if (solo_.packet != kNil) {  // a second one: both go to the vector (empty, head_ 0)
        v_.push_back(solo_);
        solo_.packet = kNil;
      }
      const Waiting w(seq, packet);
      if (!before(w, v_.back())) {
        v_.push_back(w);
        return;
      }
      const auto first = v_.begin() + static_cast<std::ptrdiff_t>(head_);
      const auto pos = std::upper_bound(first, v_.end(), w, before);
      if (head_ > 0 && pos - first < v_.end() - pos) {  // shift the front part down a slot
        std::move(first, pos, first - 1);
        --head_;
        *(pos - 1) = w;
      } else {
        v_.insert(pos, w);
      }
    }
    void clear() {
      v_.clear();
      head_ = 0;
      n_ = 0;
      solo_.packet = kNil;
    }

   private:
    static bool before(const Waiting& a, const Waiting& b) { return a.seq < b.seq; }
    std::vector<Waiting> v_;
    std::uint32_t head_ = 0;
    std::uint32_t n_ = 0;  // packets waiting (solo_ or the vector's from head_)
    Waiting solo_{0, kNil};  // the only packet waiting, or packet kNil
  };
  // Packets set aside for room in one buffer, bound for one channel; `requeued`: bytes of them
  // sent back to the channel and not yet taken or set aside again (room already promised).
  // Per dateline class: a packet of one class never waits behind one of the other (that would
  // join the two classes' buffers into one cycle again and deadlock a ring).
  struct Parked {
    std::uint32_t channel;
    WaitQueue queue[2];
    Bytes requeued[2] = {0, 0};
  };
  // What arbitration reads on every hop is in the first cache line; wake-ups, statistics and the
  // durations of packets of other sizes in the next. A hop touches few lines: callgrind's cache
  // model put the old layout (160 bytes, fields in no order, with the rest of the old engine) at
  // 15.4 first-level misses per packet-hop on 8x8 uniform traffic, the new engine at 8.2.
  struct alignas(64) Channel {
    std::int64_t free_fp = 0;  // end of its last transmission
    WaitQueue waiting;
    bool whole = false;  // a mesh or exchange channel: starts packets at whole cycles only
    bool held = false;   // an exchange message holds this send port, waiting for its receiver
    bool dirty = false;
    // second line
    // The cycle it is to be looked at again (it is busy and packets wait), or kNever: a channel
    // nobody waits for costs no event when its transmission ends.
    Cycles wake_at = kNever;
    Cycles latency = 0;
    std::int64_t busy_fp = 0;
    Bytes bytes = 0;              // statistics (copied into stats_ by stats())
    std::uint64_t transfers = 0;
    double bytes_per_cycle = 0;
    std::int64_t min_fp = 0;    // least time a packet holds it: a cycle, or a flit's time on a chip link or AFI bus
    Bytes memo_bytes = 0;       // the size of the last packet its duration was worked out for
    std::int64_t memo_fp = 0;
    Bytes read_memo_bytes = 0;  // the last read of a packet into this channel, at that rate
    double read_memo_rate = 0;
    std::int64_t read_memo_fp = 0;
  };
  // Room a granted packet gives back to the buffer it leaves, when its tail leaves: 16 bytes,
  // the dateline class in the top bit of the cycle (no cycle comes near 2^63).
  struct Release {
    std::uint64_t at_cls;
    Bytes bytes;
    static std::uint64_t pack(Cycles at, std::uint8_t cls) { return at | std::uint64_t{cls} << 63; }
    Cycles at() const { return at_cls & ~kClsBit; }
    std::uint8_t cls() const { return static_cast<std::uint8_t>(at_cls >> 63); }
  };
  static constexpr std::uint64_t kClsBit = std::uint64_t{1} << 63;
  // First line: what a grant reads and writes (room, the read port, room coming back).
  struct alignas(64) Buffer {
    // Room per dateline class (capacity less what is in it) as of the last settle(): releases
    // due later are not yet counted. Kept as room, not use, so the hot line needs no capacity.
    std::int64_t room[2] = {0, 0};
    // A buffer is read by one packet at a time (a router input port has one crossbar input):
    // the end of the last read.
    std::int64_t read_free_fp = 0;
    Cycles release_min = kNever;    // the earliest of `releases`
    std::vector<Release> releases;
    std::uint32_t parked_room = 0;  // packets set aside for room here
    // second line
    Bytes capacity = 0;
    Bytes used(std::uint8_t cls) const { return capacity - static_cast<Bytes>(room[cls]); }  // as of settle()
    Cycles room_wake_at = kNever, read_wake_at = kNever;  // pending events for what is set aside
    // Packets set aside until this buffer has room for them, per channel they wait for (oldest
    // first), and packets in this buffer set aside until its read port is free. A channel then
    // never looks again at a packet that cannot go: a link with a thousand packets bound for full
    // buffers costs nothing per grant.
    std::vector<Parked> parked_for_room;
    std::vector<std::pair<std::uint32_t, Waiting>> parked_for_read;
    // Its read port moves a packet at least as fast as the packet came in (its fastest feeding
    // channel): a packet leaving into a slower channel (a core's ejection port) holds it no longer.
    double read_bytes_per_cycle = 0;
  };
  // A hop of a route: 8 bytes. Every pair of a chip's cores keeps its route (kPairRouteCores),
  // and uniform traffic on an 8x8 mesh reads them all: at 32 bytes a step (with the step's times
  // worked out once per route) the 4,032 routes took about 1 MB with allocator padding, the size
  // of the second-level cache; now 235 KB. Times come from per-channel memos instead (a
  // channel's packets mostly have one size). The buffer the packet is read from is the step
  // before's; the flag says that buffer's read port is faster than this channel (then reading
  // takes its own, shorter time). With the packet's copy of its step (Packet) this made 8x8
  // uniform traffic 6-12% faster at 50-90% of saturation (README, "Speed").
  struct Step {
    std::uint32_t channel_flag;  // the channel, kReadsFaster set as above
    std::uint32_t buffer_cls;    // where the packet waits after the channel (kStepEnd at the end), dateline class in bit 31
  };
  static_assert(sizeof(Step) == 8);
  static constexpr std::uint32_t kLow31 = 0x7FFFFFFFu;
  static constexpr std::uint32_t kStepEnd = kLow31;  // no buffer after the channel
  static constexpr std::uint32_t kReadsFaster = 0x80000000u;
  static std::uint32_t channel_of(const Step& s) { return s.channel_flag & kLow31; }
  static bool reads_faster(const Step& s) { return (s.channel_flag & kReadsFaster) != 0; }
  // of a step's buffer_cls
  static std::uint32_t buffer_of(std::uint32_t buffer_cls) { return buffer_cls & kLow31; }
  static std::uint8_t cls_of(std::uint32_t buffer_cls) { return static_cast<std::uint8_t>(buffer_cls >> 31); }
  // A route worked out once and shared by the messages that point into its hops.
  struct Route {
    bool coupled = false;
    Bytes packet_bytes = 0;  // of its packets
    std::vector<Step> hops;
  };
  struct Message {
    std::uint64_t id = 0;
    std::uint32_t src = 0;
    Bytes unsent = 0;           // bytes not yet cut into packets
    Bytes packet_bytes = 0;
    std::uint32_t outstanding = 0;  // packets not yet delivered
    Cycles arrival = 0;
    bool coupled = false;
    std::uint64_t order = 0;    // injection order
    std::uint32_t next = kNil;  // source queue
    const Step* route = nullptr;  // its hops: `own_route`'s, a `pair_routes_` entry's or a `routes_` slot's
    std::uint32_t hops = 0;
    std::uint32_t route_slot = kNil;  // the `routes_` slot it uses
    Route own_route;
  };
  // The step it is at and the buffer it is in are copied in: an arrival reads the packet, then
  // the channel, and going through the route in between put a third dependent load (mostly a
  // cache miss) on every hop.
  struct alignas(64) Packet {  // one cache line
    Cycles ready;  // the cycle it reached the channel it waits for
    std::uint64_t seq;  // its age: packets are numbered as their sources put them up
    const Step* route;  // the message's route (its buffer does not move while packets live)
    Bytes bytes;
    Step step;      // route[hop]
    std::uint32_t prev_buffer_cls;  // route[hop - 1].buffer_cls: the buffer it is in (kStepEnd: none, as at hop 0)
    std::uint32_t msg;
    std::uint32_t hop;
    std::uint32_t hops;
    std::uint32_t requeued_from;  // the buffer whose room it was sent back for, or kNoBuffer
    bool last;     // the message's last packet
    bool coupled;  // its message's
  };
  // Events exist only where someone waits: a channel is woken when it frees only if packets wait
  // for it, a buffer when room comes back or its read port frees only if packets were set aside
  // for that. Room itself comes back by settle() at the cycle the tail leaves.
  enum class Kind : std::uint8_t { Inject, Ready, ChannelFree, RoomBack, ReadFree };
  // 8 bytes, one word (see Waiting): a (Inject: message; Ready: packet; ChannelFree: channel;
  // RoomBack, ReadFree: buffer) in the low half, the kind above it.
  struct Event {
    std::uint64_t bits;
    static Event of(std::uint32_t a, Kind k) { return {std::uint64_t{a} | std::uint64_t{static_cast<std::uint8_t>(k)} << 32}; }
    std::uint32_t a() const { return static_cast<std::uint32_t>(bits); }
    Kind kind() const { return static_cast<Kind>(bits >> 32); }
  };

  // Works out r for (src, dst); throws as NetTopology::route does.
  void fill(Route& r, std::uint32_t src, std::uint32_t dst) const;
  // Recently used routes from AFIs, direct-mapped by (src, dst): a collective's rings repeat
  // their pairs, and a route across chips is a walk over the dimensions. A fixed size, so a run
  // with millions of pairs holds no more than this. Messages point into an entry and count
  // themselves as its users; an entry with users is not replaced (a message whose slot is taken
  // by another pair keeps its own copy). Cores' routes are not cached here: a core talks to many
  // peers (a re-layout to most of its chip), and its routes are short to work out.
  struct CachedRoute : Route {
    std::uint64_t key = ~std::uint64_t{0};
    std::uint32_t users = 0;  // live messages pointing at `hops`
  };
  // 32768: the AFI pairs of a 64-chip torus (a few hundred in use at once) rarely share a slot;
  // with 4096 the collective engines' messages of one packet each (forwarding by packet) often
  // found their pair's slot in use and worked out a route of their own (3% of the instructions
  // of a 2 MiB all-reduce on ace-torus-64).
  static constexpr std::size_t kRouteCacheSlots = 32768;
  // The slot holding the route from src to dst, or kNil when the pair's slot is in use by another.
  std::uint32_t cached_route(std::uint32_t src, std::uint32_t dst);
  // On a small system (at most kPairRouteCores cores) every pair of cores has its route worked
  // out once and kept, and its messages point at it: a chip of 64 cores keeps 4032 routes. Their
  // steps sit side by side in blocks that never move (no allocator padding between routes).
  static constexpr std::uint32_t kPairRouteCores = 256;
  struct PairRoute {
    const Step* hops = nullptr;  // null until known; then never changes: messages point into it
    std::uint32_t count = 0;
    bool coupled = false;
    Bytes packet_bytes = 0;
  };
  const PairRoute& pair_route(std::uint32_t src, std::uint32_t dst);
  static constexpr std::size_t kStepBlock = 8192;  // steps per block of pair_steps_
  std::vector<std::unique_ptr<Step[]>> pair_steps_;
  Step* pair_next_ = nullptr;        // the first free step of the last block
  std::size_t pair_steps_left_ = 0;  // free steps from there

  void process_cycle(Cycles t);
  // Puts grants_ (two or more) in age order (lo, hi: the least and greatest seq among them).
  void order_grants(std::uint64_t lo, std::uint64_t hi);
  void start_message(std::uint32_t m, Cycles t);
  void next_packet(std::uint32_t src, Cycles t);
  TESSERA_HOT_INLINE void wait_at(std::uint32_t packet, Cycles ready);
  // Puts a new packet at the first hop of its route, or moves pk to the next (the step it
  // leaves names the buffer it is then in).
  static void first_hop(Packet& pk) {
    pk.prev_buffer_cls = kStepEnd;
    pk.hop = 0;
    pk.step = pk.route[0];
  }
  static void next_hop(Packet& pk) {
    pk.prev_buffer_cls = pk.step.buffer_cls;
    pk.step = pk.route[++pk.hop];
  }
  TESSERA_HOT_INLINE void mark(std::uint32_t channel);
  TESSERA_HOT_INLINE void try_grant(std::uint32_t channel, Cycles t);
  // The first cycle in which channel ch can start a packet on something free at `fp`: the cycle
  // it frees in for a chip link or AFI bus (a start mid-cycle), the next whole cycle for a mesh
  // or exchange channel.
  static Cycles free_cycle(const Channel& ch, std::int64_t fp) {
    return ch.whole ? ceil_cycles(fp) : floor_cycles(fp);
  }
  TESSERA_HOT_INLINE bool fits(const Packet& p, Cycles t);
  void settle(Buffer& b, Cycles t);
  TESSERA_HOT_INLINE void release(std::uint32_t buffer, Cycles at, std::uint8_t cls, Bytes bytes);
  void wake_channel(std::uint32_t channel, Cycles at);
  void wake_for_room(std::uint32_t buffer, Cycles at);
  TESSERA_HOT_INLINE bool readable(const Packet& p, Cycles t) const;
  void park_for_room(std::uint32_t channel, const Waiting& w);
  void park_for_read(std::uint32_t channel, const Waiting& w);
  void unpark_for_room(std::uint32_t buffer, Cycles t);
  void unpark_for_read(std::uint32_t buffer);
  void requeue(std::uint32_t channel, const Waiting& w);
  Parked& parked(std::uint32_t buffer, std::uint32_t channel);
  TESSERA_HOT_INLINE void grant(std::uint32_t packet, Cycles ready, std::uint32_t channel, Cycles t);
  void grant_coupled(std::uint32_t packet, Cycles t);
  void finish(std::uint32_t message);
  std::int64_t duration_fp(Channel& ch, Bytes bytes) const;
  // p bytes at r bytes per cycle, in 1/kFrac cycle, rounded up.
  static std::int64_t wire_fp(double bytes_per_cycle, Bytes bytes);
  // When a head that started on `ch` at 0 is ready at the next channel (see grant()).
  static std::int64_t head_after(const Channel& ch, std::int64_t dur_fp, std::int64_t next_fp);
  // How long reading `bytes` out of buffer `from` into channel `ch` holds the buffer's read port.
  std::int64_t read_fp(Channel& ch, const Buffer& from, Bytes bytes) const;

  NetTopology topo_;
  mutable std::vector<Hop> scratch_;  // fill()'s route from the topology
  TraceRecorder* trace_;
  TransportListener* listener_ = nullptr;
  std::vector<Channel> channels_;
  std::vector<ChannelStats> stats_;  // by channel (kept apart: the hot loop does not touch names)
  std::vector<Buffer> buffers_;
  IndexPool<Message> messages_;
  IndexPool<Packet> packets_;
  // per source core: its queue of messages (head, tail) and whether a packet of it is at the
  // first channel (a source sends one packet at a time)
  std::vector<std::uint32_t> queue_head_, queue_tail_;
  std::vector<std::uint8_t> source_busy_;  // bytes, not bits: read on every packet
  EventWheel<Event> wheel_;
  std::vector<Event> now_events_;
  struct Injected {  // a message injected this cycle, with its sort key copied out of the pool
    std::uint32_t src;
    std::uint32_t message;
    std::uint64_t order;
  };
  std::vector<Injected> injects_;
  std::vector<std::uint32_t> dirty_;
  struct Grant {  // a channel to arbitrate, keyed by its oldest waiting packet (copied as Waiting is)
    std::uint64_t seq;
    std::uint32_t channel;
    Grant() = default;
    Grant(const Grant& o) : seq(o.seq), channel(o.channel) {}
    Grant& operator=(const Grant& o) {
      seq = o.seq;
      channel = o.channel;
      return *this;
    }
  };
  std::vector<Grant> grants_;
  static constexpr std::uint64_t kOrderWindow = 4096;  // spread of ages order_grants() orders by bitmap: 64 words
  std::array<std::uint64_t, kOrderWindow / 64> order_bits_{};  // all zero between calls
  std::array<std::uint32_t, kOrderWindow> order_channel_{};    // by age - lo: the grant's channel
  std::vector<CachedRoute> routes_;  // kRouteCacheSlots
  std::vector<PairRoute> pair_routes_;  // src * cores_ + dst, when cores_ <= kPairRouteCores
  Route pair_scratch_;                  // pair_route()'s route before it is copied into a block
  std::uint32_t cores_ = 0;          // endpoints below this are cores
  std::uint64_t order_ = 0, seq_ = 0, hops_ = 0, live_packets_ = 0;
};

}  // namespace tessera::sim

#undef TESSERA_HOT_INLINE
