#include "sim/noc/flit_net.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/common/error.h"
#include "sim/noc/packet_net.h"

namespace tessera::sim {

namespace {
// Time of one flit at `bytes_per_cycle`, in 1/frac cycle (at least 1, so time always moves on).
std::int64_t flit_time(Bytes flit, double bytes_per_cycle, std::int64_t frac) {
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(flit) / bytes_per_cycle * static_cast<double>(frac)));
}
const Config& checked(const Config& cfg) {
  if (cfg.system.chips < 2 || !cfg.system.afi)
    throw ConfigError(fmt::format("config {}: system.model \"flit\" is the flit level of the links between chips; "
                                  "it needs two or more chips and a system.afi", cfg.name));
  return cfg;
}
}  // namespace

FlitNetwork::FlitNetwork(const Config& cfg)
    : topo_(checked(cfg), /*with_cores=*/false), flit_bytes_(cfg.system.flit_bytes),
      packet_bytes_(cfg.system.packet_bytes), vcs_(cfg.system.vcs) {
  for (const ChannelSpec& s : topo_.channels()) {
    Channel ch;
    ch.flit_fp = flit_time(flit_bytes_, s.bytes_per_cycle, kFrac);
    ch.latency = s.latency_cycles;
    channels_.push_back(std::move(ch));
    stats_.emplace_back();
    stats_.back().name = s.name;
  }
  const std::uint32_t per_buffer = 2 * vcs_;  // two dateline classes
  for (const BufferSpec& s : topo_.buffers()) {
    Buffer b;
    b.first_vc = static_cast<std::uint32_t>(vcs_state_.size());
    b.depth = static_cast<std::uint32_t>(s.capacity_bytes / vcs_ / flit_bytes_);  // >= 1 (config checks it)
    b.read_fp = flit_time(flit_bytes_, s.fill_bytes_per_cycle, kFrac);
    for (std::uint32_t v = 0; v < per_buffer; ++v) {
      Vc vc;
      vc.credits = b.depth;
      vc.buffer = static_cast<std::uint32_t>(buffers_.size());
      vcs_state_.push_back(vc);
    }
    buffers_.push_back(std::move(b));
  }
  sources_.resize(topo_.endpoints());
}

const FlitNetwork::Route& FlitNetwork::route_of(std::uint32_t src, std::uint32_t dst) {
  const auto [it, fresh] = routes_.try_emplace(std::uint64_t{src} << 32 | dst);
  if (fresh) {
    try {
      topo_.route(src, dst, it->second);
    } catch (...) {
      routes_.erase(it);
      throw;
    }
  }
  return it->second;
}

void FlitNetwork::inject(std::uint64_t message, std::uint32_t src, std::uint32_t dst, Bytes bytes,
                         Cycles when) {
  const Route& route = route_of(src, dst);
  const std::uint32_t m = messages_.acquire();
  const auto packets = static_cast<std::uint32_t>(std::max<Bytes>(1, (bytes + packet_bytes_ - 1) / packet_bytes_));
  std::uint32_t first = kNil, last = kNil;
  for (std::uint32_t i = 0; i < packets; ++i) {
    const Bytes b = std::min(packet_bytes_, bytes - std::min(bytes, Bytes{i} * packet_bytes_));
    const std::uint32_t p = packets_.acquire();
    const auto flits = static_cast<std::uint32_t>(std::max<Bytes>(1, (b + flit_bytes_ - 1) / flit_bytes_));
    packets_[p] = {m, flits, static_cast<std::uint32_t>(b), kNil, when};
    live_flits_ += flits;
    if (last == kNil) first = p;
    else packets_[last].next = p;
    last = p;
  }
  messages_[m] = {message, &route, src, packets, 0, order_++, first, last};
  wheel_.push(when, {Kind::Inject, m});
}

void FlitNetwork::advance(Cycles t) {
  while (!wheel_.empty() && wheel_.next() <= t) cycle(wheel_.next());
}

