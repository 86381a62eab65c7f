#pragma once
// The endpoint engines that run a collective's message plan on the packet network, from each
// chip's AFI. They differ in what a chip does between a message arriving and the messages that
// depend on it leaving, and in what that costs (docs/collectives.md, "Engines"):
//
// - ideal: a received message is handled in one cycle; no memory, no cores (the ACE paper's
//   Ideal).
// - cores: the baseline. Kernels on `system.endpoint.cores` cores read and write memory: the
//   AFI writes every received message to memory; a reduction reads the local and the received
//   data (2N) and sends the sum on or writes it back; a copy (all-gather) or a chip's own data
//   is read (N) before it is sent. Links join neighbours only, so a message to a chip further
//   away is relayed through the memory of every chip on its route.
// - ace: the ACE engine beside the AFI. Its SRAM is split into a partition per phase and a
//   terminal one (each in proportion to the phase's bandwidth times its initial chunk); FSMs
//   are shared out among the phases and take chunks in one order on every chip (LIFO: the
//   collective issued last first; or FIFO); a chunk enters a phase when the FSM it belongs to
//   is free and the partition has room for it (both at once), and leaves the room of the phase
//   before. The TX DMA reads a chunk from memory when it enters the first
//   phase, the ALUs add what arrives, and the RX DMA writes the chunk back from the terminal
//   partition: N read and N written per chip whatever the algorithm.
//
// Memory is a read channel and a write channel per chip, each at
// `system.endpoint.memory_bytes_per_cycle`; every resource (memory channels, the cores' pool,
// the ALUs) serves requests first come, first served, requests being made at the simulated
// cycle they arise. Like the network, the engines are plain discrete-event C++ (no SystemC).
#include <functional>
#include <memory>

#include "sim/collective/collective.h"
#include "sim/noc/event_wheel.h"
#include "sim/noc/topology.h"

namespace tessera::sim {

// An engine running a plan's collectives on a packet network it shares (with the cores' own
// messages in a simulation, or alone in run_engine). The owner issues each collective on each
// chip (a chip's messages go from then on), interleaves process(t) with the network's advance
// (process first, for the same cycle), and passes on the network's reports of the engine's
// messages (ids from id_base, less id_base).
class CollectiveEngine : public TransportListener {
 public:
  virtual void issue(std::uint32_t collective, std::uint32_t chip, Cycles t) = 0;
  virtual void process(Cycles t) = 0;  // every engine event at cycles <= t
  virtual Cycles next_event() const = 0;
  // Throws SimulationError naming what never finished (after the network ran dry).
  virtual void check_finished() const = 0;
  virtual void report(CollectiveResult&) const {}
  virtual Cycles last() const = 0;                   // the last thing any collective did
  virtual const std::vector<Cycles>& done() const = 0;  // per collective: its last
  // Called when a chip's part of a collective is done: what it receives has all arrived and is
  // usable (ace: every chunk of it written back to memory there).
  std::function<void(std::uint32_t collective, std::uint32_t chip, Cycles when)> on_done;
};

// The named engine (ideal, cores or ace) for `plan`; throws Error for an unknown engine or a
// config without the parts it needs.
std::unique_ptr<CollectiveEngine> make_engine(const Config& cfg, const std::string& engine, const CollectivePlan& plan,
                                              RoutedTransport& net, std::uint64_t id_base);

// Runs `plan` alone on `net` (a fresh network of cfg), every chip issuing each collective at its
// release cycle; returns the cycle each collective was done, and fills r's cycles (the last of
// them) and its memory and engine statistics. Throws SimulationError when messages or chunks
// never finish.
std::vector<Cycles> run_engine(const Config& cfg, const std::string& engine, const CollectivePlan& plan,
                               RoutedTransport& net, CollectiveResult& r);

// The plan as the cores engine runs it: every message between chips that are not neighbours
// becomes a chain of messages between neighbours along its route (same chunk and phase; only
// the last hop reduces), and what waited for it waits for the chain's last hop.
CollectivePlan relay_through_neighbours(const CollectivePlan& plan, const NetTopology& topo);

}  // namespace tessera::sim
