#pragma once
// Collectives between the chips (NPUs) of a system: an algorithm turns a collective into
// messages between chips, each sent once the message it depends on has arrived at its sender
// (a chain per chunk: the next step of a ring forwards what the last step brought); an engine
// runs those messages on the interconnect from each chip's AFI. The algorithms know nothing of
// the engines, so the ACE engine and the baseline on cores can run the same message plans.
//
// Algorithms: ring, direct, hierarchical per dimension, halving-doubling. Engines (sim/collective/engines.h):
// `ideal` (the endpoint handles a received message in one cycle, the ACE paper's Ideal),
// `cores` (kernels on cores that read and write memory: the paper's baseline) and `ace` (the
// collectives engine beside the AFI: SRAM partitions, FSMs, ALUs, DMA). docs/collectives.md.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/json_reader.h"
#include "sim/config/config.h"

namespace tessera::sim {

enum class CollectiveOp : std::uint8_t { AllReduce, ReduceScatter, AllGather, AllToAll };
enum class CollectiveAlgorithm : std::uint8_t { Ring, Direct, Hierarchical, HalvingDoubling };

CollectiveOp parse_collective_op(const std::string& name);               // throws Error listing them
CollectiveAlgorithm parse_collective_algorithm(const std::string& name);  // throws Error listing them
const char* collective_op_name(CollectiveOp op);
const char* collective_algorithm_name(CollectiveAlgorithm a);

struct CollectiveSpec {
  CollectiveOp op = CollectiveOp::AllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  Bytes bytes = 0;                // per NPU: the buffer each holds (all-gather: the gathered result)
  Bytes chunk_bytes = 64 << 10;   // pipelining unit (ACE: 64 kB); 0: one chunk of `bytes`
  // A chip starts a chunk once it is done with the chunk this many before it (0: no limit).
  // Chunks issued all at once queue behind each other at every port, so no chunk gets ahead
  // into the next phase; a window lets phases of different chunks overlap.
  std::uint32_t chunks_in_flight = 16;
  std::string engine = "ideal";  // ideal, cores or ace; the last two need system.endpoint (and system.ace)
};

// One message of a collective's plan: sent once every message it waits for has arrived at its
// source (a ring step waits for the one before it; a direct all-gather for the whole
// reduce-scatter into its source).
struct CollectiveMessage {
  std::uint32_t src = 0, dst = 0;  // chips
  Bytes bytes = 0;
  std::uint32_t waits_first = 0, waits_count = 0;  // into CollectivePlan::waits
  std::uint32_t chunk = 0;
  std::uint8_t phase = 0;   // index into CollectivePlan::phases
  bool reduce = false;      // the receiver adds it to its own data (else it keeps or forwards it)
};

// What one phase asks of a chip, per chunk: the data it holds at most during the phase, the
// data it starts from, the bandwidth its links give it (the ACE partition rule), the bytes it
// sends, and the chunk's time through the phase on idle links (its steps, each a link latency
// and a message's time on the link).
struct CollectivePhase {
  Bytes footprint_bytes = 0;
  Bytes initial_bytes = 0;
  double bytes_per_cycle = 0;
  Bytes sent_bytes = 0;
  double zero_load_cycles = 0;
};

// The messages of one or more collectives. Chunks are numbered across them, in the order the
// collectives were added; each chunk goes through the same phases (footprints scale with the
// chunk's size).
struct CollectivePlan {
  std::vector<CollectiveMessage> messages;  // among messages ready at once, this order
  std::vector<std::uint32_t> waits;         // message indices
  std::vector<CollectivePhase> phases;      // for a chunk of chunk_bytes
  std::uint32_t chunks = 0, collectives = 0;
  Bytes chunk_bytes = 0;                    // the largest chunk
  std::vector<std::vector<CollectivePhase>> collective_phases;  // per collective, for its own chunk
  std::vector<Bytes> chunk_sizes;           // per chunk
  std::vector<Cycles> collective_release;   // per collective: the cycle it is issued (run alone)
  std::vector<std::uint32_t> chunk_collective;
};

// The messages of `spec` on the config's chips. Throws Error naming the field when the bytes do
// not divide into chunks, or a chunk into the messages the algorithm needs.
CollectivePlan plan_collective(const Config& cfg, const CollectiveSpec& spec);
// Adds `spec`'s messages to `plan` as a collective issued at cycle `release`.
void append_collective(const Config& cfg, const CollectiveSpec& spec, Cycles release, CollectivePlan& plan);
// The plan of several collectives as `engine` runs them, each issued at its cycle: for ace
// without the chunk window (its FSMs and SRAM partitions admit the chunks).
CollectivePlan plan_collectives(const Config& cfg, const std::string& engine,
                                const std::vector<std::pair<CollectiveSpec, Cycles>>& issued);

struct CollectiveResult {
  Cycles cycles = 0;                     // last message in, from 0
  std::uint64_t messages = 0;
  std::vector<Bytes> sent_bytes;         // per chip
  double algorithm_gb_per_s = 0;         // bytes / time
  double bus_gb_per_s = 0;               // algorithm bandwidth x the op's traffic factor
  double injected_gb_per_s = 0;          // bytes sent per NPU / time (the ACE paper's network BW)
  std::uint64_t packet_hops = 0;
  std::vector<std::pair<std::string, double>> link_utilization;  // chip links only, busy share
  // Endpoint memory traffic per chip (zero for the ideal engine, which has none).
  std::vector<Bytes> memory_read_bytes, memory_write_bytes;
  // ace: chunks that finished on a chip before a chunk with a lower number (across FSMs), and
  // the cycles chunks waited, summed, for an FSM or room in a partition
  std::uint64_t chunks_out_of_order = 0;
  Cycles admission_wait_cycles = 0;
  // ace: how the FSMs and the SRAM were shared out (per phase; the SRAM then the terminal one)
  std::vector<std::uint32_t> ace_fsms_per_phase;
  std::vector<Bytes> ace_partition_bytes;
};

// Runs the plan on the config's interconnect with the named engine (the system needs an AFI).
CollectiveResult run_collective(const Config& cfg, const CollectiveSpec& spec);

// Several collectives on one network, each issued at its cycle (an iteration's gradient
// all-reduces): the cycle each is done on every chip, and the engine's totals. `engine` as in
// CollectiveSpec; every spec's own engine field is ignored.
struct CollectiveBatchResult {
  std::vector<Cycles> done;  // per collective, in the order given
  CollectiveResult totals;   // cycles: the last done; bandwidths left zero
};
CollectiveBatchResult run_collectives(const Config& cfg, const std::string& engine,
                                      const std::vector<std::pair<CollectiveSpec, Cycles>>& issued);
Json collective_json(const Config& cfg, const CollectiveSpec& spec, const CollectiveResult& r);

}  // namespace tessera::sim
