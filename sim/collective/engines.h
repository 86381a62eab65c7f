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
//   are shared out among the phases and take chunks in order; a chunk enters a phase when the
//   FSM it belongs to is free and the partition has room for it (both at once), and leaves the
//   room of the phase before. The TX DMA reads a chunk from memory when it enters the first
//   phase, the ALUs add what arrives, and the RX DMA writes the chunk back from the terminal
//   partition: N read and N written per chip whatever the algorithm.
//
// Memory is a read channel and a write channel per chip, each at
// `system.endpoint.memory_bytes_per_cycle`; every resource (memory channels, the cores' pool,
// the ALUs) serves requests first come, first served, requests being made at the simulated
// cycle they arise. Like the network, the engines are plain discrete-event C++ (no SystemC).
#include "sim/collective/collective.h"
#include "sim/noc/packet_net.h"

namespace tessera::sim {

// Runs `plan` with the named engine on `net` (a fresh network of cfg); returns the cycle each of
// the plan's collectives is done on every chip, and fills r's cycles (the last of them) and its
// memory and engine statistics. Throws Error for an engine the config lacks parts for,
// SimulationError when messages or chunks never finish.
std::vector<Cycles> run_engine(const Config& cfg, const std::string& engine, const CollectivePlan& plan,
                               PacketNetwork& net, CollectiveResult& r);

// The plan as the cores engine runs it: every message between chips that are not neighbours
// becomes a chain of messages between neighbours along its route (same chunk and phase; only
// the last hop reduces), and what waited for it waits for the chain's last hop.
CollectivePlan relay_through_neighbours(const CollectivePlan& plan, const NetTopology& topo);

}  // namespace tessera::sim
