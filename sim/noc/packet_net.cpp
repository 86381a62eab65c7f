#include "sim/noc/packet_net.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "sim/results/trace.h"

namespace tessera::sim {

PacketNetwork::PacketNetwork(const Config& cfg, TraceRecorder* trace, bool with_cores)
    : topo_(cfg, with_cores), trace_(trace) {
  channels_.reserve(topo_.channels().size());
  stats_.reserve(topo_.channels().size());
  buffers_.reserve(topo_.buffers().size());
  for (const ChannelSpec& s : topo_.channels()) {
    Channel ch;
    ch.bytes_per_cycle = s.bytes_per_cycle;
    ch.latency = s.latency_cycles;
    // a mesh or exchange channel moves a flit of its width a cycle; a chip link or AFI bus a
    // flit of system.flit_bytes in its bytes' time, so a packet holds it at least that long
    ch.whole = s.whole_cycles;
    ch.min_fp = ch.whole ? kFrac
                         : std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(
                                                         static_cast<double>(cfg.system.flit_bytes) * kFrac / s.bytes_per_cycle)));
    channels_.push_back(std::move(ch));
    stats_.emplace_back();
    stats_.back().name = s.name;
  }
  // a step keeps a channel and a buffer in 31 bits each
  if (topo_.channels().size() >= kLow31 || topo_.buffers().size() >= kLow31)
    throw std::logic_error("PacketNetwork: more than 2^31 - 1 channels or buffers");
  for (const BufferSpec& s : topo_.buffers()) {
    Buffer b;
    b.capacity = s.capacity_bytes;
    b.room[0] = b.room[1] = static_cast<std::int64_t>(b.capacity);
    b.read_bytes_per_cycle = s.fill_bytes_per_cycle;
    buffers_.push_back(std::move(b));
  }
  const std::uint32_t sources = topo_.endpoints();
  queue_head_.assign(sources, kNil);
  queue_tail_.assign(sources, kNil);
  source_busy_.assign(sources, 0);
  routes_.resize(kRouteCacheSlots);
  cores_ = cfg.total_cores();
  if (with_cores && cores_ <= kPairRouteCores) pair_routes_.resize(std::size_t{cores_} * cores_);
}

void PacketNetwork::reset() {
  for (Channel& ch : channels_) {
    ch.free_fp = ch.busy_fp = 0;
    ch.bytes = ch.transfers = 0;
    ch.held = ch.dirty = false;
    ch.wake_at = kNever;
    ch.waiting.clear();
  }
  for (ChannelStats& st : stats_) st.bytes = st.busy_cycles = st.transfers = 0;  // and the channels' own, above
  for (CachedRoute& r : routes_) r.users = 0;  // its messages are gone
  for (Buffer& b : buffers_) {
    b.room[0] = b.room[1] = static_cast<std::int64_t>(b.capacity);
    b.read_free_fp = 0;
    b.releases.clear();
    b.release_min = b.room_wake_at = b.read_wake_at = kNever;
    b.parked_room = 0;
    b.parked_for_room.clear();
    b.parked_for_read.clear();
  }
  messages_.clear();
  packets_.clear();
  std::fill(queue_head_.begin(), queue_head_.end(), kNil);
  std::fill(queue_tail_.begin(), queue_tail_.end(), kNil);
  std::fill(source_busy_.begin(), source_busy_.end(), 0);
  wheel_.clear();
  dirty_.clear();
  order_ = seq_ = hops_ = live_packets_ = 0;
}

