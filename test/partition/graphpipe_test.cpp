// GraphPipe (compiler/partition/graphpipe, pipeline_schedule; docs/pipeline.md): Table 3.2, the
// series-parallel decomposition, the roofline per layer, and a three-branch model whose graph
// pipeline and sequential pipeline are worked out by hand, estimated and simulated.
#include <catch2/catch.hpp>

#include <random>

#include "compiler/lower/pipeline_lower.h"
#include "compiler/partition/graphpipe.h"
#include "compiler/partition/pipeline_schedule.h"
#include "test/support.h"

using namespace tessera;
using namespace tessera::partition;
using Catch::Matchers::Contains;

namespace {

// A layer of `flops` per sample that reads nothing from memory and hands on `out` bytes.
PipeLayer layer(const std::string& name, std::vector<std::uint32_t> inputs, double flops, double out = 0,
                double stash = 0, double params = 0) {
  PipeLayer l;
  l.name = name;
  l.inputs = std::move(inputs);
  l.flops = flops;
  l.out_bytes = out;
  l.stash_bytes = stash;
  l.params = params;
  return l;
}

// Three one-layer branches of 1e6 FLOPs per sample joined by a layer of none.
PipeModel three_branches() {
  PipeModel m;
  m.name = "three";
  m.layers = {layer("a", {}, 1e6), layer("b", {}, 1e6), layer("c", {}, 1e6), layer("join", {0, 1, 2}, 0)};
  return m;
}

// Chips of 1000 FLOPs per cycle at 1 GHz, fully connected with fast links (transfers of the
// tiny activations above cost a few cycles in the simulator and nothing in the estimate).
Json npus(std::uint32_t n) {
  Json c = test::collective_system(Json::array(
      {{{"kind", "fully_connected"}, {"size", n}, {"link_bytes_per_cycle", 64}, {"link_latency_cycles", 1}}}));
  c["system"]["npu"] = {{"sms", 1}, {"fp16_flops_per_cycle", 1000}, {"memory_bytes_per_cycle", 100}};
  c["chip"]["offchip"]["capacity_bytes"] = 1 << 30;
  return c;
}

}  // namespace

TEST_CASE("kFkB in-flight samples: Table 3.2 by hand", "[partition][graphpipe]") {
  CHECK(kfkb_in_flight(1, 2, 1, 0, 0) == 2u);   // the last stage holds k b
  CHECK(kfkb_in_flight(3, 2, 1, 0, 0) == 6u);
  CHECK(kfkb_in_flight(1, 2, 1, 2, 4) == 6u);   // equal micro-batches, 1F1B: one more micro-batch
  CHECK(kfkb_in_flight(1, 1, 1, 2, 0) == 2u);   // b_x <= k_x b_x < b_y <= k_y b_y: i_y + b_y
  CHECK(kfkb_in_flight(2, 2, 1, 2, 2) == 6u);   // b_x <= b_y = k_y b_y < k_x b_x: i_y + k_x b_x
  CHECK(kfkb_in_flight(1, 4, 1, 2, 2) == 8u);   // b_y <= k_y b_y < b_x <= k_x b_x: i_y + X - Y + b_x
  CHECK(kfkb_in_flight(4, 1, 2, 1, 3) == 7u);   // b_x <= b_y < k_y b_y < k_x b_x: 3 + 4 - 2 + 2
  CHECK(kfkb_in_flight(2, 1, 4, 1, 3) == 5u);   // max < k_x b_x < k_y b_y: i_y + 2 max
  CHECK(kfkb_in_flight(2, 2, 2, 2, 3) == 7u);   // max < k_y b_y = k_x b_x: i_y + 2 max
}