// Injections first (in source order), then credits, then the channels due at t. Anything this
// schedules for t itself comes back as another round of the same cycle.
void FlitNetwork::cycle(Cycles t) {
  now_.clear();
  wheel_.take(t, now_);
  injects_.clear();
  for (const Event& e : now_) {
    if (e.kind == Kind::Inject) injects_.push_back(e.a);
    if (e.kind != Kind::Credit) continue;
    Vc& v = vcs_state_[e.a];
    ++v.credits;
    wake_waiting(v.buffer, t);
  }
  std::sort(injects_.begin(), injects_.end(), [this](std::uint32_t a, std::uint32_t b) {
    const Message &x = messages_[a], &y = messages_[b];
    return x.src != y.src ? x.src < y.src : x.order < y.order;
  });
  for (std::uint32_t m : injects_) start_message(m, t);
  for (const Event& e : now_)
    if (e.kind == Kind::Try) try_channel(e.a, t);
}

void FlitNetwork::start_message(std::uint32_t m, Cycles t) {
  const Message& msg = messages_[m];
  Source& s = sources_[msg.src];
  const bool idle = s.head == kNil;
  if (idle) {
    s.head = msg.first;
    packets_[s.head].born = t;
  } else packets_[s.tail].next = msg.first;
  s.tail = msg.last;
  if (idle) set_wants(static_cast<std::uint32_t>(vcs_state_.size()) + msg.src, (*msg.route)[0].channel, t);
}

void FlitNetwork::set_wants(std::uint32_t r, std::uint32_t channel, Cycles at) {
  const auto nvcs = static_cast<std::uint32_t>(vcs_state_.size());
  std::uint32_t& wants = r < nvcs ? vcs_state_[r].wants : sources_[r - nvcs].wants;
  if (wants == channel) return;  // the channel's own loop sees the next front
  if (wants != kNil) {
    auto& q = channels_[wants].requests;
    q.erase(std::find(q.begin(), q.end(), r));
  }
  wants = channel;
  if (channel == kNil) return;
  channels_[channel].requests.push_back(r);
  schedule(channel, at);
}

void FlitNetwork::schedule(std::uint32_t c, Cycles at) {
  Channel& ch = channels_[c];
  if (ch.wake <= at) return;  // an earlier try is due, and it looks again
  ch.wake = at;
  wheel_.push(at, {Kind::Try, c});
}

void FlitNetwork::wake_waiting(std::uint32_t buffer, Cycles at) {
  std::vector<std::uint32_t>& w = buffers_[buffer].waiting;
  for (std::uint32_t c : w) schedule(c, at);
  w.clear();
}

std::uint32_t FlitNetwork::pick_vc(const Hop& hop) const {
  if (hop.buffer == kNoBuffer) return kSink;
  const std::uint32_t base = buffers_[hop.buffer].first_vc + hop.cls * vcs_;
  std::uint32_t best = kNil;
  for (std::uint32_t v = base; v < base + vcs_; ++v) {
    const Vc& x = vcs_state_[v];
    if (x.held || x.credits == 0) continue;
    if (best == kNil || x.credits > vcs_state_[best].credits) best = v;
  }
  return best;
}

bool FlitNetwork::ready(std::uint32_t r, std::uint32_t c, Cycles t, Blocked& b, std::uint32_t& packet) {
  const auto nvcs = static_cast<std::uint32_t>(vcs_state_.size());
  std::uint32_t out;
  const Hop* hop;
  if (r < nvcs) {
    Vc& v = vcs_state_[r];
    const Flit& f = front(v);
    if (f.eligible > t) {
      b.retry = f.eligible;
      return false;
    }
    Buffer& buf = buffers_[v.buffer];
    if (buf.reserved_cycle == t && buf.reserved_for != c) {  // another channel's turn at the read port
      b.retry = t + 1;
      return false;
    }
    if (buf.read_free_fp >= static_cast<std::int64_t>(t + 1) * kFrac) {
      // it can start within that cycle, and it goes first there: a buffer's outputs take turns,
      // or the channel tried first in each cycle would take the whole read port
      b.retry = floor_cycles(buf.read_free_fp);
      if (buf.reserved_cycle == kNever || buf.reserved_cycle < t || buf.reserved_for == c) {
        buf.reserved_cycle = b.retry;
        buf.reserved_for = c;
      }
      return false;
    }
    out = v.out;
    packet = f.packet;
    hop = &hop_of(f.packet, f.hop);
  } else {
    const Source& s = sources_[r - nvcs];
    out = s.out;
    packet = s.head;
    hop = &hop_of(s.head, 0);
  }
  if (hop->channel != c) throw std::logic_error("FlitNetwork: a requester of a channel its flit does not take");
  if (out == kNil) out = pick_vc(*hop);
  if (out == kNil || (out != kSink && vcs_state_[out].credits == 0)) {
    b.buffer = hop->buffer;
    return false;
  }
  return true;
}