void PacketNetwork::inject(std::uint64_t message, std::uint32_t src, std::uint32_t dst, Bytes bytes,
                           Cycles when) {
  const std::uint32_t m = messages_.acquire();
  Message& msg = messages_[m];
  msg.id = message;
  msg.src = src;
  msg.route_slot = src >= cores_ ? cached_route(src, dst) : kNil;
  Bytes pb = 0;
  if (msg.route_slot == kNil && !pair_routes_.empty() && src < cores_ && dst < cores_) {
    const PairRoute& r = pair_route(src, dst);
    msg.route = r.hops;
    msg.hops = r.count;
    msg.coupled = r.coupled;
    pb = r.packet_bytes;
  } else {
    Route* r = nullptr;
    if (msg.route_slot != kNil) {
      ++routes_[msg.route_slot].users;
      r = &routes_[msg.route_slot];
    } else {  // its own copy
      fill(msg.own_route, src, dst);
      r = &msg.own_route;
    }
    msg.route = r->hops.data();
    msg.hops = static_cast<std::uint32_t>(r->hops.size());
    msg.coupled = r->coupled;
    pb = r->packet_bytes;
  }
  msg.packet_bytes = msg.coupled || pb == 0 ? bytes : pb;
  msg.unsent = bytes;
  msg.outstanding = 0;
  msg.arrival = 0;
  msg.next = kNil;
  msg.order = order_++;
  wheel_.push(when, Event::of(m, Kind::Inject));
}

void PacketNetwork::fill(Route& r, std::uint32_t src, std::uint32_t dst) const {
  scratch_.clear();
  r.hops.clear();
  r.coupled = topo_.route(src, dst, scratch_);
  r.packet_bytes = topo_.packet_bytes(src, dst);
  for (std::size_t i = 0; i < scratch_.size(); ++i) {
    const Hop& h = scratch_[i];
    Step st;
    st.channel_flag = h.channel;
    if (i > 0 && scratch_[i - 1].buffer != kNoBuffer &&
        buffers_[scratch_[i - 1].buffer].read_bytes_per_cycle > channels_[h.channel].bytes_per_cycle)
      st.channel_flag |= kReadsFaster;
    st.buffer_cls = (h.buffer == kNoBuffer ? kStepEnd : h.buffer) | std::uint32_t{h.cls} << 31;
    r.hops.push_back(st);
  }
}

std::uint32_t PacketNetwork::cached_route(std::uint32_t src, std::uint32_t dst) {
  const std::uint64_t key = std::uint64_t{src} << 32 | dst;
  const auto slot = static_cast<std::uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 49);  // the top 15 bits: 32768 slots
  CachedRoute& e = routes_[slot];
  if (e.key == key) return slot;
  if (e.users > 0) return kNil;
  e.key = ~std::uint64_t{0};  // not valid until the route is whole (route() may throw)
  fill(e, src, dst);
  e.key = key;
  return slot;
}

const PacketNetwork::PairRoute& PacketNetwork::pair_route(std::uint32_t src, std::uint32_t dst) {
  PairRoute& e = pair_routes_[std::size_t{src} * cores_ + dst];
  if (e.hops) return e;
  fill(pair_scratch_, src, dst);  // may throw: the entry stays unknown
  const std::size_t n = pair_scratch_.hops.size();
  if (n > pair_steps_left_) {
    const std::size_t size = std::max(n, kStepBlock);
    pair_steps_.push_back(std::make_unique<Step[]>(size));
    pair_next_ = pair_steps_.back().get();
    pair_steps_left_ = size;
  }
  Step* at = pair_next_;
  std::copy(pair_scratch_.hops.begin(), pair_scratch_.hops.end(), at);
  pair_next_ += n;
  pair_steps_left_ -= n;
  e.hops = at;
  e.count = static_cast<std::uint32_t>(n);
  e.coupled = pair_scratch_.coupled;
  e.packet_bytes = pair_scratch_.packet_bytes;
  return e;
}

void PacketNetwork::advance(Cycles t) {
  while (!wheel_.empty()) {
    const Cycles next = wheel_.next();
    if (next > t) break;
    process_cycle(next);
  }
}