TEST_CASE("series-parallel decomposition: branches in parallel, the join rides on the last; an N graph is linearised",
          "[partition][graphpipe]") {
  const SpTree t = sp_decompose(three_branches());
  const SpNode& root = t.nodes[t.root];
  REQUIRE(root.kind == SpNode::Parallel);
  REQUIRE(root.children.size() == 3u);
  CHECK(t.nodes[root.children[0]].layers == std::vector<std::uint32_t>{0});
  CHECK(t.nodes[root.children[1]].layers == std::vector<std::uint32_t>{1});
  const SpNode& last = t.nodes[root.children[2]];
  CHECK(last.kind == SpNode::Series);
  CHECK(last.layers == std::vector<std::uint32_t>{2, 3});
  CHECK(t.linearised_parts == 0u);

  // a -> c, a -> d, b -> d: two sources, two sinks, no series cut and one component
  PipeModel n;
  n.name = "n";
  n.layers = {layer("a", {}, 1), layer("b", {}, 1), layer("c", {0}, 1), layer("d", {0, 1}, 1)};
  const SpTree tn = sp_decompose(n);
  CHECK(tn.linearised_parts == 1u);
  CHECK(tn.nodes[tn.root].kind == SpNode::Series);
  CHECK(tn.nodes[tn.root].children.size() == 4u);
  // the chain view: every layer a child of one series, in order
  const SpTree c = chain_tree(three_branches());
  CHECK(c.nodes[c.root].kind == SpNode::Series);
  CHECK(c.nodes[c.root].layers == std::vector<std::uint32_t>{0, 1, 2, 3});
}

TEST_CASE("a join inside one of two independent parts keeps its own node", "[partition][graphpipe]") {
  // a, b -> c (a join) and, independent of them, d
  PipeModel m;
  m.name = "nested";
  m.layers = {layer("a", {}, 1e6), layer("b", {}, 1e6), layer("c", {0, 1}, 1e6), layer("d", {}, 1e6)};
  const SpTree t = sp_decompose(m);
  const SpNode& root = t.nodes[t.root];
  REQUIRE(root.kind == SpNode::Parallel);
  REQUIRE(root.children.size() == 2u);
  const SpNode& join = t.nodes[root.children[0]];
  CHECK(join.join);
  CHECK(join.join_layer == 2u);
  CHECK(join.layers == std::vector<std::uint32_t>{0, 1, 2});
  // planned on 4 devices, a's stage sends to c's
  const DeviceSpec dev = device_spec(test::config(npus(4)), 4);
  PipeOptions o;
  o.mini_batch = 8;
  const PipePlan p = plan_pipeline(m, dev, o);
  std::uint32_t sa = 0, sc = 0;
  for (std::uint32_t i = 0; i < p.stages.size(); ++i)
    for (std::uint32_t l : p.stages[i].layers) {
      if (l == 0) sa = i;
      if (l == 2) sc = i;
    }
  if (sa != sc) CHECK(p.stages[sa].succs == std::vector<std::uint32_t>{sc});
  CHECK(p.depth <= 2u);
}

TEST_CASE("stage passes: a roofline per layer, backward twice, by hand", "[partition][graphpipe]") {
  PipeModel m;
  m.name = "two";
  m.layers = {layer("x", {}, 1e9), layer("y", {0}, 1e6)};
  m.layers[0].weight_read_bytes = 1e8;
  m.layers[0].sample_bytes = 1e6;
  m.layers[1].weight_read_bytes = 1e9;
  DeviceSpec d;
  d.flops_per_s = 1e12;
  d.memory_bytes_per_s = 1e11;
  // x, 4 samples: compute 4 ms, memory (1e8 + 4e6) / 1e11 = 1.04 ms; y: compute 4 us, memory 10 ms
  CHECK(pass_seconds(m, {0}, 4, d, false) == Approx(4e-3));
  CHECK(pass_seconds(m, {1}, 4, d, false) == Approx(1e-2));
  CHECK(pass_seconds(m, {0, 1}, 4, d, false) == Approx(1.4e-2));
  CHECK(pass_seconds(m, {0, 1}, 4, d, true) == Approx(2.8e-2));
}