void FlitNetwork::try_channel(std::uint32_t c, Cycles t) {
  Channel& ch = channels_[c];
  if (ch.wake != t) return;  // a stale entry: an earlier try rescheduled it
  ch.wake = kNever;
  const std::int64_t end = static_cast<std::int64_t>(t + 1) * kFrac;
  while (!ch.requests.empty()) {
    if (ch.free_fp >= end) {  // free within a later cycle: a flit can start there, mid-cycle
      schedule(c, floor_cycles(ch.free_fp));
      return;
    }
    // the flit that can start soonest (the channel never idles for a read port while another
    // flit could go), then one already in the network over one entering it, then the oldest
    // packet, then the requester next in turn after the last one to cross
    std::uint32_t best = kNil;
    std::int64_t best_start = 0;
    Rank best_rank{};
    Cycles retry = kNever;
    for (std::uint32_t r : ch.requests) {
      Blocked b;
      std::uint32_t packet = kNil;
      if (ready(r, c, t, b, packet)) {
        const std::int64_t start = std::max(ch.free_fp, r < vcs_state_.size() ? buffers_[vcs_state_[r].buffer].read_free_fp : 0);
        // a source, or a VC whose flit takes its route's first link (the AFI port queue), enters
        const bool entering = r >= vcs_state_.size() || front(vcs_state_[r]).hop <= 1;
        const Rank rank{entering, packets_[packet].born, turn(ch, r)};
        if (best == kNil || start < best_start || (start == best_start && rank < best_rank)) {
          best = r;
          best_start = start;
          best_rank = rank;
        }
        continue;
      }
      retry = std::min(retry, b.retry);
      if (b.buffer != kNil) {
        auto& w = buffers_[b.buffer].waiting;
        if (w.empty() || w.back() != c) w.push_back(c);
      }
    }
    if (best == kNil) {
      if (retry != kNever) schedule(c, retry);
      return;
    }
    ch.last = best;
    cross(best, c, t);
  }
}

// The front flit of requester r crosses channel c in cycle t.
void FlitNetwork::cross(std::uint32_t r, std::uint32_t c, Cycles t) {
  const auto nvcs = static_cast<std::uint32_t>(vcs_state_.size());
  Channel& ch = channels_[c];
  std::int64_t start = std::max(ch.free_fp, static_cast<std::int64_t>(t) * kFrac);
  Flit f{};
  std::uint32_t* out;
  if (r < nvcs) {
    Vc& v = vcs_state_[r];
    Buffer& buf = buffers_[v.buffer];
    start = std::max(start, buf.read_free_fp);
    buf.read_free_fp = start + std::min(buf.read_fp, ch.flit_fp);  // the faster of fill and channel, as at packet level
    f = front(v);
    v.front = v.front + 1 == buf.depth ? 0 : v.front + 1;
    --v.count;
    wheel_.push(t + 1, {Kind::Credit, r});
    out = &v.out;
  } else {
    Source& s = sources_[r - nvcs];
    const Packet& p = packets_[s.head];
    f = {0, s.head, 0, s.sent == 0, s.sent + 1 == p.flits};
    ++s.sent;
    out = &s.out;
  }
  const Packet& p = packets_[f.packet];
  if (*out == kNil) *out = pick_vc(hop_of(f.packet, f.hop));
  const std::uint32_t down = *out;
  if (f.tail) *out = kNil;
  ch.free_fp = start + ch.flit_fp;
  ch.busy_fp += ch.flit_fp;
  ChannelStats& st = stats_[c];
  st.bytes += f.tail ? p.bytes - (p.flits - 1) * flit_bytes_ : flit_bytes_;
  if (f.head) ++st.transfers;
  ++hops_;
  const Cycles arrive = ceil_cycles(start + ch.flit_fp) + ch.latency;

  if (down != kSink) enter(down, f, arrive, t);
  offer_next(r, f, p.next, p.msg, ceil_cycles(start + ch.flit_fp), t);  // may inject: no references after
  if (down == kSink) deliver(f, arrive);
}