// All events of cycle t first (channels and buffer space freed, heads arrived, messages
// injected), then the arbitration of every channel they touched, in channel order; grants that
// cause more events in the same cycle (zero-latency hops) go round again.
void PacketNetwork::process_cycle(Cycles t) {
  for (;;) {
    now_events_.clear();
    wheel_.take(t, now_events_);
    if (now_events_.empty() && dirty_.empty()) break;
    injects_.clear();
    for (const Event& e : now_events_) {
      const std::uint32_t a = e.a();
      if (e.kind() == Kind::Ready) {  // most events: a test the predictor gets right, not a jump table
        wait_at(a, t);
        continue;
      }
      switch (e.kind()) {
        case Kind::Inject: {
          Injected& x = injects_.emplace_back();
          x.src = messages_[a].src;
          x.message = a;
          x.order = messages_[a].order;
          break;
        }
        case Kind::Ready: break;  // taken above
        case Kind::ChannelFree:
          if (channels_[a].wake_at == t) channels_[a].wake_at = kNever;
          mark(a);
          break;
        case Kind::RoomBack:
          if (buffers_[a].room_wake_at == t) buffers_[a].room_wake_at = kNever;
          unpark_for_room(a, t);
          break;
        case Kind::ReadFree:
          if (buffers_[a].read_wake_at == t) buffers_[a].read_wake_at = kNever;
          unpark_for_read(a);
          break;
      }
    }
    auto by_source = [](const Injected& a, const Injected& b) {
      return a.src != b.src ? a.src < b.src : a.order < b.order;
    };
    // Often already in order: checking first costs one pass.
    if (injects_.size() > 1 && !std::is_sorted(injects_.begin(), injects_.end(), by_source))
      std::sort(injects_.begin(), injects_.end(), by_source);
    for (const Injected& x : injects_) start_message(x.message, t);
    // Channels are arbitrated oldest first too, by the oldest packet waiting for each (whatever
    // order their events came in): when two channels want one buffer's read port in the same
    // cycle, the one with the older packet gets it.
    grants_.clear();
    std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
    for (std::uint32_t c : dirty_) {
      Channel& ch = channels_[c];
      ch.dirty = false;
      if (!ch.waiting.empty()) {
        Grant& g = grants_.emplace_back();
        g.seq = ch.waiting.front().seq;
        g.channel = c;
        lo = std::min(lo, g.seq);
        hi = std::max(hi, g.seq);
      }
    }
    dirty_.clear();
    if (grants_.size() > 1) order_grants(lo, hi);
    for (const Grant& g : grants_) try_grant(g.channel, t);
  }
}

// grants_ by the age of their packets, lo and hi the oldest and youngest. No two share a
// packet, so the order is total. A cycle has a dozen or a few dozen, in no order (they arrive in
// runs from the grants of several earlier cycles), and their packets are mostly a few hundred
// apart in age: they are marked in a bitmap of ages and read back in order. A comparison sort of
// them mispredicted about a branch per grant and took about a tenth of the time on uniform
// traffic (measured by sorting every cycle's grants twice); a wider spread of ages (a packet
// stuck behind a hot spot while thousands pass) falls back to it.
void PacketNetwork::order_grants(std::uint64_t lo, std::uint64_t hi) {
  const std::size_t n = grants_.size();
  if (hi - lo >= kOrderWindow) {
    std::sort(grants_.begin(), grants_.end(), [](const Grant& a, const Grant& b) { return a.seq < b.seq; });
    return;
  }
  std::uint64_t used = 0;  // which words of order_bits_ have a bit set (the window is 64 words)
  for (const Grant& g : grants_) {
    const std::uint64_t age = g.seq - lo;
    order_bits_[age / 64] |= std::uint64_t{1} << (age % 64);
    used |= std::uint64_t{1} << (age / 64);
    order_channel_[age] = g.channel;
  }
  std::size_t k = 0;
  while (used) {
    const auto w = static_cast<std::uint64_t>(__builtin_ctzll(used));
    used &= used - 1;
    std::uint64_t bits = order_bits_[w];
    order_bits_[w] = 0;
    while (bits) {
      const std::uint64_t age = w * 64 + static_cast<std::uint64_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
      Grant& g = grants_[k++];
      g.seq = lo + age;
      g.channel = order_channel_[age];
    }
  }
  // two grants of one packet would have been one bit: a packet waits at one channel at a time
  if (k != n) throw std::logic_error("PacketNetwork: a packet waiting at two channels at once");
}