TEST_CASE("three branches on three devices: GraphPipe depth 2 vs a chain of 3, 27 vs 30 passes of 1F1B by hand, "
          "simulated",
          "[partition][graphpipe]") {
  const PipeModel m = three_branches();
  const sim::Config cfg = test::config(npus(3));
  const DeviceSpec dev = device_spec(cfg, 3);
  PipeOptions o;
  o.mini_batch = 8;
  // A sample takes 1 us forward (1e6 FLOPs at 1e12 FLOP/s), 2 us backward.
  o.planner = PipePlanner::GraphPipe;
  const PipePlan g = plan_pipeline(m, dev, o);
  o.planner = PipePlanner::Sequential;
  const PipePlan s = plan_pipeline(m, dev, o);
  for (const PipePlan* p : {&g, &s}) {
    REQUIRE(p->stages.size() == 3u);
    CHECK(p->tps_s == Approx(3e-6));  // the bottleneck: 3 us per sample on one device
    CHECK(p->devices_used == 3u);
    for (const PipeStage& st : p->stages) CHECK(st.micro_batch == 1u);  // the least in flight
  }
  // GraphPipe: a, b -> (c, join); the chain: a -> b -> (c, join)
  CHECK(g.depth == 2u);
  CHECK(s.depth == 3u);
  CHECK(g.stages[0].in_flight == 2u);
  CHECK(g.stages[1].in_flight == 2u);
  CHECK(s.stages[0].in_flight == 3u);
  CHECK(s.stages[1].in_flight == 2u);
  CHECK(g.stages[2].layers == std::vector<std::uint32_t>{2, 3});
  CHECK(g.stages[2].preds == std::vector<std::uint32_t>{0, 1});

  // 1F1B with equal stages, free transfers: (micro-batches + depth - 1) x (F + B) =
  // (8 + 1) x 3 us and (8 + 2) x 3 us
  const PipeSchedule gs = schedule_pipeline(g, dev, MicroSchedule::KFKB);
  const PipeSchedule ss = schedule_pipeline(s, dev, MicroSchedule::KFKB);
  CHECK(gs.iteration_s == Approx(27e-6));
  CHECK(ss.iteration_s == Approx(30e-6));
  // the first stage of the chain: three warm-up forwards, then one backward and one forward in turn
  REQUIRE(ss.order[0].size() == 16u);
  for (std::size_t i = 0; i < 3; ++i) CHECK_FALSE(ss.order[0][i].backward);
  CHECK(ss.order[0][3].backward);
  CHECK_FALSE(ss.order[0][4].backward);
  CHECK(gs.peak_in_flight[0] == 2u);
  CHECK(ss.peak_in_flight[0] == 3u);
  // greedy (backwards first) on this plan is 1F1B
  CHECK(schedule_pipeline(g, dev, MicroSchedule::Greedy).iteration_s == Approx(27e-6));

  // On the simulator: 27,000 and 30,000 cycles plus the messages on the critical path (27,021 and 30,024 measured)
  const sim::PipelineResult gr = sim::run_pipeline(cfg, lower::lower_pipeline(m, g, gs));
  const sim::PipelineResult sr = sim::run_pipeline(cfg, lower::lower_pipeline(m, s, ss));
  INFO("simulated " << gr.cycles << " and " << sr.cycles);
  CHECK(gr.cycles >= 27000u);
  CHECK(gr.cycles <= 27100u);  // 1-byte messages over links of latency 1: a few cycles each
  CHECK(sr.cycles >= 30000u);
  CHECK(sr.cycles <= 30100u);
  CHECK(gr.busy_cycles == std::vector<Cycles>{24000, 24000, 24000});  // 8 x (1000 + 2000) each
}

