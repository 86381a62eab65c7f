// T10's layout following (schedule::Options::layout_following; docs/compiler.md "Layout
// following"), held to the simulator: following everywhere loses where a follower hands a bad
// layout on to the next contraction (ResNet-18), following nowhere loses where a chain of
// followers pays off (NeRF), and "auto" keeps the fastest predicted of the three, which is the
// fastest simulated on both.
#include <catch2/catch.hpp>

#include <algorithm>

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

TEST_CASE("layout following: an unknown mode is a named error", "[compiler][t10]") {
  const sim::Config cfg = sim::load_config(std::string(TESSERA_SOURCE_DIR) + "/configs/ipu-mk2.json");
  const ir::Workload w = compiler::load_workload("nerf", ir::ModelOptions{});
  compiler::CompileOptions o;
  o.layout_following = "sometimes";
  CHECK_THROWS_WITH(compiler::compile(w, cfg, o), Catch::Contains("layout following 'sometimes'"));
}