void PacketNetwork::start_message(std::uint32_t m, Cycles t) {
  const std::uint32_t src = messages_[m].src;
  if (queue_tail_[src] == kNil) queue_head_[src] = m;
  else messages_[queue_tail_[src]].next = m;
  queue_tail_[src] = m;
  if (!source_busy_[src]) next_packet(src, t);
}

// The source's next packet goes to its first channel (a source sends one packet at a time, in
// the order its messages were injected).
void PacketNetwork::next_packet(std::uint32_t src, Cycles t) {
  const std::uint32_t m = queue_head_[src];
  if (m == kNil) {
    source_busy_[src] = 0;
    return;
  }
  Message& msg = messages_[m];
  const std::uint32_t p = packets_.acquire();
  Packet& pk = packets_[p];
  pk.msg = m;
  pk.requeued_from = kNoBuffer;
  pk.route = msg.route;
  first_hop(pk);
  pk.hops = msg.hops;
  pk.coupled = msg.coupled;
  pk.bytes = std::min(msg.packet_bytes, msg.unsent);
  pk.seq = seq_++;
  msg.unsent -= pk.bytes;
  pk.last = msg.unsent == 0;
  ++msg.outstanding;
  ++live_packets_;
  if (pk.last) {
    queue_head_[src] = msg.next;
    if (queue_head_[src] == kNil) queue_tail_[src] = kNil;
  }
  source_busy_[src] = 1;
  wait_at(p, t);
}

void PacketNetwork::wait_at(std::uint32_t p, Cycles ready) {
  Packet& pk = packets_[p];
  pk.ready = ready;
  const std::uint32_t c = channel_of(pk.step);
  channels_[c].waiting.insert(pk.seq, p);
  // a busy channel is looked at again when its transmission ends; a held one when the exchange
  // message holding it has gone
  const Channel& ch = channels_[c];
  if (ch.held) return;
  const Cycles free = free_cycle(ch, ch.free_fp);
  if (free <= ready) mark(c);
  else wake_channel(c, free);
}

void PacketNetwork::wake_channel(std::uint32_t c, Cycles at) {
  Channel& ch = channels_[c];
  if (ch.wake_at <= at) return;  // an earlier wake looks again and comes back here if need be
  ch.wake_at = at;
  wheel_.push(at, Event::of(c, Kind::ChannelFree));
}

void PacketNetwork::wake_for_room(std::uint32_t b, Cycles at) {
  Buffer& buf = buffers_[b];
  if (buf.room_wake_at <= at) return;
  buf.room_wake_at = at;
  wheel_.push(at, Event::of(b, Kind::RoomBack));
}

// Room whose tail left by cycle t comes back.
void PacketNetwork::settle(Buffer& b, Cycles t) {
  if (b.release_min > t) return;
  Cycles next = kNever;
  for (std::size_t i = 0; i < b.releases.size();) {
    const Release& r = b.releases[i];
    if (r.at() <= t) {
      b.room[r.cls()] += static_cast<std::int64_t>(r.bytes);
      b.releases[i] = b.releases.back();
      b.releases.pop_back();
    } else {
      next = std::min(next, r.at());
      ++i;
    }
  }
  b.release_min = next;
}

void PacketNetwork::release(std::uint32_t b, Cycles at, std::uint8_t cls, Bytes bytes) {
  Buffer& buf = buffers_[b];
  Release& r = buf.releases.emplace_back();
  r.at_cls = Release::pack(at, cls);
  r.bytes = bytes;
  buf.release_min = std::min(buf.release_min, at);
  if (buf.parked_room > 0) wake_for_room(b, at);
}

void PacketNetwork::mark(std::uint32_t c) {
  if (channels_[c].dirty) return;
  channels_[c].dirty = true;
  dirty_.push_back(c);
}

bool PacketNetwork::fits(const Packet& pk, Cycles t) {
  const std::uint32_t buffer = buffer_of(pk.step.buffer_cls);
  if (buffer == kStepEnd) return true;
  Buffer& b = buffers_[buffer];
  const auto need = static_cast<std::int64_t>(pk.bytes);
  const std::uint8_t cls = cls_of(pk.step.buffer_cls);
  if (need <= b.room[cls]) return true;
  settle(b, t);
  return need <= b.room[cls];
}

