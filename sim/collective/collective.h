#pragma once
// Collectives between the chips (NPUs) of a system: an algorithm turns a collective into
// messages between chips, each sent once the message it depends on has arrived at its sender
// (a chain per chunk: the next step of a ring forwards what the last step brought); an engine
// runs those messages on the interconnect from each chip's AFI. The algorithms know nothing of
// the engines, so the ACE engine and the baseline on cores can run the same message plans.
//
// Built so far: the algorithms (ring, direct, hierarchical per dimension) and the `ideal`
// engine, whose endpoint handles a received message in one cycle (the ACE paper's Ideal);
// the `ace` and `cores` engines are not built yet. docs/collectives.md.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/json_reader.h"
#include "sim/config/config.h"

namespace tessera::sim {

enum class CollectiveOp : std::uint8_t { AllReduce, ReduceScatter, AllGather, AllToAll };
enum class CollectiveAlgorithm : std::uint8_t { Ring, Direct, Hierarchical };

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
  std::string engine = "ideal";
};

// One message of a collective's plan: sent once every message it waits for has arrived at its
// source (a ring step waits for the one before it; a direct all-gather for the whole
// reduce-scatter into its source).
struct CollectiveMessage {
  std::uint32_t src = 0, dst = 0;  // chips
  Bytes bytes = 0;
  std::uint32_t waits_first = 0, waits_count = 0;  // into CollectivePlan::waits
};

struct CollectivePlan {
  std::vector<CollectiveMessage> messages;  // among messages ready at once, this order
  std::vector<std::uint32_t> waits;         // message indices
  std::uint32_t chunks = 0;
};

// The messages of `spec` on the config's chips. Throws Error naming the field when the bytes do
// not divide into chunks, or a chunk into the messages the algorithm needs.
CollectivePlan plan_collective(const Config& cfg, const CollectiveSpec& spec);

struct CollectiveResult {
  Cycles cycles = 0;                     // last message in, from 0
  std::uint64_t messages = 0;
  std::vector<Bytes> sent_bytes;         // per chip
  double algorithm_gb_per_s = 0;         // bytes / time
  double bus_gb_per_s = 0;               // algorithm bandwidth x the op's traffic factor
  double injected_gb_per_s = 0;          // bytes sent per NPU / time (the ACE paper's network BW)
  std::uint64_t packet_hops = 0;
  std::vector<std::pair<std::string, double>> link_utilization;  // chip links only, busy share
};

// Runs the plan on the config's interconnect with the named engine (the system needs an AFI).
CollectiveResult run_collective(const Config& cfg, const CollectiveSpec& spec);
Json collective_json(const Config& cfg, const CollectiveSpec& spec, const CollectiveResult& r);

}  // namespace tessera::sim
