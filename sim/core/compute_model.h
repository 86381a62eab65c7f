#pragma once
// Cycle counts of the core's matrix and vector units. Pure functions of the core config and the
// operation, evaluated once when a program is loaded (not per simulated event). The formulas are
// documented in docs/hardware-model.md; tests check them against hand-computed counts.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/config/config.h"

namespace tessera::sim {

enum class ComputeKind : std::uint8_t {
  Matmul,       // C[b,m,n] += A[b,m,k] * B[k,n]
  Elementwise,  // out[i] = op(in0[i] (, in1[i]))
  ReduceSum,    // out[r] = sum_c in[r,c]
  ReduceMax,    // out[r] = max_c in[r,c]
  Softmax,      // along the last axis of [rows, cols]
  Layernorm,    // along the last axis of [rows, cols]
};

// The program's compute kind names: "matmul", a vector op ("add", "copy", ...), "reduce_sum",
// "reduce_max", "softmax", "layernorm"; nullopt for anything else.
std::optional<ComputeKind> parse_compute_kind(const std::string& kind);

struct MatmulShape {
  std::uint64_t batch = 1, m = 0, k = 0, n = 0;
};

// Matrix unit: ceil-tiled block products (padding waste when a dimension is not a tile multiple),
// each tile bounded by MAC throughput or by operand fetch from the scratchpad, plus one result
// write-back per output block and a fixed issue + pipeline fill/drain.
Cycles matmul_cycles(const CoreConfig& core, Dtype dtype, const MatmulShape& s);

// Vector unit, lane-bound (config validation guarantees the scratchpad keeps up).
Cycles elementwise_cycles(const CoreConfig& core, VecOp op, std::uint64_t elements);
Cycles row_op_cycles(const CoreConfig& core, ComputeKind kind, std::uint64_t rows,
                     std::uint64_t cols);

// ceil(log2(x)) for x >= 1: the depth of a lane-reduction tree.
std::uint64_t log2_ceil(std::uint64_t x);

// A GPU-like NPU's work (system.npu, tessera train and the pipeline runner) as a roofline: the
// longer of its FLOPs and its memory bytes at the given rates, in whole cycles.
Cycles roofline_cycles(double flops, double bytes, double flops_per_cycle, double bytes_per_cycle);

}  // namespace tessera::sim