// The oldest waiting packet that can go takes the channel; a packet that cannot (no room behind
// the channel, or its buffer is being read) is set aside until that changes.
void PacketNetwork::try_grant(std::uint32_t c, Cycles t) {
  Channel& ch = channels_[c];
  const std::int64_t t_fp = static_cast<std::int64_t>(t) * kFrac;  // ceil(x / kFrac) <= t: x <= t_fp
  // a chip link or AFI bus that frees within cycle t takes its next packet there, mid-cycle (one
  // faster than a packet a cycle carries more than one a cycle); a mesh or exchange channel
  // looks again at the first whole cycle it is free
  const std::int64_t last_fp = ch.whole ? t_fp : t_fp + kFrac - 1;
  while (!ch.held && ch.free_fp <= last_fp && !ch.waiting.empty()) {
    const Waiting w = ch.waiting.front();
    ch.waiting.pop_front();
    Packet& pk = packets_[w.packet];
    if (pk.requeued_from != kNoBuffer) {  // the room promised to it is its own again
      parked(pk.requeued_from, c).requeued[cls_of(pk.step.buffer_cls)] -= pk.bytes;
      pk.requeued_from = kNoBuffer;
    }
    if (!fits(pk, t)) {
      park_for_room(c, w);
      continue;
    }
    if (!readable(pk, t)) {
      park_for_read(c, w);
      continue;
    }
    if (pk.coupled) {
      if (pk.hop == 0) {  // hold the send port, then contend for the receive port
        ch.held = true;
        next_hop(pk);
        wait_at(w.packet, t);
      } else {
        grant_coupled(w.packet, t);
      }
      continue;
    }
    grant(w.packet, pk.ready, c, t);
  }
  if (!ch.held && !ch.waiting.empty()) wake_channel(c, free_cycle(ch, ch.free_fp));
}

bool PacketNetwork::readable(const Packet& pk, Cycles t) const {
  const std::uint32_t b = buffer_of(pk.prev_buffer_cls);
  return b == kStepEnd || free_cycle(channels_[channel_of(pk.step)], buffers_[b].read_free_fp) <= t;
}

PacketNetwork::Parked& PacketNetwork::parked(std::uint32_t b, std::uint32_t c) {
  auto& lists = buffers_[b].parked_for_room;
  for (Parked& p : lists)
    if (p.channel == c) return p;
  lists.push_back(Parked{c, {}, {0, 0}});
  return lists.back();
}

void PacketNetwork::park_for_room(std::uint32_t c, const Waiting& w) {
  const Packet& pk = packets_[w.packet];
  const std::uint32_t b = buffer_of(pk.step.buffer_cls);
  parked(b, c).queue[cls_of(pk.step.buffer_cls)].insert(w);
  Buffer& buf = buffers_[b];
  ++buf.parked_room;
  if (buf.release_min != kNever) wake_for_room(b, buf.release_min);
  // else: room comes back only once a packet in the buffer is granted; release() wakes it then
}

void PacketNetwork::park_for_read(std::uint32_t c, const Waiting& w) {
  const Packet& pk = packets_[w.packet];
  const std::uint32_t b = buffer_of(pk.prev_buffer_cls);  // readable(): there is one
  Buffer& buf = buffers_[b];
  buf.parked_for_read.push_back({c, w});
  const Cycles at = free_cycle(channels_[c], buf.read_free_fp);
  if (buf.read_wake_at > at) {
    buf.read_wake_at = at;
    wheel_.push(at, Event::of(b, Kind::ReadFree));
  }
}

void PacketNetwork::requeue(std::uint32_t c, const Waiting& w) {
  channels_[c].waiting.insert(w);
  mark(c);
}

