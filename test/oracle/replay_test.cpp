// The oracle's replay (compiler/oracle/replay.h) against hand-computed cycles and against the
// simulator running the same messages as a program.
#include <catch2/catch.hpp>

#include "compiler/lower/lower.h"
#include "compiler/oracle/replay.h"
#include "compiler/ir/graph.h"
#include "sim/core/compute_model.h"
#include "test/support.h"

using namespace tessera;

namespace {

ir::Tensor tensor(std::vector<std::int64_t> shape) {
  ir::Tensor t;
  t.name = "T";
  t.shape = std::move(shape);
  t.role = ir::TensorRole::Activation;
  return t;
}

// Every core's box of a [rows, cols] tensor split into a grid of `gr` x `gc` blocks.
std::vector<sim::View> grid(std::int64_t rows, std::int64_t cols, std::int64_t gr, std::int64_t gc, std::size_t cores) {
  std::vector<sim::View> v(cores);
  for (std::int64_t c = 0; c < gr * gc; ++c)
    v[static_cast<std::size_t>(c)] = sim::View{"T", {c / gc * (rows / gr), c % gc * (cols / gc)}, {rows / gr, cols / gc}, {false, false}};
  return v;
}

// The program lowering emits for a re-layout: per core its sends, then copies, then receives.
Json program(const std::vector<lower::Piece>& pieces, const sim::Config& cfg) {
  test::ProgramBuilder b;
  for (std::uint32_t c = 0; c < cfg.chip.cores; ++c) b.alloc(c, "buf", 4096);
  for (const auto& p : pieces)
    if (p.from != p.to) b.send(static_cast<std::uint32_t>(p.from), static_cast<std::uint32_t>(p.to), static_cast<std::uint64_t>(p.box.elements() * 2));
  for (const auto& p : pieces)
    if (p.from == p.to)
      b.delay(static_cast<std::uint32_t>(p.to), sim::elementwise_cycles(cfg.chip.core, sim::VecOp::Copy, static_cast<std::uint64_t>(p.box.elements())));
  for (const auto& p : pieces)
    if (p.from != p.to) b.recv(static_cast<std::uint32_t>(p.to), static_cast<std::uint32_t>(p.from), static_cast<std::uint64_t>(p.box.elements() * 2));
  return b.json();
}

// The pieces as the oracle takes them: (sender, receiver, fp16 bytes), in program order.
std::vector<cost::Message> messages(const std::vector<lower::Piece>& pieces) {
  std::vector<cost::Message> m;
  for (const auto& p : pieces)
    m.push_back({static_cast<std::uint32_t>(p.from), static_cast<std::uint32_t>(p.to), static_cast<Bytes>(p.box.elements() * 2)});
  return m;
}

}  // namespace

TEST_CASE("a gather into one core takes its receive port in turns", "[oracle]") {
  const sim::Config cfg = test::config(test::exchange_config(4));
  const ir::Tensor t = tensor({4, 8});
  // Rows striped over 4 cores, gathered whole on core 0: cores 1-3 send 16 bytes (4 cycles at
  // 4 B/cycle) each into core 0's one receive port, one after another: the last starts at 8 and
  // arrives at 8 + 4 + 30 = 42; core 0 copies its own row (8 elements: 1 cycle) meanwhile.
  std::vector<sim::View> all(4);
  all[0] = sim::View{"T", {0, 0}, {4, 8}, {false, false}};
  const auto pieces = lower::relayout_pieces(t.shape, lower::stripes(t, 4), all);
  REQUIRE(pieces.size() == 4);
  oracle::Replay replay(cfg);
  CHECK(replay.gather(messages(pieces)) == 42);
  // Two rounds of a 4-core ring, 64 bytes each: 16 cycles + 30 latency, no contention.
  CHECK(replay.round({{0, 1}, {1, 2}, {2, 3}, {3, 0}}, 64) == 46);
  CHECK(replay.round({{0, 1}, {1, 2}, {2, 3}, {3, 0}}, 64) == 46);  // nothing left from before
  // Two operands at once (test/cost/features_test.cpp computes the ports' 16 cycles by hand):
  // core 2 takes 1->2 (put up at 4) before 3->2 (put up at 12), oldest first; + 30 latency.
  CHECK(replay.gather({{1, 0, 16}, {2, 0, 16}, {3, 0, 16}, {3, 2, 16}, {1, 2, 16}}) == 46);
}

TEST_CASE("the replay of a re-layout matches the simulator running it", "[oracle]") {
  // Rows striped over 8 cores, re-laid out as a 2 x 4 grid of blocks (and back): every core
  // sends to four and receives from two, with some data already in place.
  const ir::Tensor t = tensor({16, 64});
  const auto rows = grid(16, 64, 8, 1, 8), blocks = grid(16, 64, 2, 4, 8);
  for (const Json& c : {test::exchange_config(8), test::mesh_config(2, 4)}) {
    const sim::Config cfg = test::config(c);
    INFO(cfg.name);
    oracle::Replay replay(cfg);
    for (const auto& [src, dst] : {std::pair{rows, blocks}, std::pair{blocks, rows}}) {
      const auto pieces = lower::relayout_pieces(t.shape, src, dst);
      const Json r = test::run(c, program(pieces, cfg));
      CHECK(replay.gather(messages(pieces)) == static_cast<double>(test::total(r)));
    }
  }
}
