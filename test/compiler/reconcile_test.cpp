// T10's memory reconciliation with plans chosen by their setup too (schedule.h,
// Options::paper_reconciliation; docs/compiler.md "Choosing with setup"), held to the simulator:
// where weights press on memory, the schedule that prices each plan with its setup from the
// idle layout runs faster on the simulated chip than the paper's choice of the fastest plan.
#include <catch2/catch.hpp>

#include "compiler/compile.h"
#include "sim/common/json_reader.h"
#include "sim/simulate.h"

using namespace tessera;

namespace {

struct Run {
  compiler::Compiled compiled;
  double simulated = 0;
};

Run run(const ir::Workload& w, const sim::Config& cfg, bool paper) {
  compiler::CompileOptions o;
  o.paper_reconciliation = paper;
  Run r{compiler::compile(w, cfg, o), 0};
  r.simulated = sim::simulate(cfg, r.compiled.program.program(cfg)).results["total_cycles"].get<double>();
  return r;
}

const schedule::OpSchedule& op(const Run& r, const ir::Workload& w, const std::string& name) {
  for (std::size_t i = 0; i < w.ops().size(); ++i)
    if (w.ops()[i].name == name) return r.compiled.schedule.ops[i];
  FAIL("no operator " << name);
  return r.compiled.schedule.ops[0];
}

}  // namespace

TEST_CASE("reconciliation: choosing plans with their setup beats the fastest plans on the simulator", "[compiler][t10]") {
  // ipu-mk2 with 192 KiB per core: two layers of BERT-large (50 MB of fp16 weights, 34 KiB per
  // core striped) press on it as the 24 layers press on 624 KiB.
  Json c = read_json_file(std::string(TESSERA_SOURCE_DIR) + "/configs/ipu-mk2.json");
  c["chip"]["core"]["sram_bytes"] = 196608;
  const sim::Config cfg = sim::parse_config(c, "ipu-mk2 with 192 KiB per core");
  ir::ModelOptions mo;
  mo.layers = 2;
  const ir::Workload w = compiler::load_workload("bert-large", mo);
  const Run paper = run(w, cfg, true), both = run(w, cfg, false);
  CHECK(paper.compiled.schedule.plan_choice == "fastest");
  // The paper's way, layer 1's attention matmuls run with their weights in 17.7 KiB blocks set up
  // from their stripes every time (6,386 to 8,536 cycles of setup each, simulated); the search
  // steered by the choice with setup rests them in that layout instead.
  for (const char* name : {"l1.attn.q.mm", "l1.attn.k.mm", "l1.attn.v.mm", "l1.attn.out.mm"}) {
    INFO(name);
    const auto& mm_paper = op(paper, w, name);
    const auto& mm_both = op(both, w, name);
    CHECK(mm_paper.setup_cycles > 0);
    CHECK(mm_both.setup_cycles == 0);
    CHECK(mm_both.active.same_as(mm_both.idle));
  }
  // Measured: 440,590 cycles the paper's way, 411,925 with setup (6.5% faster); the prediction
  // moved the same way (434,317 -> 408,808). (Before gathers were priced in program order,
  // docs/cost.md: 503,329 and 475,445.)
  CHECK(both.simulated < 0.97 * paper.simulated);
  CHECK(both.compiled.schedule.predicted_cycles < paper.compiled.schedule.predicted_cycles);
}

TEST_CASE("reconciliation: weights that must rest in a plan's own layout rest in a fast plan that leaves room", "[compiler][t10]") {
  // OPT-13B's layer at batch 2 on ipu-mk2: 630 MB of fp16 weights, 428 KiB of every core's 624
  // when spread evenly, leave no operator room for a second copy of its weights, so each rests
  // them in a plan's own layout. The smallest such plan of the FFN matmuls (179,312 bytes per
  // core) runs 732 steps of 7 columns of k (5.2 M and 8.9 M cycles simulated, the whole layer
  // 17,543,012); plans of 237,568 and 204,800 bytes, which still leave every operator room, run
  // 32 and 80 steps.
  const sim::Config cfg = sim::load_config(std::string(TESSERA_SOURCE_DIR) + "/configs/ipu-mk2.json");
  ir::ModelOptions mo;
  mo.batch = 2;
  const ir::Workload w = compiler::load_workload("opt-13b", mo);
  const Run r = run(w, cfg, false);
  for (const char* name : {"l0.ffn.up.mm", "l0.ffn.down.mm"}) {
    const auto& o = op(r, w, name);
    INFO(name << ": " << o.active.describe());
    CHECK(o.active.same_as(o.idle));
    CHECK(o.active.steps <= 80);
  }
  // Measured: 8,702,936 cycles (8,719,718 before gathers were priced in program order); VGM's plans simulate at 10,481,265 (its weights striped and
  // gathered per operator), which the smallest plans lost to by 1.7x.
  CHECK(r.simulated < 0.9 * 10481265);
}

TEST_CASE("compile searches again with less room when its fastest schedule does not lower", "[compiler][t10]") {
  // OPT-13B's layer at batch 1 on ipu-mk2: the fastest schedule found (predicted 5,392,689
  // cycles) is 1,722 bytes short on core 0 when lowering places l0.attn.probs' output; the next
  // candidate lowers but runs the FFN's down projection in 366 steps (8,345,389 cycles
  // simulated). Searching on with more reserved (as when nothing lowers) finds one that lowers
  // at 5,390,638 cycles, its down projection in 184 steps.
  const sim::Config cfg = sim::load_config(std::string(TESSERA_SOURCE_DIR) + "/configs/ipu-mk2.json");
  const ir::Workload w = compiler::load_workload("opt-13b", ir::ModelOptions{});
  const compiler::Compiled c = compiler::compile(w, cfg, compiler::CompileOptions{});
  for (std::size_t i = 0; i < w.ops().size(); ++i)
    if (w.ops()[i].name == "l0.ffn.down.mm") CHECK(c.schedule.ops[i].active.steps == 184);
  CHECK(c.schedule.predicted_cycles < 6.0e6);
}

TEST_CASE("compile doubles its reserve step while the search returns the same schedule", "[compiler][t10]") {
  // RetNet-1.3B at batch 16 on ipu-mk2: the fastest schedule is 2,742 bytes short on core 0 at
  // l0.ret.retention's output, and five steps of 3,683 bytes more reserve return that same
  // schedule (the reserve binds no plan choice), so compile used to fail. Doubling the step
  // while the schedule does not change, the fourth search (25,781 bytes reserved) finds one that
  // lowers (9,739,852 cycles simulated, 9,751,669 predicted).
  const sim::Config cfg = sim::load_config(std::string(TESSERA_SOURCE_DIR) + "/configs/ipu-mk2.json");
  ir::ModelOptions mo;
  mo.batch = 16;
  const ir::Workload w = compiler::load_workload("retnet-1.3b", mo);
  compiler::Compiled c;
  REQUIRE_NOTHROW(c = compiler::compile(w, cfg, compiler::CompileOptions{}));
  CHECK(c.schedule.predicted_cycles < 1.0e7);
}
