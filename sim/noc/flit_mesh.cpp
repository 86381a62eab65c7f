#include "sim/noc/flit_mesh.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/noc/mesh_routing.h"
#include "sim/results/trace.h"

namespace tessera::sim {

FlitMesh::FlitMesh(const Config& cfg, TraceRecorder* trace)
    : m_(*cfg.chip.mesh), nodes_(m_.rows * m_.cols), vcs_(m_.vcs), depth_(m_.vc_buffer_flits()),
      hop_cycles_(m_.link_latency_cycles + m_.router_latency_cycles),
      ni_cycles_(static_cast<Cycles>(std::ceil(static_cast<double>(m_.flit_bytes()) / m_.ni_bytes_per_cycle))),
      flit_bytes_(m_.flit_bytes()), trace_(trace) {
  const std::size_t vcs_total = std::size_t(nodes_) * kPorts * vcs_;
  ivcs_.resize(vcs_total);
  ovcs_.resize(vcs_total);
  for (auto& o : ovcs_) o.credits = depth_;
  flits_.resize(vcs_total * depth_);
  for (std::uint32_t n = 0; n < nodes_; ++n) {
    stats_.emplace_back();
    stats_.back().name = fmt::format("chip0.r{}c{}.inject", n / m_.cols, n % m_.cols);
  }
  for (std::uint32_t n = 0; n < nodes_; ++n) {
    stats_.emplace_back();
    stats_.back().name = fmt::format("chip0.r{}c{}.eject", n / m_.cols, n % m_.cols);
  }
  link_.assign(std::size_t(nodes_) * 4, -1);
  next_.assign(std::size_t(nodes_) * 4, kNil);
  for (std::uint32_t n = 0; n < nodes_; ++n)
    for (int d = 0; d < 4; ++d) {
      next_[n * 4 + d] = mesh_neighbour(m_, n, d);
      if (next_[n * 4 + d] == kNoRouter) continue;
      link_[n * 4 + d] = static_cast<int>(stats_.size());
      stats_.emplace_back();
      stats_.back().name = fmt::format("chip0.r{}c{}.{}", n / m_.cols, n % m_.cols, mesh_dir_name(d));
    }
  eject_free_.assign(nodes_, 0);
  inject_free_.assign(nodes_, 0);
  queue_head_.assign(nodes_, kNil);
  queue_tail_.assign(nodes_, kNil);
  inject_vc_.assign(nodes_, -1);
  rr_.assign(nodes_, 0);
  buffered_.assign(nodes_, 0);
  active_flag_.assign(nodes_, false);
}

void FlitMesh::inject(std::uint64_t message, std::uint32_t src, std::uint32_t dst, Bytes bytes,
                      Cycles when) {
  const std::uint32_t m = messages_.acquire();
  const Bytes pb = m_.packet_bytes;
  const auto packets = static_cast<std::uint32_t>((bytes + pb - 1) / pb);
  messages_[m] = {message, src, packets, 0, order_++, kNil};
  // the packets wait for the message's injection cycle in the source's queue, as one chain
  std::uint32_t first = kNil, last = kNil;
  for (std::uint32_t i = 0; i < packets; ++i) {
    const Bytes b = std::min(pb, bytes - i * pb);
    const std::uint32_t p = packets_.acquire();
    packets_[p] = {m, dst, static_cast<std::uint32_t>((b + flit_bytes_ - 1) / flit_bytes_), 0, kNil};
    live_flits_ += packets_[p].flits;
    if (last == kNil) first = p;
    else packets_[last].next = p;
    last = p;
  }
  messages_[m].first = first;
  wheel_.push(when, {Kind::Inject, m, 0, false});
}

void FlitMesh::start_message(std::uint32_t m) {
  const std::uint32_t src = messages_[m].src;
  const std::uint32_t first = messages_[m].first;
  std::uint32_t last = first;
  while (packets_[last].next != kNil) last = packets_[last].next;
  if (queue_tail_[src] == kNil) queue_head_[src] = first;
  else packets_[queue_tail_[src]].next = first;
  queue_tail_[src] = last;
  activate(src);
}

void FlitMesh::activate(std::uint32_t node) {
  if (active_flag_[node]) return;
  active_flag_[node] = true;
  next_active_.push_back(node);
}

Cycles FlitMesh::next_event() const {
  if (!active_.empty() || !next_active_.empty()) return started_ ? now_ + 1 : now_;
  return wheel_.empty() ? kNever : wheel_.next();
}

void FlitMesh::advance(Cycles t) {
  for (;;) {
    const Cycles next = next_event();
    if (next == kNever || next > t) return;
    cycle(next);
  }
}

void FlitMesh::cycle(Cycles t) {
  now_ = t;
  started_ = true;
  now_events_.clear();
  wheel_.take(t, now_events_);
  injects_.clear();
  for (const Event& e : now_events_) {
    if (e.kind == Kind::Inject) {
      injects_.push_back(e.a);
      continue;
    }
    const std::uint32_t node = e.a / kPorts;
    OutputVc& o = ovc(node, static_cast<int>(e.a % kPorts), e.b);
    ++o.credits;
    if (e.tail) o.busy = false;
    activate(node);
  }
  std::sort(injects_.begin(), injects_.end(), [this](std::uint32_t a, std::uint32_t b) {
    const Message &x = messages_[a], &y = messages_[b];
    return x.src != y.src ? x.src < y.src : x.order < y.order;
  });
  for (std::uint32_t m : injects_) start_message(m);
  // routers do not interact within a cycle (flits and credits arrive at t + 1 or later), so the
  // order in which they are stepped does not change the outcome
  for (std::uint32_t n : next_active_) active_.push_back(n);
  next_active_.clear();
  std::size_t keep = 0;
  for (std::size_t i = 0; i < active_.size(); ++i) {
    const std::uint32_t n = active_[i];
    inject_flit(n, t);
    step_router(n, t);
    if (buffered_[n] || queue_head_[n] != kNil) active_[keep++] = n;
    else active_flag_[n] = false;
  }
  active_.resize(keep);
}

// The network interface puts the next flit of its current packet into a VC of the local input
// port: a packet takes a VC that holds no other packet, and a flit needs a free slot.
void FlitMesh::inject_flit(std::uint32_t node, Cycles t) {
  const std::uint32_t p = queue_head_[node];
  if (p == kNil || inject_free_[node] > t) return;
  if (inject_vc_[node] < 0) {
    for (std::uint32_t v = 0; v < vcs_; ++v) {
      const std::uint32_t vc = (rr_[node] + v) % vcs_;
      InputVc& in = ivc(node, kLocal, vc);
      if (!in.in_use && in.count == 0) {
        in.in_use = true;
        inject_vc_[node] = static_cast<std::int32_t>(vc);
        break;
      }
    }
    if (inject_vc_[node] < 0) return;
  }
  const auto vc = static_cast<std::uint32_t>(inject_vc_[node]);
  InputVc& in = ivc(node, kLocal, vc);
  if (in.count == depth_) return;
  Packet& pk = packets_[p];
  const bool head = pk.injected == 0, tail = pk.injected + 1 == pk.flits;
  if (head) in.age = t * nodes_ + node;  // distinct: one head enters per node per cycle
  ring(node, kLocal, vc)[(in.first + in.count) % depth_] = {t + m_.router_latency_cycles, p, head, tail};
  ++in.count;
  ++buffered_[node];
  ++pk.injected;
  ++hops_;
  inject_free_[node] = t + ni_cycles_;
  ChannelStats& s = stats_[node];
  s.bytes += flit_bytes_;
  s.busy_cycles += ni_cycles_;
  if (head) ++s.transfers;
  if (!tail) return;
  inject_vc_[node] = -1;
  queue_head_[node] = pk.next;
  if (pk.next == kNil) queue_tail_[node] = kNil;
  pk.next = kNil;
  // the message is sent when the tail of its last packet has left the interface
  if (queue_head_[node] == kNil || packets_[queue_head_[node]].msg != pk.msg)
    if (listener_) listener_->sent(messages_[pk.msg].id, t + ni_cycles_);
}

// Route and VC allocation for a head flit: an idle output VC of the packet's dateline class.
bool FlitMesh::try_vc(std::uint32_t node, int in_port, std::uint32_t vc, const Flit& f) {
  InputVc& in = ivc(node, in_port, vc);
  const int next = mesh_next_dir(m_, node, packets_[f.packet].dst);
  const int out = next < 0 ? kLocal : next;
  if (out == kLocal) {
    in.out_port = kLocal;
    return true;
  }
  std::uint32_t lo = 0, hi = vcs_;
  if (m_.torus) {
    const bool same_dimension = in_port != kLocal && (in_port / 2 == out / 2);
    const bool class1 = mesh_wraps(m_, node, out) || (same_dimension && vc >= vcs_ / 2);
    lo = class1 ? vcs_ / 2 : 0;
    hi = class1 ? vcs_ : vcs_ / 2;
  }
  for (std::uint32_t v = lo; v < hi; ++v) {
    OutputVc& o = ovc(node, out, v);
    if (o.busy) continue;
    o.busy = true;
    in.out_port = static_cast<std::int8_t>(out);
    in.out_vc = static_cast<std::uint8_t>(v);
    return true;
  }
  return false;
}

void FlitMesh::step_router(std::uint32_t node, Cycles t) {
  if (!buffered_[node]) return;
  bool in_used[kPorts] = {false, false, false, false, false};
  bool out_used[kPorts] = {false, false, false, false, false};
  const std::uint32_t total = kPorts * vcs_;
  rr_[node] = rr_[node] + 1 == total ? 0 : rr_[node] + 1;  // where the interface looks for a free VC
  InputVc* const vcs = &ivcs_[std::size_t(node) * total];  // index port * vcs + vc
  // the VCs whose front flit is here, oldest packet first: it routes, takes an output VC and
  // crosses before younger ones (age-based allocation, as the packet level ranks packets)
  ready_.clear();
  for (std::uint32_t idx = 0; idx < total; ++idx) {
    InputVc& in = vcs[idx];
    if (!in.count) continue;
    const int port = static_cast<int>(idx / vcs_);
    const std::uint32_t vc = idx - static_cast<std::uint32_t>(port) * vcs_;
    const Flit& f = ring(node, port, vc)[in.first];
    if (f.eligible > t) continue;
    ready_.emplace_back(in.age, idx);
  }
  if (ready_.size() > 1) std::sort(ready_.begin(), ready_.end());  // oldest first; ages are distinct
  for (const auto& [age, idx] : ready_) {
    InputVc& in = vcs[idx];
    const int port = static_cast<int>(idx / vcs_);
    if (in_used[port]) continue;
    const std::uint32_t vc = idx - static_cast<std::uint32_t>(port) * vcs_;
    const Flit& f = ring(node, port, vc)[in.first];
    if (in.out_port < 0 && !try_vc(node, port, vc, f)) continue;
    const int out = in.out_port;
    if (out_used[out]) continue;
    if (out == kLocal ? eject_free_[node] > t : ovc(node, out, in.out_vc).credits == 0) continue;
    in_used[port] = out_used[out] = true;
    cross(node, port, vc, t);
  }
}

// The front flit of an input VC crosses the switch and the link (or leaves into the core).
void FlitMesh::cross(std::uint32_t node, int in_port, std::uint32_t vc, Cycles t) {
  InputVc& in = ivc(node, in_port, vc);
  const Flit f = ring(node, in_port, vc)[in.first];
  in.first = (in.first + 1) % depth_;
  --in.count;
  --buffered_[node];
  ++hops_;
  const int out = in.out_port;
  const std::uint32_t out_vc = in.out_vc;
  if (f.tail) {  // the VC is free for the next packet
    in.out_port = -1;
    in.in_use = false;
  }
  if (in_port != kLocal) {  // the credit goes back to the router this flit came from
    const std::uint32_t up = next_[node * 4 + (in_port ^ 1)];  // E<->W, S<->N
    wheel_.push(t + 1, {Kind::Credit, up * kPorts + in_port, vc, f.tail});
  }
  if (out == kLocal) {
    eject_free_[node] = t + ni_cycles_;
    ChannelStats& s = stats_[nodes_ + node];
    s.bytes += flit_bytes_;
    s.busy_cycles += ni_cycles_;
    --live_flits_;
    if (!f.tail) return;
    ++s.transfers;
    Packet& pk = packets_[f.packet];
    Message& msg = messages_[pk.msg];
    msg.arrival = std::max(msg.arrival, t + ni_cycles_);
    packets_.release(f.packet);
    if (--msg.outstanding == 0) {
      const std::uint64_t id = msg.id;
      const Cycles arrival = msg.arrival;
      messages_.release(pk.msg);
      if (listener_) listener_->delivered(id, arrival);  // last: a listener may inject
    }
    return;
  }
  const std::uint32_t down = next_[node * 4 + out];
  --ovc(node, out, out_vc).credits;
  InputVc& din = ivc(down, out, out_vc);
  ring(down, out, out_vc)[(din.first + din.count) % depth_] = {t + hop_cycles_, f.packet, f.head, f.tail};
  if (f.head) din.age = in.age;
  ++din.count;
  ++buffered_[down];
  activate(down);
  ChannelStats& s = stats_[static_cast<std::size_t>(link_[node * 4 + out])];
  s.bytes += flit_bytes_;
  ++s.busy_cycles;
  if (f.head) ++s.transfers;
  if (trace_ && s.trace_track >= 0 && f.head) trace_->span(s.trace_track, "pkt", t, 1);
}

void FlitMesh::stats(std::vector<ChannelStats*>& out) {
  for (auto& s : stats_) out.push_back(&s);
}

}  // namespace tessera::sim
