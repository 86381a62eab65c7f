// Matrix- and vector-unit cycle counts against hand-computed values (docs/hardware-model.md).
#include <catch2/catch.hpp>

#include "sim/core/compute_model.h"
#include "test/support.h"

using namespace tessera;
using namespace tessera::sim;

namespace {
CoreConfig ipu_core() { return test::config(test::exchange_config()).chip.core; }
}  // namespace

TEST_CASE("matmul cycles: aligned shape, tile 16x4x16 at 64 MAC/cycle", "[compute]") {
  // per tile: MACs 16*4*16/64 = 16 cycles; operand fetch (16*16+16*4)*2 B / 64 B/cycle = 10
  // -> 16 cycles; write-back 16*4*2 B / 32 B/cycle = 4 cycles per output block.
  // m=16,k=64,n=32: blocks 1*8 = 8, tiles 8*4 = 32 -> 6 + 8 + 32*16 + 8*4 = 558.
  CHECK(matmul_cycles(ipu_core(), Dtype::Fp16, {1, 16, 64, 32}) == 558);
}

TEST_CASE("matmul cycles: 17 rows pad to two row tiles", "[compute]") {
  // blocks 2*8 = 16, tiles 64 -> 6 + 8 + 64*16 + 16*4 = 1102, versus 558 for 16 rows.
  CHECK(matmul_cycles(ipu_core(), Dtype::Fp16, {1, 17, 64, 32}) == 1102);
  // k=65 pads the reduction: tiles 8*5 = 40 -> 14 + 640 + 32 = 686.
  CHECK(matmul_cycles(ipu_core(), Dtype::Fp16, {1, 16, 65, 32}) == 686);
  // batch multiplies blocks and tiles: 14 + 3*(512 + 32) = 1646.
  CHECK(matmul_cycles(ipu_core(), Dtype::Fp16, {3, 16, 64, 32}) == 1646);
}

TEST_CASE("matmul cycles: operand fetch bound when the scratchpad is narrow", "[compute]") {
  CoreConfig c = ipu_core();
  c.sram_read_bytes_per_cycle = 16;  // fetch 640/16 = 40 cycles per tile > 16 MAC cycles
  CHECK(matmul_cycles(c, Dtype::Fp16, {1, 16, 64, 32}) == 6 + 8 + 32 * 40 + 8 * 4);
}

TEST_CASE("vector unit cycles", "[compute]") {
  CoreConfig c = ipu_core();
  c.vector.issue_cycles = 4;
  CHECK(elementwise_cycles(c, VecOp::Add, 1000) == 4 + 125);
  CHECK(elementwise_cycles(c, VecOp::Add, 1001) == 4 + 126);  // a partial lane group costs a cycle
  CHECK(elementwise_cycles(c, VecOp::Gelu, 1000) == 4 + 125 * 8);
  // softmax over [2, 64], 8 lanes: 8 groups, tree depth 3; per row
  // max 8 + 3, exp pass 8*(1+4+1) + 3, 1/sum 4, scale 8 -> 74; total 4 + 2*74 = 152.
  CHECK(row_op_cycles(c, ComputeKind::Softmax, 2, 64) == 152);
  // layernorm over [1, 64]: 8+3 + 8*3+3 + 4 + 8*4 = 74 -> 78.
  CHECK(row_op_cycles(c, ComputeKind::Layernorm, 1, 64) == 78);
  CHECK(row_op_cycles(c, ComputeKind::ReduceSum, 4, 20) == 4 + 4 * (3 + 3));
}