// Flit f lands in VC `down` at `arrive` (it crossed in cycle t).
void FlitNetwork::enter(std::uint32_t down, const Flit& f, Cycles arrive, Cycles t) {
  Vc& d = vcs_state_[down];
  const Buffer& db = buffers_[d.buffer];
  if (d.ring == kNil) {
    d.ring = static_cast<std::uint32_t>(flits_.size());
    flits_.resize(flits_.size() + db.depth);
  }
  if (f.head) d.held = true;
  const std::uint32_t next_hop = f.hop + 1u;
  flits_[d.ring + (d.front + d.count) % db.depth] = {arrive, f.packet, static_cast<std::uint16_t>(next_hop), f.head, f.tail};
  --d.credits;
  if (++d.count == 1) set_wants(down, hop_of(f.packet, next_hop).channel, arrive);
  if (f.tail) {  // the VC may go to another packet, which queues behind this one
    d.held = false;
    wake_waiting(d.buffer, t + 1);
  }
}

// What requester r offers after sending flit f (of a packet followed in its source's queue by
// `next`, of message `msg`): a VC its next front flit, a source its next packet; a source that
// has sent a message's last flit (at `sent_at`) says so.
void FlitNetwork::offer_next(std::uint32_t r, const Flit& f, std::uint32_t next, std::uint32_t msg, Cycles sent_at,
                             Cycles t) {
  const auto nvcs = static_cast<std::uint32_t>(vcs_state_.size());
  if (r < nvcs) {
    Vc& v = vcs_state_[r];
    if (v.count == 0) set_wants(r, kNil, t);
    else if (f.tail) {
      const Flit& n = front(v);
      set_wants(r, hop_of(n.packet, n.hop).channel, std::max(t, n.eligible));
    }
    return;
  }
  if (!f.tail) return;
  Source& s = sources_[r - nvcs];
  s.head = next;
  s.sent = 0;
  if (next == kNil) s.tail = kNil;
  else packets_[next].born = t;
  set_wants(r, next == kNil ? kNil : hop_of(next, 0).channel, t);
  if ((next == kNil || packets_[next].msg != msg) && listener_) listener_->sent(messages_[msg].id, sent_at);
}

void FlitNetwork::deliver(const Flit& f, Cycles when) {
  --live_flits_;
  if (!f.tail) return;
  const std::uint32_t m = packets_[f.packet].msg;
  packets_.release(f.packet);
  Message& msg = messages_[m];
  msg.arrival = std::max(msg.arrival, when);
  if (--msg.outstanding > 0) return;
  const std::uint64_t id = msg.id;
  const Cycles arrival = msg.arrival;
  messages_.release(m);
  if (listener_) listener_->delivered(id, arrival);  // last: a listener may inject
}

std::string FlitNetwork::stuck_report() const {
  std::uint64_t buffered = 0;
  std::string first;
  for (std::size_t i = 0; i < vcs_state_.size(); ++i) {
    const Vc& v = vcs_state_[i];
    if (v.count == 0) continue;
    buffered += v.count;
    if (first.empty() && v.wants != kNil)
      first = fmt::format("; e.g. {} flits wait for {} ({} credits downstream)", v.count,
                          topo_.channels()[v.wants].name, v.out == kNil || v.out == kSink ? 0 : vcs_state_[v.out].credits);
  }
  std::uint64_t queued = 0;
  for (const Source& s : sources_)
    if (s.head != kNil) ++queued;
  return fmt::format("{} flits in buffers, {} sources with packets to send{}", buffered, queued, first);
}

void FlitNetwork::stats(std::vector<ChannelStats*>& out) {
  for (std::size_t i = 0; i < stats_.size(); ++i) {
    stats_[i].busy_cycles = floor_cycles(channels_[i].busy_fp);
    out.push_back(&stats_[i]);
  }
}

std::unique_ptr<RoutedTransport> make_chip_links(const Config& cfg) {
  if (cfg.system.model == NocModel::Flit) return std::make_unique<FlitNetwork>(cfg);
  return std::make_unique<PacketNetwork>(cfg, nullptr, /*with_cores=*/false);
}

}  // namespace tessera::sim
