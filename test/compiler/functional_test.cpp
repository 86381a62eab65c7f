// Compiled programs compute the right numbers: matmul, convolution, attention and a small
// transformer block go through planning, scheduling and lowering for both planners, run on the
// simulator with real values, and must equal a direct reference evaluation of the graph.
#include <catch2/catch.hpp>

#include "compiler/compile.h"
#include "compiler/lower/lower.h"
#include "sim/simulate.h"
#include "test/support.h"

using namespace tessera;

namespace {

sim::Config small_chip(std::uint32_t cores, std::uint64_t sram) {
  Json c = test::exchange_config(cores);
  c["chip"]["core"]["sram_bytes"] = sram;
  return sim::parse_config(c, "test config");
}

struct Outcome {
  double max_error = 0;
  bool rotated = false;
  Json results;
};

Outcome compile_and_check(const ir::Workload& w, const sim::Config& cfg, const std::string& planner) {
  compiler::CompileOptions o;
  o.planner = planner;
  o.functional = true;
  o.shift_buffer_bytes = 256;  // a tiny chip gets a tiny shift buffer
  compiler::Compiled c = compiler::compile(w, cfg, o);
  sim::ProgramOptions po;
  po.functional = true;
  Outcome out;
  out.results = sim::simulate(cfg, sim::parse_program(c.program.json(), w.name, cfg, po)).results;
  for (const auto& op : c.schedule.ops) out.rotated = out.rotated || !op.active.loop.empty();
  out.max_error = compiler::functional_max_error(w, out.results);
  return out;
}

ir::Workload transformer_block(std::int64_t batch, std::int64_t seq, std::int64_t hidden, std::int64_t heads, std::int64_t ffn) {
  ir::Workload w;
  w.name = "block";
  const std::int64_t dh = hidden / heads;
  w.add_tensor("X", {batch, seq, hidden}, ir::TensorRole::Input);
  for (const char* n : {"Wq", "Wk", "Wv"}) w.add_tensor(n, {hidden, heads, dh}, ir::TensorRole::Weight);
  w.add_tensor("Wo", {heads, dh, hidden}, ir::TensorRole::Weight);
  w.add_tensor("G", {hidden}, ir::TensorRole::Weight);
  w.add_tensor("Be", {hidden}, ir::TensorRole::Weight);
  w.add_tensor("W1", {hidden, ffn}, ir::TensorRole::Weight);
  w.add_tensor("B1", {ffn}, ir::TensorRole::Weight);
  w.add_tensor("W2", {ffn, hidden}, ir::TensorRole::Weight);
  w.add_op("q", "Q[b,s,h,d] += X[b,s,e] * Wq[e,h,d]");
  w.add_op("k", "K[b,s,h,d] += X[b,s,e] * Wk[e,h,d]");
  w.add_op("v", "V[b,s,h,d] += X[b,s,e] * Wv[e,h,d]");
  w.add_op("scores", "S[b,h,i,j] += Q[b,i,h,d] * K[b,j,h,d]");
  w.add_op("scale", "T[b,h,i,j] = S[b,h,i,j] * 0.25");
  w.add_op("softmax", "P[b,h,i,j] = softmax(T[b,h,i,j])");
  w.add_op("context", "C[b,i,h,d] += P[b,h,i,j] * V[b,j,h,d]");
  w.add_op("proj", "Y[b,s,e] += C[b,s,h,d] * Wo[h,d,e]");
  w.add_op("res", "R[b,s,e] = X[b,s,e] + Y[b,s,e]");
  w.add_op("ln", "N[b,s,e] = layernorm(R[b,s,e], G[e], Be[e])");
  w.add_op("up", "U[b,s,n] += N[b,s,k] * W1[k,n]");
  w.add_op("bias", "Ub[b,s,n] = U[b,s,n] + B1[n]");
  w.add_op("gelu", "A[b,s,n] = gelu(Ub[b,s,n])");
  w.add_op("down", "D[b,s,n] += A[b,s,k] * W2[k,n]");
  w.add_op("res2", "Z[b,s,e] = N[b,s,e] + D[b,s,e]");
  w.finalize();
  return w;
}

// The T10 and the VGM schedules of `w` on `cfg` (functional, a tiny shift buffer).
std::pair<schedule::Schedule, schedule::Schedule> both_schedules(const ir::Workload& w, const sim::Config& cfg) {
  compiler::CompileOptions o;
  o.functional = true;
  o.shift_buffer_bytes = 256;
  o.planner = "t10";
  schedule::Schedule t10 = compiler::compile(w, cfg, o).schedule;
  o.planner = "vgm";
  return {std::move(t10), compiler::compile(w, cfg, o).schedule};
}

// Operator i's plan from the VGM schedule where use_vgm[i], else from T10's, lowered and run in
// functional mode: the largest error against the reference.
double mixed_error(const ir::Workload& w, const sim::Config& cfg, const schedule::Schedule& t10,
                   const schedule::Schedule& vgm, const std::vector<bool>& use_vgm) {
  schedule::Schedule mixed;
  mixed.planner = "collage";
  for (std::size_t i = 0; i < w.ops().size(); ++i) {
    schedule::OpSchedule os = (use_vgm[i] ? vgm : t10).ops[i];
    os.planner = use_vgm[i] ? "vgm" : "t10";
    mixed.ops.push_back(os);
  }
  lower::Options lo;
  lo.functional = true;
  lo.shift_buffer_bytes = 256;
  sim::ProgramOptions po;
  po.functional = true;
  const Json results =
      sim::simulate(cfg, sim::parse_program(lower::lower(w, mixed, cfg, lo).json(), w.name, cfg, po)).results;
  return compiler::functional_max_error(w, results);
}

}  // namespace