TEST_CASE("at most one replica per stage: no data parallelism, whatever devices are free", "[partition][graphpipe]") {
  const PipeModel m = three_branches();
  const sim::Config cfg = test::config(npus(6));
  const DeviceSpec dev = device_spec(cfg, 6);
  PipeOptions o;
  o.mini_batch = 8;
  for (PipePlanner planner : {PipePlanner::GraphPipe, PipePlanner::Sequential}) {
    o.planner = planner;
    o.max_replicas = 0;
    // Free to replicate: each one-layer stage on 2 devices, micro-batches of 2 split over them:
    // 3 us per sample on one device, 1.5 us on two.
    const PipePlan free = plan_pipeline(m, dev, o);
    CHECK(free.tps_s == Approx(1.5e-6));
    CHECK(free.devices_used == 6u);
    o.max_replicas = 1;
    const PipePlan one = plan_pipeline(m, dev, o);
    CHECK(one.tps_s == Approx(3e-6));
    CHECK(one.devices_used == 3u);  // a layer is the smallest stage: three devices stay idle
    for (const PipeStage& st : one.stages) CHECK(st.replicas == 1u);
    CHECK(one.depth == (planner == PipePlanner::GraphPipe ? 2u : 3u));
  }
  o.max_replicas = 3;
  CHECK_THROWS_WITH(plan_pipeline(m, dev, o), Contains("at most 3 replicas per stage: expected a power of two"));
}

TEST_CASE("the estimate queues messages on the ports, by hand, and the simulator agrees", "[partition][graphpipe]") {
  // Three branches of 1 us forward, 2 us backward per sample; a and b hand 64,000 B per sample to
  // the join's stage (c, join), 1 us on a 64 B/cycle port at 1 GHz. One micro-batch: a, b:
  // F [0, 1]; their outputs reach the join's stage at 2 and 3 (its inbound port takes one after
  // the other); (c, join): F [3, 4], B [4, 6]; its two gradients leave one after the other
  // (its outbound port): a has its at 7, b at 8; a: B [7, 9], b: B [8, 10]. Without the ports'
  // queues it would be 8 us.
  PipeModel m = three_branches();
  m.layers[0].out_bytes = m.layers[1].out_bytes = 64000;
  const sim::Config cfg = test::config(npus(3));
  const DeviceSpec dev = device_spec(cfg, 3);
  PipeOptions o;
  o.mini_batch = 1;
  const PipePlan g = plan_pipeline(m, dev, o);
  REQUIRE(g.stages.size() == 3u);
  REQUIRE(g.stages[2].preds.size() == 2u);
  const PipeSchedule s = schedule_pipeline(g, dev, MicroSchedule::KFKB);
  CHECK(s.iteration_s == Approx(10e-6));
  // the simulator (each chip's AFI bus carries its messages one after the other): the same
  // 10,000 cycles plus latencies and the packets' pipeline
  const sim::PipelineResult r = sim::run_pipeline(cfg, lower::lower_pipeline(m, g, s));
  INFO("simulated " << r.cycles);
  CHECK(r.cycles >= 10000u);
  CHECK(r.cycles <= 10000u + 300);
}

TEST_CASE("kFkB with k = 2 on the last stage: two backwards, two forwards", "[partition][graphpipe]") {
  const PipeModel m = three_branches();
  const DeviceSpec dev = device_spec(test::config(npus(3)), 3);
  PipeOptions o;
  o.mini_batch = 8;
  o.ks = {2};
  const PipePlan g = plan_pipeline(m, dev, o);
  REQUIRE(g.stages.size() == 3u);
  CHECK(g.stages[2].in_flight == 2u);  // the last stage holds k b
  CHECK(g.stages[0].in_flight == 4u);  // k_x b_x = k_y b_y = 2 > max b: i_y + 2 max = 2 + 2
  const PipeSchedule s = schedule_pipeline(g, dev, MicroSchedule::KFKB);
  const auto& last = s.order[2];
  const std::vector<bool> kinds = {false, false, true, true, false, false, true, true};
  for (std::size_t i = 0; i < kinds.size(); ++i) CHECK(last[i].backward == kinds[i]);
}

