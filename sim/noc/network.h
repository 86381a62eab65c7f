#pragma once
// The system's interconnect as seen by cores: routes a message over the on-chip fabric of its
// chip, or out through the chip boundary port and into another chip, and keeps one inbox per
// core so a recv returns when its matching message has arrived. Messages between a pair of cores
// are matched in send order.
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
  Interconnect fabric_;
  std::vector<std::unique_ptr<Inbox>> inboxes_;
  std::uint64_t messages_ = 0;
};

}  // namespace tessera::sim
