// The roofline's two bounds against hand-computed values on the small test config (8 B/cycle of
// ports per core, 64 MACs per cycle, 8 lanes; gelu 8 cycles per lane group).
#include <catch2/catch.hpp>

#include "compiler/cost/roofline.h"
#include "test/support.h"

using namespace tessera;

namespace {

ir::Workload one_op(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& tensors,
                    const std::string& expr, const std::map<std::string, std::int64_t>& out_extents = {}) {
  ir::Workload w;
  w.name = "one-op";
  for (const auto& [name, shape] : tensors) w.add_tensor(name, shape, ir::TensorRole::Input);
  w.add_op("op", expr, out_extents);
  w.finalize();
  return w;
}

}  // namespace

TEST_CASE("contraction words: Loomis-Whitney less the data a core holds", "[cost][roofline]") {
  // 128^3 on 8 cores: 2^18 MACs each touch at least 3 * (2^18)^(2/3) = 3 * 4096 = 12,288 elements;
  // each core holds 3 * 128^2 / 8 = 6,144 of them.
  CHECK(cost::contraction_words(1, 128, 128, 128, 8) == Approx(6144));
  // 8 products of 64^3 on 8 cores: a whole product each, holding exactly its data: nothing moves.
  CHECK(cost::contraction_words(8, 64, 64, 64, 8) == Approx(0).margin(1e-9));
  // on 64 cores: 2^15 MACs each, 3 * 2^10 touched, 8 * 3 * 4096 / 64 = 1,536 held.
  CHECK(cost::contraction_words(8, 64, 64, 64, 64) == Approx(1536));
  // one core holds everything
  CHECK(cost::contraction_words(1, 100, 30, 7, 1) == Approx(0).margin(1e-9));
}

TEST_CASE("operator rooflines: matrix rate, lane groups, exchange through both ports", "[cost][roofline]") {
  SECTION("matmul, compute-bound on 8 cores") {
    const sim::Config cfg = sim::parse_config(test::exchange_config(8), "test");
    const ir::Workload w = one_op({{"A", {128, 128}}, {"B", {128, 128}}}, "C[m,n] += A[m,k] * B[k,n]");
    const cost::OpRoofline r = cost::op_roofline(w, w.ops()[0], cfg, 8);
    CHECK(r.compute_cycles == Approx(4096));  // 2^21 MACs / 8 cores / 64 per cycle
    CHECK(r.exchange_cycles == Approx(1536));  // 6,144 words * 2 B / 8 B per cycle
    CHECK(r.bound_cycles() == Approx(4096));
  }
  SECTION("matmul, exchange-bound on 64 cores") {
    const sim::Config cfg = sim::parse_config(test::exchange_config(64), "test");
    const ir::Workload w = one_op({{"A", {64, 64}}, {"B", {64, 64}}}, "C[m,n] += A[m,k] * B[k,n]");
    const cost::OpRoofline r = cost::op_roofline(w, w.ops()[0], cfg, 64);
    // 2^12 MACs per core: 64 cycles; 3 * 2^8 - 3 * 4096 / 64 = 576 words = 1,152 B at 8 B/cycle
    CHECK(r.compute_cycles == Approx(64));
    CHECK(r.exchange_cycles == Approx(144));
    CHECK(r.bound_cycles() == Approx(144));
  }
  SECTION("batched matmul: batch axes in all three tensors") {
    const sim::Config cfg = sim::parse_config(test::exchange_config(64), "test");
    const ir::Workload w = one_op({{"A", {8, 64, 64}}, {"B", {8, 64, 64}}}, "C[b,m,n] += A[b,m,k] * B[b,k,n]");
    const cost::OpRoofline r = cost::op_roofline(w, w.ops()[0], cfg, 64);
    CHECK(r.compute_cycles == Approx(512));   // 2^21 / 64 / 64
    CHECK(r.exchange_cycles == Approx(384));  // 1,536 words * 2 B / 8
  }
  SECTION("convolution: compound indices get no exchange bound") {
    const sim::Config cfg = sim::parse_config(test::exchange_config(8), "test");
    const ir::Workload w = one_op({{"I", {1, 16, 8, 8}}, {"W", {32, 16, 3, 3}}},
                                  "O[n,f,y,x] += I[n,c,y+ky-1,x+kx-1] * W[f,c,ky,kx]", {{"y", 8}, {"x", 8}});
    const cost::OpRoofline r = cost::op_roofline(w, w.ops()[0], cfg, 8);
    CHECK(r.compute_cycles == Approx(1.0 * 32 * 64 * 16 * 9 / 8 / 64));  // 576
    CHECK(r.exchange_cycles == 0);
  }
  SECTION("vector operators: lane groups times the passes they need") {
    const sim::Config cfg = sim::parse_config(test::exchange_config(8), "test");
    const ir::Workload g = one_op({{"X", {64, 64}}}, "Y[m,n] = gelu(X[m,n])");
    CHECK(cost::op_roofline(g, g.ops()[0], cfg, 8).compute_cycles == Approx(64 * 8));  // 512 per core / 8 lanes * 8
    const ir::Workload s = one_op({{"X", {64, 64}}}, "Y[m,n] = softmax(X[m,n])");
    CHECK(cost::op_roofline(s, s.ops()[0], cfg, 8).compute_cycles == Approx(64 * 8));  // max+sub+exp+add+mul = 8
    const ir::Workload r = one_op({{"X", {64, 64}}}, "S[m] += X[m,n]");
    CHECK(cost::op_roofline(r, r.ops()[0], cfg, 8).compute_cycles == Approx(64));  // one add per element
    CHECK(cost::op_roofline(r, r.ops()[0], cfg, 8).exchange_cycles == 0);
  }
}

TEST_CASE("a model's roofline sums each operator's larger bound", "[cost][roofline]") {
  const sim::Config cfg = sim::parse_config(test::exchange_config(64), "test");
  ir::Workload w;
  w.name = "two-ops";
  w.add_tensor("A", {64, 64}, ir::TensorRole::Input);
  w.add_tensor("B", {64, 64}, ir::TensorRole::Weight);
  w.add_op("mm", "C[m,n] += A[m,k] * B[k,n]");
  w.add_op("act", "Y[m,n] = gelu(C[m,n])");
  w.finalize();
  const cost::Roofline r = cost::model_roofline(w, cfg, 64);
  REQUIRE(r.ops.size() == 2);
  CHECK(r.compute_cycles == Approx(64 + 64));  // matmul 64, gelu 4096 / 64 / 8 * 8 = 64
  CHECK(r.exchange_cycles == Approx(144));
  CHECK(r.bound_cycles == Approx(144 + 64));
}