TEST_CASE("memory: parameter state and in-flight activations decide the micro-batch; too much is a named error",
          "[partition][graphpipe][bad-input]") {
  PipeModel m = three_branches();
  m.layers[0].stash_bytes = 1000;  // per sample
  m.layers[0].params = 1e6;        // 16 B per parameter: 16 MB on its stage
  Json c = npus(3);
  c["chip"]["offchip"]["capacity_bytes"] = 16000000 + 1500;
  const sim::Config cfg = test::config(c);
  const DeviceSpec dev = device_spec(cfg, 3);
  PipeOptions o;
  o.mini_batch = 8;
  // a in a stage that sends to the join holds at least 2 samples of its own (2000 B): too much.
  // Every layer in one stage (it is last: k b in flight) on 2 replicas with micro-batches of 2
  // holds 2 samples over 2 devices, 1000 B each: 4.5 us per sample, the best that fits.
  const PipePlan g = plan_pipeline(m, dev, o);
  REQUIRE(g.stages.size() == 1u);
  CHECK(g.stages[0].replicas == 2u);
  CHECK(g.stages[0].micro_batch == 2u);
  CHECK(g.stages[0].in_flight == 2u);
  CHECK(g.stages[0].memory_bytes == Approx(16001000));
  CHECK(g.tps_s == Approx(4.5e-6));
  // its gradients, 2 MB, all-reduced over 2: 2 (2 - 1) / 2 x 2e6 B at the link's rate, once per iteration
  CHECK(g.stages[0].allreduce_s == Approx(2e6 / dev.link_bytes_per_s));
  const PipeSchedule s = schedule_pipeline(g, dev, MicroSchedule::KFKB);
  const sim::PipelineResult r = sim::run_pipeline(cfg, lower::lower_pipeline(m, g, s));
  CHECK(r.peak_memory_bytes == std::vector<Bytes>{16001000, 16001000});
  // the same plan on a device with 999 B less fails in the simulator, named
  c["chip"]["offchip"]["capacity_bytes"] = 16000000 + 999;
  CHECK_THROWS_WITH(sim::run_pipeline(test::config(c), lower::lower_pipeline(m, g, s)),
                    Contains("chip 0 holds 16001000 B at step"));

  m.layers[0].params = 1e9;  // 16 GB of state on any device
  CHECK_THROWS_WITH(plan_pipeline(m, dev, o), Contains("no plan of three fits 3 devices"));
  o.mini_batch = 6;
  CHECK_THROWS_WITH(plan_pipeline(three_branches(), dev, o), Contains("must be powers of two"));
  CHECK_THROWS_WITH(device_spec(cfg, 4), Contains("has 3 chips"));
  Json no_npu = npus(3);
  no_npu["system"].erase("npu");
  CHECK_THROWS_WITH(device_spec(test::config(no_npu), 3), Contains("has no system.npu"));
  CHECK_THROWS_WITH(pipe_model_by_name("resnet"), Contains("expected one of mmt, candle-uno, dlrm, two-branch"));
  CHECK_THROWS_WITH(parse_micro_schedule("zb"), Contains("expected 1f1b, kfkb or greedy"));
  PipeModel bad = three_branches();
  bad.layers[1].inputs = {3};
  CHECK_THROWS_WITH(plan_pipeline(bad, dev, o), Contains("layer 1 (b): input 3 is not an earlier layer"));
}

TEST_CASE("built-in models: MMT 4 x 8 transformer layers by the formulas, GraphPipe shallower than the chain",
          "[partition][graphpipe]") {
  const PipeModel m = mmt_model();
  REQUIRE(m.layers.size() == 34u);  // 32 layers, concat, fuse
  // a layer: 2 s (4h^2 + 2hf) + 4 s^2 h = 2·256·(4·2^20 + 2·2^22) + 4·2^16·2^10 FLOPs
  CHECK(m.layers[0].flops == Approx(2.0 * 256 * (4.0 * 1048576 + 2.0 * 4194304) + 4.0 * 65536 * 1024));
  CHECK(m.layers[0].params == Approx(4.0 * 1048576 + 2.0 * 4194304));
  CHECK(m.layers[0].stash_bytes == Approx(256.0 * 1024 * 34 + 5.0 * 16 * 65536));
  const PipeModel c = candle_uno_model();
  CHECK(c.layers.size() == 7u * 4 + 4);
  const PipeModel d = dlrm_model();
  CHECK(d.layers.size() == 7u * 4 + 7 + 5);
  CHECK(d.layers[28].params == Approx(64e6));  // a 1M x 64 table
}