TEST_CASE("functional: a weight two operators read at different constant indices", "[functional]") {
  // S0 reads W[0], S1 reads W[1]. T10 keeps a weight where its first reader's idle plan puts it;
  // that plan holds only W[0], so the home must be stripes of all of W or S1 reads nothing.
  ir::Workload w;
  w.name = "two-slices";
  w.add_tensor("X", {4, 8}, ir::TensorRole::Input);
  w.add_tensor("W", {2, 4, 8}, ir::TensorRole::Weight);
  w.add_op("sel0", "S0[a,b] = W[0,a,b]");
  w.add_op("sel1", "S1[a,b] = W[1,a,b]");
  w.add_op("add", "T[a,b] = X[a,b] + S0[a,b]");
  w.add_op("add2", "Y[a,b] = T[a,b] + S1[a,b]");
  w.finalize();
  for (const char* planner : {"t10", "vgm"}) CHECK(compile_and_check(w, small_chip(8, 65536), planner).max_error < 1e-6);
}

TEST_CASE("functional: layernorm adds the epsilon its expression names", "[functional]") {
  // rows [1, 3] (mean 2, variance 1) and [0, 4] (mean 2, variance 4) with epsilon 1:
  // (x - 2) / sqrt(1 + 1) = -+0.70711 and (x - 2) / sqrt(4 + 1) = -+0.89443 (with 1e-5: -+1)
  ir::Workload w;
  w.name = "ln-eps";
  w.add_tensor("X", {2, 2}, ir::TensorRole::Input);
  w.add_op("ln", "Y[a,b] = layernorm(X[a,b], 1)");
  w.finalize();
  w.tensor_mut("X").values = {1, 3, 0, 4};
  const auto ref = lower::reference_outputs(w).at("Y");
  REQUIRE(ref.size() == 4);
  CHECK(ref[0] == Approx(-0.707107).epsilon(1e-5));
  CHECK(ref[1] == Approx(0.707107).epsilon(1e-5));
  CHECK(ref[2] == Approx(-0.894427).epsilon(1e-5));
  CHECK(ref[3] == Approx(0.894427).epsilon(1e-5));
  for (const char* planner : {"t10", "vgm"}) CHECK(compile_and_check(w, small_chip(4, 4096), planner).max_error < 1e-6);
}

TEST_CASE("Compiled matmul chain equals the reference, both planners", "[functional]") {
  const ir::Workload w = test::mlp_workload();
  // 16 cores of 8 KiB: the 24 KiB W1 cannot be replicated, so T10 must rotate it.
  const auto cfg = small_chip(16, 8192);
  auto t10 = compile_and_check(w, cfg, "t10");
  CHECK(t10.rotated);
  CHECK(t10.max_error < 1e-4);
  CHECK(compile_and_check(w, cfg, "vgm").max_error < 1e-4);
}

