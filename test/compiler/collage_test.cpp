// The collage's choice (compiler/schedule/schedule.h) on hand-made prices: the chain DP, the
// moves priced over every edge and the margin a mix must clear.
#include <catch2/catch.hpp>

#include "compiler/ir/graph.h"
#include "compiler/schedule/schedule.h"

using namespace tessera;

namespace {

// Attention's shape: q and k read the input, scores reads both, out reads scores. Execution
// order q, k, scores, out: the chain DP sees the edge k -> scores but not q -> scores.
ir::Workload attention() {
  ir::Workload w;
  w.name = "attention";
  w.add_tensor("X", {16, 16}, ir::TensorRole::Input);
  w.add_tensor("Wq", {16, 16}, ir::TensorRole::Weight);
  w.add_tensor("Wk", {16, 16}, ir::TensorRole::Weight);
  w.add_tensor("Wo", {16, 16}, ir::TensorRole::Weight);
  w.add_op("q", "Q[m,n] += X[m,k] * Wq[k,n]");
  w.add_op("k", "K[m,n] += X[m,k] * Wk[k,n]");
  w.add_op("scores", "S[m,n] += Q[m,k] * K[n,k]");
  w.add_op("out", "O[m,n] += S[m,k] * Wo[k,n]");
  w.finalize();
  return w;
}

std::vector<bool> vgm_at(std::size_t n, std::vector<std::size_t> on) {
  std::vector<bool> v(n, false);
  for (auto i : on) v[i] = true;
  return v;
}

}  // namespace

TEST_CASE("collage: an edge the chain DP leaves out is priced by the moves", "[collage]") {
  const ir::Workload w = attention();
  schedule::CollagePrices c;
  // scores is 40 cheaper on VGM, but each of its T10 producers pays 30 to store its output to
  // stripes. The DP sees k's 30 (100 > 60 + 30) and takes VGM; over every edge that is
  // 10 + 10 + 60 + 30 + 30 + 10 = 150 against 130 all on T10.
  c.t10 = {10, 10, 100, 10};
  c.vgm = {50, 50, 60, 50};
  c.store = {30, 30, 30, 30};
  c.restripe = {0, 0, 0, 0};
  CHECK(schedule::collage_price(w, c, vgm_at(4, {2})) == Approx(150));
  CHECK(schedule::collage_price(w, c, vgm_at(4, {})) == Approx(130));
  CHECK(schedule::collage_choice(w, c) == vgm_at(4, {}));
  // With stores of 15, scores on VGM costs 10 + 10 + 60 + 15 + 15 + 10 = 120 against 130: kept
  // (7.7% under, past the 0.5% margin).
  c.store = {15, 15, 15, 15};
  CHECK(schedule::collage_choice(w, c) == vgm_at(4, {2}));
  // 129.5 against 130 (0.4% under): within the margin, all T10.
  c.vgm[2] = 69.5;  // with its two stores 99.5, where T10 pays 100
  CHECK(schedule::collage_price(w, c, vgm_at(4, {2})) == Approx(129.5));
  CHECK(schedule::collage_choice(w, c) == vgm_at(4, {}));
}
