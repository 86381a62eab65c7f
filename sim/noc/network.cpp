#include "sim/noc/network.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/common/clock.h"
#include "sim/common/error.h"

namespace tessera::sim {

Network::Network(sc_core::sc_module_name name, const Config& cfg, TraceRecorder* trace)
    : sc_core::sc_module(name), boundary("boundary"), trace_(trace), fabric_(cfg) {
  for (std::uint32_t i = 0; i < cfg.total_cores(); ++i) {
    inboxes_.push_back(std::make_unique<Inbox>());
    granted_.push_back(std::make_unique<sc_core::sc_event>());
  }
  SC_METHOD(arbitrate);
  sensitive << requests_ready_;
  dont_initialize();
}

void Network::send(std::uint32_t src, std::uint32_t dst, Bytes bytes,
                   std::shared_ptr<const Payload> payload) {
  if (requests_.empty()) requests_ready_.notify(sc_core::SC_ZERO_TIME);
  requests_.push_back({src, dst, bytes, std::move(payload)});
  wait(*granted_[src]);  // fires when the source port has sent the last byte
}

void Network::arbitrate() {
  const Cycles now = now_cycles();
  std::sort(requests_.begin(), requests_.end(), [](const Request& a, const Request& b) { return a.src < b.src; });
  for (Request& r : requests_) {
    const Transfer t = fabric_.transfer(r.src, r.dst, now, r.bytes, boundary.operator->(), trace_);
    ++messages_;
    Inbox& in = *inboxes_[r.dst];
    in.pending.push_back({r.src, r.bytes, t.arrival, std::move(r.payload)});
    if (in.waiting_for == r.src) in.arrived.notify(cycles(t.arrival - now));
    granted_[r.src]->notify(cycles(t.sender_done - now));
  }
  requests_.clear();
}

std::shared_ptr<const Payload> Network::recv(std::uint32_t dst, std::uint32_t src, Bytes bytes) {
  Inbox& in = *inboxes_[dst];
  for (;;) {
    auto it = std::find_if(in.pending.begin(), in.pending.end(),
                           [src](const Message& m) { return m.src == src; });
    if (it != in.pending.end()) {
      Message m = std::move(*it);
      in.pending.erase(it);
      if (m.bytes != bytes)
        throw SimulationError(fmt::format("core {} posted a recv of {} bytes from core {}, but the "
                                          "matching send carries {} bytes",
                                          dst, bytes, src, m.bytes));
      wait_until(m.arrival);
      return std::move(m.payload);
    }
    in.waiting_for = src;
    wait(in.arrived);
    in.waiting_for = kNobody;
  }
}

void Network::resources(std::vector<Resource*>& out) {
  fabric_.resources(out);
}

}  // namespace tessera::sim