// Equal branches (and equal ranges of branches) are solved once; a branch that differs in any
// figure the search reads, or in how it connects, must not be taken for another. Models with
// branches drawn from a few shapes, some nearly equal, planned with and without the sharing:
// the same stages, micro-batches and replicas, and fewer DP values with it.
TEST_CASE("equal subproblems solved once: the same plans as solving every one", "[partition][graphpipe]") {
  std::mt19937 rng(11);
  const DeviceSpec dev = device_spec(test::config(npus(16)), 16);
  std::uint64_t shared_states = 0, all_states = 0;
  for (int trial = 0; trial < 12; ++trial) {
    PipeModel m;
    m.name = "drawn";
    std::vector<std::uint32_t> ends;
    const int branches = 2 + int(rng() % 4);
    for (int b = 0; b < branches; ++b) {
      // shapes 0, 1 and 2 differ in one layer's stash (enough that memory decides) or FLOPs; 3 is longer
      const int shape = int(rng() % 4);
      const int depth = shape == 3 ? 3 : 2;
      std::vector<std::uint32_t> prev;
      for (int l = 0; l < depth; ++l) {
        const double stash = (shape == 1 && l == 1) ? 4e8 : 1e5;
        const double flops = (shape == 2 && l == 0) ? 6e6 : 1e6 * (1 + l);
        m.layers.push_back(layer("b" + std::to_string(b), prev, flops, l == 0 ? 6e4 : 4e3, stash, 5e5));
        prev = {std::uint32_t(m.layers.size() - 1)};
      }
      if (depth == 3 && rng() % 2 == 0) m.layers.back().inputs.push_back(prev[0] - 2);  // a skip inside
      ends.push_back(prev[0]);
    }
    m.layers.push_back(layer("join", ends, 2e6, 4e3, 1e5, 5e5));
    m.layers.push_back(layer("out", {std::uint32_t(m.layers.size() - 1)}, 1e6, 0, 1e5, 5e5));
    PipeOptions o;
    o.mini_batch = 64;
    const PipePlan with = plan_pipeline(m, dev, o);
    o.share_equal_subproblems = false;
    const PipePlan without = plan_pipeline(m, dev, o);
    INFO("trial " << trial << ", " << branches << " branches");
    REQUIRE(with.stages.size() == without.stages.size());
    for (std::size_t s = 0; s < with.stages.size(); ++s) {
      CHECK(with.stages[s].layers == without.stages[s].layers);
      CHECK(with.stages[s].micro_batch == without.stages[s].micro_batch);
      CHECK(with.stages[s].replicas == without.stages[s].replicas);
      CHECK(with.stages[s].first_device == without.stages[s].first_device);
    }
    CHECK(with.tps_s == without.tps_s);
    CHECK(with.dp_states <= without.dp_states);
    shared_states += with.dp_states;
    all_states += without.dp_states;
  }
  CHECK(shared_states < all_states);
  // CANDLE-Uno's seven equal branches: about half the DP values (39,579 -> 20,461 on summit-32's
  // eight devices, 2026-11-29), the same plan (here on 16 GiB devices of the test's NPU)
  const PipeModel c = candle_uno_model();
  PipeOptions o;
  o.mini_batch = 8192;
  Json big = npus(8);
  big["chip"]["offchip"]["capacity_bytes"] = std::uint64_t(16) << 30;
  const DeviceSpec eight = device_spec(test::config(big), 8);
  const PipePlan with = plan_pipeline(c, eight, o);
  o.share_equal_subproblems = false;
  const PipePlan without = plan_pipeline(c, eight, o);
  CHECK(with.tps_s == without.tps_s);
  CHECK(with.stages.size() == without.stages.size());
  CHECK(with.dp_states * 10 < without.dp_states * 6);
}