// Room came back: per channel, the oldest packets set aside that the room takes (as if each
// channel had it all, less what was already sent back) wait for their channel again.
void PacketNetwork::unpark_for_room(std::uint32_t b, Cycles t) {
  Buffer& buf = buffers_[b];
  settle(buf, t);
  for (Parked& p : buf.parked_for_room) {
    for (std::uint8_t cls = 0; cls < 2; ++cls) {
      WaitQueue& q = p.queue[cls];
      while (!q.empty()) {
        const Waiting w = q.front();
        Packet& pk = packets_[w.packet];
        if (static_cast<std::int64_t>(p.requeued[cls] + pk.bytes) > buf.room[cls]) break;
        p.requeued[cls] += pk.bytes;
        pk.requeued_from = b;
        q.pop_front();
        --buf.parked_room;
        requeue(p.channel, w);
      }
    }
  }
  if (buf.parked_room > 0 && buf.release_min != kNever) wake_for_room(b, buf.release_min);
}

void PacketNetwork::unpark_for_read(std::uint32_t b) {
  auto& parked = buffers_[b].parked_for_read;
  for (const auto& [c, w] : parked) requeue(c, w);
  parked.clear();
}

std::int64_t PacketNetwork::wire_fp(double bytes_per_cycle, Bytes bytes) {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(bytes) * kFrac / bytes_per_cycle));
}

// The head reaches the next channel after this one's latency, but takes it no earlier than the
// next channel could stream the packet without waiting for its tail. The tail leaves at
// start + duration; the next channel is counted as holding the packet at least a cycle (heads
// move at whole cycles: a shorter hold would round a head a cycle later). Counting otherwise made
// fewer bytes, or a faster next link, arrive a cycle later. From the start of the transmission.
std::int64_t PacketNetwork::head_after(const Channel& ch, std::int64_t dur_fp, std::int64_t next_fp) {
  const std::int64_t lat_fp = static_cast<std::int64_t>(ch.latency) * kFrac;
  return std::max(lat_fp, dur_fp + lat_fp - next_fp);
}

std::int64_t PacketNetwork::duration_fp(Channel& ch, Bytes bytes) const {
  if (bytes != ch.memo_bytes) {
    ch.memo_bytes = bytes;
    ch.memo_fp = wire_fp(ch.bytes_per_cycle, bytes);
  }
  return ch.memo_fp;
}

std::int64_t PacketNetwork::read_fp(Channel& ch, const Buffer& from, Bytes bytes) const {
  const double rate = std::max(from.read_bytes_per_cycle, ch.bytes_per_cycle);
  if (bytes != ch.read_memo_bytes || rate != ch.read_memo_rate) {
    ch.read_memo_bytes = bytes;
    ch.read_memo_rate = rate;
    ch.read_memo_fp = wire_fp(rate, bytes);
  }
  return ch.read_memo_fp;
}

