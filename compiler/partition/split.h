#pragma once
// A compiled model's operators as the partition stage sees them, and a placement's share of the
// model per chip (docs/partition.md, "Models across chips").
//
// operator_graph: one node per operator, an edge from the producer of every activation to each
// operator that reads it. chip_workloads: the operators a placement puts on one chip, as a
// workload of their own that the compiler plans on that chip's cores; a tensor produced on an
// earlier chip becomes an input there, a tensor read on a later chip an output here.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/partition/placement.h"

namespace tessera::partition {

// Node bytes are the weights each operator is the first to read (a weight shared by several
// operators is counted once): the static stand-in for memory; the compiler's lowering of each
// chip's workload is the full check. `chip_capacity_bytes` 0: no static memory constraint.
Graph operator_graph(const ir::Workload& w, std::uint64_t chip_capacity_bytes = 0);

// An activation that leaves its chip: produced on chip `from`, read by operators on chip `to`.
struct Crossing {
  std::string tensor;
  std::uint32_t from = 0, to = 0;
  Bytes bytes = 0;
};

struct Split {
  std::vector<ir::Workload> chips;   // chips 0..k (the chips in use)
  std::vector<Crossing> crossings;   // by producer chip, then producing operator, then consumer chip
};

// Throws Error when the placement fails check() (the message says which constraint, where), and
// when it does not give every operator a chip. A weight read on two chips is held on both.
Split split_workload(const ir::Workload& w, const Placement& f, std::uint32_t chips);

}  // namespace tessera::partition
