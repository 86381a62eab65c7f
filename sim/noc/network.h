#pragma once
// The system's interconnect as seen by cores: routes a message over the on-chip fabric of its
// chip, or out through the chip boundary port and into another chip, and keeps one inbox per
// core so a recv returns when its matching message has arrived. Messages between a pair of cores
// are matched in send order. Sends issued in the same cycle (and delta) reserve their paths in
// the order of their source core ids, not in the kernel's process order: contention is resolved
// the same way whatever order SystemC runs the cores in, and the compiler's exchange replay
// (compiler/cost/exchange.h) can reproduce it.
#include <memory>
#include <systemc>
#include <vector>

#include "sim/config/config.h"
#include "sim/noc/fabric_if.h"
#include "sim/noc/interconnect.h"

namespace tessera::sim {

class Network : public sc_core::sc_module, public FabricIf {
 public:
  sc_core::sc_port<ChipBoundaryIf> boundary;

  SC_HAS_PROCESS(Network);
  Network(sc_core::sc_module_name name, const Config& cfg, TraceRecorder* trace);
  void send(std::uint32_t src, std::uint32_t dst, Bytes bytes,
            std::shared_ptr<const Payload> payload) override;
  std::shared_ptr<const Payload> recv(std::uint32_t dst, std::uint32_t src, Bytes bytes) override;

  void resources(std::vector<Resource*>& out);
  std::uint64_t messages() const { return messages_; }
  // For deadlock reports: messages that arrived but were never received.
  std::size_t pending(std::uint32_t dst) const { return inboxes_[dst]->pending.size(); }

 private:
  struct Message { std::uint32_t src; Bytes bytes; Cycles arrival; std::shared_ptr<const Payload> payload; };
  static constexpr std::uint32_t kNobody = ~0u;
  struct Inbox {
    std::vector<Message> pending;  // in arrival-issue order
    std::uint32_t waiting_for = kNobody;
    sc_core::sc_event arrived;
  };

  TraceRecorder* trace_;
  struct Request { std::uint32_t src, dst; Bytes bytes; std::shared_ptr<const Payload> payload; };
  void arbitrate();  // reserves this delta's requests in source order

  Interconnect fabric_;
  std::vector<std::unique_ptr<Inbox>> inboxes_;
  std::vector<Request> requests_;           // issued in the current delta
  sc_core::sc_event requests_ready_;
  std::vector<std::unique_ptr<sc_core::sc_event>> granted_;  // per core: its send is done
  std::uint64_t messages_ = 0;
};

}  // namespace tessera::sim