void PacketNetwork::grant(std::uint32_t p, Cycles ready, std::uint32_t c, Cycles t) {
  Channel& ch = channels_[c];
  Packet& pk = packets_[p];
  const Step h = pk.step;
  // A packet that was waiting when the channel freed during the last cycle starts where the last
  // one ended, within the cycle: fractional bandwidths are kept exactly over a busy period. A
  // channel idle since an earlier cycle (the packet waited for buffer space) starts now.
  const std::int64_t now_fp = static_cast<std::int64_t>(t) * kFrac;
  const std::uint32_t prev = pk.prev_buffer_cls;
  Buffer* from = buffer_of(prev) != kStepEnd ? &buffers_[buffer_of(prev)] : nullptr;
  const std::int64_t earliest = std::max({static_cast<std::int64_t>(ready) * kFrac, ch.free_fp,
                                          from ? from->read_free_fp : std::int64_t{0}});
  const std::int64_t start_fp = earliest > now_fp - kFrac ? earliest : now_fp;
  // Its time on the wire, counted from its start (a start carried back into the last cycle must
  // not stretch the transmission to the end of this one: that made a 256-byte packet take 1.5
  // cycles on a 200 B/cycle link), and how long it holds the channel: at least a cycle on a mesh
  // or exchange channel (a flit a cycle); on a chip link or AFI bus at least a flit's time
  // (system.flit_bytes), and a packet shorter than a cycle leaves the rest of the cycle to the
  // next (a one-cycle floor held a 401 B/cycle AFI bus to 256 B/cycle).
  const std::int64_t dur_fp = duration_fp(ch, pk.bytes);
  const std::int64_t end_fp = start_fp + std::max(dur_fp, ch.min_fp);
  ch.free_fp = end_fp;
  if (from) {
    // reading at the faster of the buffer's read port and the channel (fill())
    const std::int64_t read = reads_faster(h) ? read_fp(ch, *from, pk.bytes) : dur_fp;
    from->read_free_fp = std::max(start_fp + read, now_fp + 1);
  }
  ch.busy_fp += dur_fp;
  ch.bytes += pk.bytes;
  ++ch.transfers;
  ++hops_;
  if (buffer_of(h.buffer_cls) != kStepEnd)
    buffers_[buffer_of(h.buffer_cls)].room[cls_of(h.buffer_cls)] -= static_cast<std::int64_t>(pk.bytes);
  const Cycles end = ceil_cycles(end_fp);
  if (from) release(buffer_of(prev), end, cls_of(prev), pk.bytes);  // the tail leaves at `end`
  if (trace_ && stats_[c].trace_track >= 0) trace_->span(stats_[c].trace_track, "pkt", t, end - t);
  const bool first_hop = pk.hop == 0, last_packet = pk.last;
  std::uint32_t src = 0;
  std::uint64_t id = 0;
  if (first_hop) {  // the message is read only where it is needed: at its ends
    const Message& msg = messages_[pk.msg];
    src = msg.src;
    id = msg.id;
  }
  if (pk.hop + 1 < pk.hops) {
    next_hop(pk);
    Channel& next = channels_[channel_of(pk.step)];
    const std::int64_t head_fp = head_after(ch, dur_fp, std::max<std::int64_t>(duration_fp(next, pk.bytes), kFrac));
    wheel_.push(std::max(t, ceil_cycles(start_fp + head_fp)), Event::of(p, Kind::Ready));
  } else {
    Message& msg = messages_[pk.msg];
    msg.arrival = std::max(msg.arrival, end + ch.latency);
    --live_packets_;
    const std::uint32_t m = pk.msg;
    packets_.release(p);
    if (--msg.outstanding == 0 && msg.unsent == 0) finish(m);
  }
  // Last, as they may grow the pools (a listener may inject): `pk` and `msg` are not used after.
  if (first_hop && last_packet && listener_) listener_->sent(id, end);
  if (first_hop) next_packet(src, t);
}

// An exchange message within a chip: its sender holds the send port; now the receive port is
// free too, and both carry the message at the slower of their rates.
void PacketNetwork::grant_coupled(std::uint32_t p, Cycles t) {
  Packet& pk = packets_[p];
  Message& msg = messages_[pk.msg];
  const std::uint32_t s = channel_of(msg.route[0]), r = channel_of(msg.route[1]);
  Channel &S = channels_[s], &R = channels_[r];
  const double bytes = static_cast<double>(pk.bytes);
  const Cycles d = std::max<Cycles>(1, static_cast<Cycles>(std::max(std::ceil(bytes / S.bytes_per_cycle),
                                                                    std::ceil(bytes / R.bytes_per_cycle))));
  const Cycles end = t + d;
  S.held = false;
  for (const std::uint32_t c : {s, r}) {
    Channel& ch = channels_[c];
    ch.free_fp = static_cast<std::int64_t>(end) * kFrac;
    ch.busy_fp += static_cast<std::int64_t>(d) * kFrac;
    ch.bytes += pk.bytes;
    ++ch.transfers;
    if (trace_ && stats_[c].trace_track >= 0) trace_->span(stats_[c].trace_track, "msg", t, d);
  }
  hops_ += 2;
  // Packets that came to the send port while it was held wait for it to free (those coming
  // later, and those at the receive port, set their own wake: wait_at, try_grant).
  if (!S.waiting.empty()) wake_channel(s, end);
  msg.arrival = end + S.latency + R.latency;
  --live_packets_;
  const std::uint32_t src = msg.src, m = pk.msg;
  const std::uint64_t id = msg.id;
  packets_.release(p);
  --msg.outstanding;
  // Last, as they may grow the pools (a listener may inject): `pk` and `msg` are not used after.
  if (listener_) listener_->sent(id, end);
  finish(m);
  next_packet(src, t);
}

