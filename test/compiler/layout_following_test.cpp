// T10's layout following (schedule::Options::layout_following; docs/compiler.md "Layout
// following"), held to the simulator: following everywhere loses where a follower hands a bad
// layout on to the next contraction (ResNet-18), following nowhere loses where a chain of
// followers pays off (NeRF), and "auto" keeps the fastest predicted of the three, which is the
// fastest simulated on both.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "compiler/compile.h"
#include "sim/common/json_reader.h"
#include "sim/simulate.h"

using namespace tessera;

namespace {

struct Run {
  std::string kept;  // the schedule's layout_following
  double predicted = 0, simulated = 0;
};

Run run(const std::string& model, const std::string& following) {
  const sim::Config cfg = sim::load_config(std::string(TESSERA_SOURCE_DIR) + "/configs/ipu-mk2.json");
  const ir::Workload w = compiler::load_workload(model, ir::ModelOptions{});
  compiler::CompileOptions o;
  o.layout_following = following;
  const compiler::Compiled c = compiler::compile(w, cfg, o);
  const double simulated = sim::simulate(cfg, c.program.program(cfg)).results["total_cycles"].get<double>();
  return {c.schedule.layout_following, c.schedule.predicted_cycles, simulated};
}

}  // namespace

TEST_CASE("layout following: everywhere, priced or nowhere, the fastest predicted kept", "[compiler][t10]") {
  SECTION("ResNet-18: following everywhere is slower") {
    const Run all = run("resnet-18", "all"), chosen = run("resnet-18", "auto");
    CHECK(all.kept == "all");
    CHECK(chosen.kept != "all");
    // Measured 2026-11-30: 187,739 cycles following everywhere, 169,733 following where priced
    // (a ReLU or an add after a convolution keeps the plan the search gave it when the next
    // convolution would re-lay out the followed layout; 188,504 and 170,873 on 2026-11-29, before
    // the followers' biases rested in the followed layout). The prediction moved the same way.
    CHECK(chosen.simulated < 0.95 * all.simulated);
    CHECK(chosen.predicted < all.predicted);
  }
  SECTION("NeRF: following nowhere is slower, and auto keeps the fastest") {
    const Run all = run("nerf", "all"), priced = run("nerf", "priced"), none = run("nerf", "none"),
              chosen = run("nerf", "auto");
    // Measured 2026-11-30: 3,471 cycles following everywhere and where priced, 3,902 nowhere.
    // Until that day the followers' biases were set up from their lean layout before every run,
    // each follower alone looked no better, and following where priced took 3,901 cycles (3,588
    // everywhere); with the biases resting in the followed layout the choice follower by follower
    // finds the chain.
    CHECK(none.simulated > 1.05 * all.simulated);
    CHECK(priced.simulated <= all.simulated);
    CHECK(chosen.simulated == std::min({all.simulated, priced.simulated, none.simulated}));
    CHECK(chosen.predicted < none.predicted);
  }
}

namespace {

// NeRF on a 12x12 mesh at 4 B/cycle per link (the mesh-cores-link sweep's corner: mesh-8x8 with
// 144 cores), with or without the look-ahead over the search's states.
struct Ahead {
  compiler::Compiled c;
  double simulated = 0;
};
Ahead run_mesh_144(bool look_ahead) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/configs/mesh-8x8.json");
  Json j = Json::parse(in);
  j["chip"]["cores"] = 144;
  j["chip"]["mesh"]["rows"] = 12;
  j["chip"]["mesh"]["cols"] = 12;
  j["chip"]["mesh"]["link_bytes_per_cycle"] = 4;
  const sim::Config cfg = sim::parse_config(j, "mesh-8x8 at 144 cores");
  compiler::CompileOptions o;
  o.look_ahead = look_ahead;
  Ahead a{compiler::compile(compiler::load_workload("nerf", ir::ModelOptions{}), cfg, o), 0};
  a.simulated = sim::simulate(cfg, a.c.program.program(cfg)).results["total_cycles"].get<double>();
  return a;
}

const schedule::OpSchedule& op_named(const schedule::Schedule& s, const ir::Workload& w, const std::string& name) {
  for (std::size_t i = 0; i < w.ops().size(); ++i)
    if (w.ops()[i].name == name) return s.ops[i];
  FAIL("no operator " << name);
  return s.ops.front();
}

}  // namespace

TEST_CASE("looking ahead: a producer's layout chosen with its followers' readers", "[compiler][t10]") {
  // Measured 2026-11-30: without the look-ahead the output matmul takes a plan for the layout
  // fc2's ReLU has in the search (one row block per core on 128 cores); the ReLU then follows
  // fc2's matmul onto 69 x 2 cores and the output matmul gathers from there (3,110 of 10,814
  // cycles). Revisited with fc2's followers moved along, it rotates from the followed layout
  // instead (2,045; 9,749 in all; predicted 10,890 and 9,916).
  const Ahead off = run_mesh_144(false), on = run_mesh_144(true);
  const ir::Workload w = compiler::load_workload("nerf", ir::ModelOptions{});
  CHECK(off.c.schedule.plan_choice.find("looked ahead") == std::string::npos);
  CHECK(on.c.schedule.plan_choice.find("looked ahead") != std::string::npos);
  CHECK(on.simulated < 0.93 * off.simulated);
  CHECK(on.c.schedule.predicted_cycles < off.c.schedule.predicted_cycles);
  const plan::Plan& out_on = op_named(on.c.schedule, w, "out.mm").active;
  const plan::Plan& out_off = op_named(off.c.schedule, w, "out.mm").active;
  CHECK_FALSE(out_on.same_as(out_off));
  CHECK(out_off.cores == 128);
  // fc2's ReLU follows fc2's matmul in both schedules; with the look-ahead the output matmul
  // splits its rows as the ReLU's layout does
  const auto& relu = op_named(on.c.schedule, w, "fc2.relu").active.parts.back().fs;
  CHECK(relu == op_named(on.c.schedule, w, "fc2.mm").active.parts.back().fs);
  CHECK(out_on.parts.back().fs.front() == relu.front());
}

TEST_CASE("layout following: an unknown mode is a named error", "[compiler][t10]") {
  const sim::Config cfg = sim::load_config(std::string(TESSERA_SOURCE_DIR) + "/configs/ipu-mk2.json");
  const ir::Workload w = compiler::load_workload("nerf", ir::ModelOptions{});
  compiler::CompileOptions o;
  o.layout_following = "sometimes";
  CHECK_THROWS_WITH(compiler::compile(w, cfg, o), Catch::Contains("layout following 'sometimes'"));
}
