#pragma once
// The system's interconnect as a SystemC module: it runs one transport (the packet-level engine,
// or the flit-level mesh) for every chip and the links between chips, and matches messages with
// the receives posted for them (between two cores, in send order).
//
// Time order without booking ahead: cores act on whole cycles; the transport advances cycle t
// half a cycle later, once every core has issued what it issues at t, whatever order the kernel
// ran them in. Same-cycle messages enter in source-core order. What the transport decides at t
// (a send done, a message delivered) lies at t + 1 or later and is notified for that cycle.
// Cycles before the kernel's next other activity are processed in one wake-up (step()).
#include <absl/container/flat_hash_map.h>

#include <memory>
#include <systemc>
#include <vector>

#include "sim/config/config.h"
#include "sim/noc/fabric_if.h"
#include "sim/noc/index_pool.h"
#include "sim/noc/transport.h"

namespace tessera::sim {

class TraceRecorder;
class CollectiveEngine;
struct CollectivePlan;
struct CollectiveSpec;

// The transport a config asks for (chip.mesh.model): packet level or flit level.
std::unique_ptr<Transport> make_transport(const Config& cfg, TraceRecorder* trace);

class Network : public sc_core::sc_module, public FabricIf, private TransportListener {
 public:
  SC_HAS_PROCESS(Network);
  Network(sc_core::sc_module_name name, const Config& cfg, TraceRecorder* trace);
  void send(std::uint32_t src, std::uint32_t dst, Bytes bytes, std::shared_ptr<const Payload> payload,
            Completion& done) override;
  void recv(std::uint32_t dst, std::uint32_t src, Bytes bytes, Completion& done) override;
  void collective(std::uint32_t core, std::uint32_t index, Completion& done) override;
  void relayout(std::uint32_t core, std::uint32_t relayout, std::uint32_t pieces, const RelayoutStep* steps,
                std::size_t count, StepSink& sink, Completion& done) override;
  void relayout_finished(std::uint32_t relayout) override { relayouts_.forget(relayout); }
  const RelayoutStep* relayout_step(std::uint32_t core) const override { return relayouts_.current(core); }
  ~Network() override;

  // The program's collectives, run by the named engine (ideal, cores or ace) on this network
  // (the packet level, with an AFI per chip); throws Error when the config cannot.
  void attach_collectives(const Config& cfg, const std::vector<CollectiveSpec>& specs, const std::string& engine);
  // Per collective: the cycle its last part was done (empty without collectives).
  std::vector<Cycles> collectives_done() const;

  void stats(std::vector<ChannelStats*>& out) { transport_->stats(out); }
  std::uint64_t messages() const { return messages_; }
  // For deadlock reports: messages sent to `dst` and not received; packets still in the network.
  std::size_t pending(std::uint32_t dst) const { return unmatched_count_[dst] + relayouts_.pending(dst); }
  std::uint64_t in_flight() const { return transport_->in_flight(); }
  std::string stuck_report() const { return transport_->stuck_report(); }
  std::uint64_t hops() const { return transport_->hops(); }

  // Fast-forward (sim/system/fast_forward.h): nothing sent, posted or in flight, no collective
  // engine, and the transport quiet at t; the counters a stretch adds (messages, then the
  // transport's), and adding a replayed stretch's difference to counter i.
  bool quiet_at(Cycles t) const;
  void read_counters(std::vector<std::uint64_t>& out) const;
  void add_counter(std::size_t i, std::uint64_t delta);

 private:
  struct Message {
    std::uint32_t src = 0, dst = 0;
    Bytes bytes = 0;
    std::shared_ptr<const Payload> payload;
    Completion* sent = nullptr;
    Completion* received = nullptr;  // the matched receive, once posted
    Cycles arrival = kNever;
    bool delivered = false, matched = false;
    std::uint32_t next = ~0u;  // the pair's next unmatched message
  };
  struct Posted {
    Bytes bytes = 0;
    Completion* done = nullptr;
    std::uint32_t next = ~0u;
  };
  // Per (destination, source) pair with something unmatched: a FIFO threaded through a pool by
  // `next` indices, of the messages sent and not yet received, or of the receives posted and not
  // yet matched (never both: one matches the other). Only pairs with something pending have an
  // entry, so the table stays as small as what is in flight, not as all pairs that ever talked.
  struct Pending {
    std::uint32_t head = ~0u, tail = ~0u;
    bool posts = false;  // the FIFO holds receives (else messages)
  };
  static std::uint64_t pair_key(std::uint32_t dst, std::uint32_t src) { return std::uint64_t{dst} << 32 | src; }

  void step();
  void wake_at(Cycles t);
  void match(std::uint32_t m, Bytes recv_bytes, Completion& done);
  void release(std::uint32_t m);
  void sent(std::uint64_t message, Cycles when) override;
  void delivered(std::uint64_t message, Cycles when) override;

  std::unique_ptr<Transport> transport_;
  IndexPool<Message> pool_;
  absl::flat_hash_map<std::uint64_t, Pending> pending_;  // by pair_key
  IndexPool<Posted> posts_;
  std::vector<std::size_t> unmatched_count_;           // per destination
  RelayoutEngine relayouts_;                           // the cores' relayout items
  // The collective engine's messages are numbered from kEngineIds in the transport.
  static constexpr std::uint64_t kEngineIds = std::uint64_t{1} << 40;
  // below them the relayout engine's (from RelayoutEngine::kIds, a 32-bit pool index added),
  // below those the pool indices of the cores' own messages
  static_assert(RelayoutEngine::kIds + (std::uint64_t{1} << 32) <= kEngineIds && RelayoutEngine::kIds >= (std::uint64_t{1} << 32),
                "message id ranges overlap");
  std::unique_ptr<CollectivePlan> collective_plan_;
  std::unique_ptr<CollectiveEngine> engine_;
  std::vector<Completion*> collective_waiting_;  // per (collective, chip): the core's completion
  std::uint32_t chips_ = 1, cores_per_chip_ = 1;
  sc_core::sc_event wake_;
  std::uint64_t messages_ = 0;
  std::uint64_t notices_ = 0;  // calls that may have notified a completion (step() counts them)
};

}  // namespace tessera::sim