TEST_CASE("Compiled strided, padded convolution and pooling equal the reference", "[functional]") {
  ir::Workload w;
  w.name = "conv";
  w.add_tensor("I", {2, 8, 10, 10}, ir::TensorRole::Input);
  w.add_tensor("W", {16, 8, 3, 3}, ir::TensorRole::Weight);
  w.add_tensor("O", {2, 16, 5, 5}, ir::TensorRole::Activation);
  w.add_op("conv", "O[n,f,y,x] += I[n,c,2*y+ky-1,2*x+kx-1] * W[f,c,ky,kx]");
  w.add_op("relu", "R[n,f,y,x] = relu(O[n,f,y,x])");
  w.add_tensor("M", {2, 16, 2, 2}, ir::TensorRole::Activation);
  w.add_op("pool", "M[n,f,y,x] max= R[n,f,2*y+py,2*x+px]", {{"py", 2}, {"px", 2}});
  w.add_op("gap", "G[n,f] avg= M[n,f,y,x]");
  w.finalize();
  const auto cfg = small_chip(16, 4096);
  auto t10 = compile_and_check(w, cfg, "t10");
  CHECK(t10.max_error < 1e-4);
  CHECK(compile_and_check(w, cfg, "vgm").max_error < 1e-4);
}

TEST_CASE("Compiled attention and transformer block equal the reference", "[functional]") {
  auto w = transformer_block(2, 16, 32, 2, 128);
  const auto cfg = small_chip(16, 6144);
  auto t10 = compile_and_check(w, cfg, "t10");
  CHECK(t10.rotated);
  CHECK(t10.max_error < 1e-3);
  auto vgm = compile_and_check(w, cfg, "vgm");
  CHECK(vgm.max_error < 1e-3);
  // And the compute-shift plan is the faster one on the simulator.
  CHECK(t10.results["total_cycles"].get<double>() < vgm.results["total_cycles"].get<double>());
}

TEST_CASE("A collage of T10 and VGM plans equals the reference, whichever operators take which", "[functional][collage]") {
  // Each operator's plan from the T10 or the VGM schedule, alternately and the other way round:
  // the lowering moves tensors between T10 layouts and VGM stripes at every switch.
  auto w = transformer_block(2, 16, 32, 2, 128);
  const auto cfg = small_chip(16, 16384);
  const auto [t10, vgm] = both_schedules(w, cfg);
  for (int first : {0, 1}) {
    std::vector<bool> use_vgm(w.ops().size());
    std::size_t on_vgm = 0;
    for (std::size_t i = 0; i < w.ops().size(); ++i) {
      use_vgm[i] = (i + static_cast<std::size_t>(first)) % 2 == 1;
      on_vgm += use_vgm[i];
    }
    CHECK(on_vgm > 0);
    CHECK(on_vgm < w.ops().size());
    CHECK(mixed_error(w, cfg, t10, vgm, use_vgm) < 1e-3);
  }
  // The planner itself: whatever it picks computes the same.
  CHECK(compile_and_check(w, cfg, "collage").max_error < 1e-3);
}

TEST_CASE("A collage with a VGM operator in rounds between T10 operators equals the reference", "[functional][collage]") {
  // The FFN's down projection from the VGM schedule, in rounds (16 cores of 4 KiB: its operands
  // do not fit whole, 4 rounds of a quarter of the reduction axis each), its producer and reader
  // from T10's: the T10 producer stores its output to stripes, every round gathers its slice
  // from there, the T10 reader gathers the output back.
  auto w = transformer_block(2, 16, 32, 2, 128);
  const auto cfg = small_chip(16, 4096);
  const auto [t10, vgm] = both_schedules(w, cfg);
  std::vector<bool> use_vgm(w.ops().size());
  std::size_t on_vgm = 0;
  for (std::size_t i = 0; i < w.ops().size(); ++i) {
    use_vgm[i] = w.ops()[i].name == "down";
    on_vgm += use_vgm[i];
    if (use_vgm[i]) CHECK(vgm.ops[i].active.rounds == 4);
  }
  REQUIRE(on_vgm == 1);  // the block has its down projection: otherwise this would run all-T10
  CHECK(mixed_error(w, cfg, t10, vgm, use_vgm) < 1e-3);
}
