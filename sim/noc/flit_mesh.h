#pragma once
// Flit level, the reference: a 2-D mesh or torus of wormhole routers with virtual channels and
// credit-based flow control, modelled cycle by cycle for the routers that hold flits (idle
// routers cost nothing; cycles in which no router holds a flit are skipped).
//
// Per router: 5 input ports (4 links and the core's injection port), each with `vcs` virtual
// channels of `vc_buffer_flits` flits, and 5 output ports (4 links and ejection). A flit is
// link_bytes_per_cycle bytes; a link carries one flit per cycle. Every cycle, over its input VCs
// oldest packet first (the cycle its head entered the network, then its source; the packet
// level ranks by age too, and with round-robin allocators the flit level saturated at 0.372
// flits/node/cycle on mesh-8x8.json against the packet level's 0.444, now 0.426), a router:
// routes a head flit (dimension order, X then Y), allocates it an output VC that is idle (a VC
// is held by one packet until the credit of its tail comes back), and lets at most one flit per
// input port and per output port cross the switch, if the downstream VC has a credit. A flit
// that crosses at cycle s can cross the next router at s + link_latency_cycles +
// router_latency_cycles (the router pipeline); its credit is back upstream at s + 1. On a torus
// the VCs are split into two dateline classes. The core's network interface injects and ejects
// one flit per ceil(flit / ni_bytes_per_cycle) cycles.
#include <cstdint>
#include <vector>

#include "sim/config/config.h"
#include "sim/noc/event_wheel.h"
#include "sim/noc/index_pool.h"
#include "sim/noc/transport.h"

namespace tessera::sim {

class TraceRecorder;

class FlitMesh : public Transport {
 public:
  FlitMesh(const Config& cfg, TraceRecorder* trace = nullptr);

  void inject(std::uint64_t message, std::uint32_t src, std::uint32_t dst, Bytes bytes,
              Cycles when) override;
  void advance(Cycles t) override;
  Cycles next_event() const override;
  std::uint64_t in_flight() const override { return live_flits_; }
  std::uint64_t hops() const override { return hops_; }
  void stats(std::vector<ChannelStats*>& out) override;
  void set_listener(TransportListener* l) override { listener_ = l; }

 private:
  static constexpr std::uint32_t kNil = ~0u;
  static constexpr int kPorts = 5;  // E, W, S, N, local
  static constexpr int kLocal = 4;

  struct Flit {
    Cycles eligible;
    std::uint32_t packet;
    bool head, tail;
  };
  struct InputVc {
    std::uint32_t first = 0, count = 0;  // ring in flits_
    std::int8_t out_port = -1;           // allocated route (head seen), -1 before
    std::uint8_t out_vc = 0;
    bool in_use = false;                 // local port: the interface is filling it, or a packet's
                                         // tail has not left
    std::uint64_t age = 0;               // of the packet it holds (one at a time: atomic VC allocation):
                                         // (cycle its head entered the network) x nodes + source
  };
  struct OutputVc {
    std::uint32_t credits = 0;
    bool busy = false;  // allocated to a packet until its tail's credit returns
  };
  struct Packet {
    std::uint32_t msg, dst, flits, injected = 0;
    std::uint32_t next = kNil;  // the source's queue
  };
  struct Message {
    std::uint64_t id;
    std::uint32_t src, outstanding;
    Cycles arrival;
    std::uint64_t order;
    std::uint32_t first;  // its first packet; its packets are chained by Packet::next
  };
  enum class Kind : std::uint8_t { Inject, Credit };
  struct Event {
    Kind kind;
    std::uint32_t a;  // Inject: message (its packets are made at once); Credit: router*5+port
    std::uint32_t b;  // Credit: vc
    bool tail;
  };

  void cycle(Cycles t);
  void start_message(std::uint32_t m);
  void inject_flit(std::uint32_t node, Cycles t);
  void step_router(std::uint32_t node, Cycles t);
  bool try_vc(std::uint32_t node, int in_port, std::uint32_t vc, const Flit& f);
  void cross(std::uint32_t node, int in_port, std::uint32_t vc, Cycles t);
  void activate(std::uint32_t node);
  InputVc& ivc(std::uint32_t node, int port, std::uint32_t vc) { return ivcs_[(node * kPorts + port) * vcs_ + vc]; }
  OutputVc& ovc(std::uint32_t node, int port, std::uint32_t vc) { return ovcs_[(node * kPorts + port) * vcs_ + vc]; }
  Flit* ring(std::uint32_t node, int port, std::uint32_t vc) { return &flits_[((node * kPorts + port) * vcs_ + vc) * depth_]; }

  MeshConfig m_;
  std::uint32_t nodes_, vcs_, depth_;
  Cycles hop_cycles_;       // link + router latency
  Cycles ni_cycles_;        // per flit at the network interface
  Bytes flit_bytes_;
  TraceRecorder* trace_;
  TransportListener* listener_ = nullptr;

  std::vector<InputVc> ivcs_;
  std::vector<OutputVc> ovcs_;
  std::vector<Flit> flits_;
  std::vector<int> link_;             // node*4+dir -> index into link stats, -1 where none
  std::vector<std::uint32_t> next_;   // node*4+dir -> the router that way, kNil where none
  std::vector<ChannelStats> stats_;   // inject 0..n-1, eject n..2n-1, then links
  std::vector<Cycles> eject_free_, inject_free_;
  std::vector<std::uint32_t> queue_head_, queue_tail_;  // per node: packets to inject
  std::vector<std::int32_t> inject_vc_;                 // per node: VC the current packet fills
  std::vector<std::uint32_t> rr_;                       // per node: where the interface looks for a free VC
  std::vector<std::uint32_t> buffered_;                 // per node: flits in its buffers
  std::vector<bool> active_flag_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> ready_;  // step_router's requests, by age
  std::vector<std::uint32_t> active_, next_active_;
  IndexPool<Packet> packets_;
  IndexPool<Message> messages_;
  EventWheel<Event> wheel_;
  std::vector<Event> now_events_;
  std::vector<std::uint32_t> injects_;
  Cycles now_ = 0;
  bool started_ = false;
  std::uint64_t order_ = 0, hops_ = 0, live_flits_ = 0;
};

}  // namespace tessera::sim
