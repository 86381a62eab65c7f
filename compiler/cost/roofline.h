#pragma once
// A roofline for a whole model on one chip: per operator the larger of two lower bounds, its
// compute at the chip's peak rate and the exchange any plan must do, summed over the operators
// (they run one after another). The fraction of it a compiled plan reaches on the simulator is
// an absolute yardstick for plan quality (docs/cost.md, "Roofline"). Derived from the config
// and the operator's shape alone: nothing here knows a plan or the simulator's formulas.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "sim/config/config.h"

namespace tessera::cost {

struct OpRoofline {
  std::string op;
  // Every multiply-add on the matrix units of all cores at their peak rate, or every element
  // operation on the vector units (a lane group per cycle and op, no issue costs).
  double compute_cycles = 0;
  // The bytes the busiest core must move through its ports (send + receive) for a contraction
  // of plain indices (matmul, batched matmul), by the Loomis-Whitney bound with work and data
  // spread evenly; 0 for every other operator (its data could already sit where it is used).
  double exchange_cycles = 0;
  double bound_cycles() const { return compute_cycles > exchange_cycles ? compute_cycles : exchange_cycles; }
};

struct Roofline {
  std::vector<OpRoofline> ops;
  double compute_cycles = 0, exchange_cycles = 0;  // sums over the operators
  double bound_cycles = 0;                         // sum of each operator's larger bound
};

// `cores`: how many cores the operators are spread over (a chip's, or all of a system's).
OpRoofline op_roofline(const ir::Workload& w, const ir::Operator& op, const sim::Config& cfg,
                       std::uint32_t cores);
Roofline model_roofline(const ir::Workload& w, const sim::Config& cfg, std::uint32_t cores);

// The words the busiest of `cores` must move for a batched contraction of `batch` independent
// (m x k) · (k x n) products: at least 3 w^(2/3) elements touched per product it works on
// (Loomis-Whitney), its work w = batch·m·n·k / cores taken in whole products where it can (the
// cheapest way), less the data it holds, (batch·(mk + kn + mn)) / cores. Never negative.
double contraction_words(double batch, double m, double n, double k, double cores);

}  // namespace tessera::cost