std::string PacketNetwork::stuck_report() const {
  std::uint64_t at_channel = 0, full = 0, roomy = 0, for_read = 0;
  for (const Channel& ch : channels_) at_channel += ch.waiting.size();
  for (const Buffer& b : buffers_) {
    Bytes used[2] = {b.used(0), b.used(1)};  // with the room of every tail that has left
    for (const Release& r : b.releases) used[r.cls()] -= r.bytes;
    for_read += b.parked_for_read.size();
    for (const Parked& p : b.parked_for_room)
      for (std::uint8_t cls = 0; cls < 2; ++cls)
        for (const Waiting& w : p.queue[cls]) (used[cls] + packets_[w.packet].bytes > b.capacity ? full : roomy)++;
  }
  return fmt::format("{} waiting at a channel, {} set aside for room in a full buffer, {} for room in a buffer "
                     "that has it, {} for a read port",
                     at_channel, full, roomy, for_read);
}

void PacketNetwork::finish(std::uint32_t m) {
  const std::uint64_t id = messages_[m].id;
  const Cycles arrival = messages_[m].arrival;
  if (messages_[m].route_slot != kNil) --routes_[messages_[m].route_slot].users;
  messages_.release(m);
  if (listener_) listener_->delivered(id, arrival);  // last: a listener may inject and reuse m
}

bool PacketNetwork::quiet_at(Cycles t) const {
  if (!wheel_.empty() || live_packets_ != 0) return false;
  const std::int64_t t_fp = static_cast<std::int64_t>(t) * kFrac;
  for (const Channel& ch : channels_)
    if (ch.held || ch.free_fp > t_fp || ch.wake_at != kNever || !ch.waiting.empty()) return false;
  for (const Buffer& b : buffers_) {
    if (b.read_free_fp > t_fp || b.parked_room != 0 || !b.parked_for_read.empty() || b.room_wake_at != kNever ||
        b.read_wake_at != kNever)
      return false;
    Bytes used[2] = {b.used(0), b.used(1)};  // with the room of every tail that has left
    for (const Release& r : b.releases) {
      if (r.at() > t) return false;
      used[r.cls()] -= r.bytes;
    }
    if (used[0] != 0 || used[1] != 0) return false;
    for (const Parked& p : b.parked_for_room)
      if (p.requeued[0] != 0 || p.requeued[1] != 0) return false;
  }
  for (std::size_t s = 0; s < source_busy_.size(); ++s)
    if (source_busy_[s] || queue_head_[s] != kNil) return false;
  return true;
}

void PacketNetwork::read_counters(std::vector<std::uint64_t>& out) const {
  out.push_back(hops_);
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    out.push_back(channels_[c].bytes);
    out.push_back(channels_[c].transfers);
    out.push_back(static_cast<std::uint64_t>(channels_[c].busy_fp));
  }
}

void PacketNetwork::add_counter(std::size_t i, std::uint64_t delta) {
  if (i == 0) {
    hops_ += delta;
    return;
  }
  const std::size_t c = (i - 1) / 3;
  switch ((i - 1) % 3) {
    case 0: channels_[c].bytes += delta; break;
    case 1: channels_[c].transfers += delta; break;
    default: channels_[c].busy_fp += static_cast<std::int64_t>(delta); break;
  }
}

void PacketNetwork::stats(std::vector<ChannelStats*>& out) {
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    stats_[c].busy_cycles = ceil_cycles(channels_[c].busy_fp);
    stats_[c].bytes = channels_[c].bytes;
    stats_[c].transfers = channels_[c].transfers;
    out.push_back(&stats_[c]);
  }
}

}  // namespace tessera::sim
