#include "sim/core/compute_model.h"

#include <algorithm>
#include <cmath>

namespace tessera::sim {

std::optional<ComputeKind> parse_compute_kind(const std::string& kind) {
  if (kind == "matmul") return ComputeKind::Matmul;
  if (kind == "reduce_sum") return ComputeKind::ReduceSum;
  if (kind == "reduce_max") return ComputeKind::ReduceMax;
  if (kind == "softmax") return ComputeKind::Softmax;
  if (kind == "layernorm") return ComputeKind::Layernorm;
  if (parse_vec_op(kind)) return ComputeKind::Elementwise;
  return std::nullopt;
}

std::uint64_t log2_ceil(std::uint64_t x) {
  std::uint64_t d = 0;
  while ((std::uint64_t(1) << d) < x) ++d;
  return d;
}

namespace {
Cycles bytes_to_cycles(double bytes, double bytes_per_cycle) {
  return static_cast<Cycles>(std::ceil(bytes / bytes_per_cycle));
}
Cycles vec_cost(const CoreConfig& core, VecOp op) {
  return core.vector.op_cycles[static_cast<int>(op)];
}
}  // namespace

Cycles matmul_cycles(const CoreConfig& core, Dtype dtype, const MatmulShape& s) {
  const MatrixUnitConfig& mu = core.matrix;
  const std::uint64_t bm = ceil_div(s.m, mu.tile_m), bn = ceil_div(s.n, mu.tile_n),
                      bk = ceil_div(s.k, mu.tile_k);
  const std::uint64_t blocks = s.batch * bm * bn;  // output blocks
  const std::uint64_t tiles = blocks * bk;
  const double size = dtype_bytes(dtype);
  const Cycles mac = ceil_div(std::uint64_t(mu.tile_m) * mu.tile_n * mu.tile_k,
                              mu.macs_per_cycle.at(dtype));
  const Cycles fetch = bytes_to_cycles(
      (double(mu.tile_m) * mu.tile_k + double(mu.tile_k) * mu.tile_n) * size,
      core.sram_read_bytes_per_cycle);
  const Cycles writeback =
      bytes_to_cycles(double(mu.tile_m) * mu.tile_n * size, core.sram_write_bytes_per_cycle);
  return mu.issue_cycles + mu.pipeline_fill_cycles + tiles * std::max(mac, fetch) +
         blocks * writeback;
}

Cycles elementwise_cycles(const CoreConfig& core, VecOp op, std::uint64_t elements) {
  return core.vector.issue_cycles + ceil_div(elements, core.vector.lanes) * vec_cost(core, op);
}

Cycles row_op_cycles(const CoreConfig& core, ComputeKind kind, std::uint64_t rows,
                     std::uint64_t cols) {
  const std::uint64_t groups = ceil_div(cols, core.vector.lanes);  // lane groups per row
  const std::uint64_t tree = log2_ceil(core.vector.lanes);        // combine the lanes
  auto c = [&](VecOp op) { return vec_cost(core, op); };
  std::uint64_t per_row = 0;
  switch (kind) {
    case ComputeKind::ReduceSum: per_row = groups * c(VecOp::Add) + tree; break;
    case ComputeKind::ReduceMax: per_row = groups * c(VecOp::Max) + tree; break;
    case ComputeKind::Softmax:
      // pass 1: running max; pass 2: exp(x - max) and running sum; pass 3: scale by 1/sum.
      per_row = groups * c(VecOp::Max) + tree + groups * (c(VecOp::Sub) + c(VecOp::Exp) + c(VecOp::Add)) +
                tree + c(VecOp::Div) + groups * c(VecOp::Mul);
      break;
    case ComputeKind::Layernorm:
      // pass 1: sum for the mean; pass 2: (x - mean)^2 summed; pass 3: normalise, scale, shift.
      per_row = groups * c(VecOp::Add) + tree + groups * (c(VecOp::Sub) + c(VecOp::Mul) + c(VecOp::Add)) +
                tree + c(VecOp::Rsqrt) + groups * (c(VecOp::Sub) + 2 * c(VecOp::Mul) + c(VecOp::Add));
      break;
    default: break;
  }
  return core.vector.issue_cycles + rows * per_row;
}

Cycles roofline_cycles(double flops, double bytes, double flops_per_cycle, double bytes_per_cycle) {
  return static_cast<Cycles>(std::ceil(std::max(flops / flops_per_cycle, bytes / bytes_per_cycle)));
}

}  // namespace tessera::sim
