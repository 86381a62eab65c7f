// Data-parallel training (sim/train): compute by the roofline, all-reduces issued when weight
// gradients are done, forward passes waiting for them; by hand on a two-chip ring.
#include <catch2/catch.hpp>

#include "sim/train/train.h"
#include "test/support.h"

using namespace tessera;
using Catch::Matchers::Contains;

namespace {
// Two NPUs on a ring; the NPU does 1000 FLOPs and 100 bytes per cycle with its 10 SMs.
Json two_npus() {
  Json c = test::collective_system(Json::array(
      {{{"kind", "ring"}, {"size", 2}, {"link_bytes_per_cycle", 16}, {"link_latency_cycles", 100}}}));
  c["system"]["npu"] = {{"sms", 10}, {"fp16_flops_per_cycle", 1000}, {"memory_bytes_per_cycle", 100}};
  return c;
}
// Layer 1: forward 100 cycles, weight gradient 200, input gradient 300 (by FLOPs), 1000
// parameters (2000 bytes). Layer 2: forward 50, weight gradient 100 (by bytes: 10,000 at 100
// B/cycle), no input gradient, 4096 parameters.
Json table() {
  const auto work = [](double flops, double bytes) { return Json{{"flops", flops}, {"bytes", bytes}}; };
  return {{"name", "two-layers"},
          {"batch_per_npu", 1},
          {"layers", Json::array({{{"name", "l1"}, {"parameters", 1000}, {"forward", work(1e5, 0)},
                                   {"input_grad", work(3e5, 0)}, {"weight_grad", work(2e5, 100)}},
                                  {{"name", "l2"}, {"parameters", 4096}, {"forward", work(5e4, 10)},
                                   {"input_grad", work(0, 0)}, {"weight_grad", work(0, 10000)}}})}};
}
sim::TrainResult train(const Json& cfg, sim::TrainMode mode, double comm_gb = -1, std::uint32_t sms = 0) {
  const sim::Config c = test::config(cfg);
  sim::TrainSpec s;
  s.mode = mode;
  s.shares = sim::default_shares(mode, *c.system.npu, c.clock_ghz);
  if (comm_gb >= 0) s.shares.comm_memory_gb_per_s = comm_gb;
  if (sms) s.shares.comm_sms = sms;
  return sim::run_training(c, sim::parse_layer_table(table(), "table"), s);
}
}  // namespace

TEST_CASE("training: compute by the roofline, all-reduces issued as weight gradients finish, forwards wait", "[train]") {
  const auto r = train(two_npus(), sim::TrainMode::Ideal);
  // iteration 1: forward 100 + 50; backward: l2's weight gradient (100: all-reduce out at 250),
  // l1's weight gradient (200: out at 450), l1's input gradient (300): ends at 750
  CHECK(r.compute_cycles == 750u);
  CHECK(r.layers[1].allreduce_issued == 250u);
  CHECK(r.layers[0].allreduce_issued == 450u);
  CHECK(r.layers[0].gradient_bytes == 2000u);  // a ring of 2 splits into 4 messages: 2000 divides
  CHECK(r.layers[1].gradient_bytes == 8192u);
  CHECK(r.gradient_bytes == 10192u);
  // iteration 2 starts at 750; l1's forward waits for its all-reduce if it is not done yet
  const Cycles d1 = r.layers[0].allreduce_done, d2 = r.layers[1].allreduce_done;
  CHECK(d1 > 450u);
  CHECK(d2 > 250u);
  const Cycles f1 = std::max<Cycles>(750, d1), f2 = std::max(f1 + 100, d2);
  CHECK(r.layers[0].forward_start == f1);
  CHECK(r.iteration_cycles == f2 + 50 + 600 - 750);
  CHECK(r.exposed_cycles == r.iteration_cycles - 750);
}

TEST_CASE("training: the configurations' shares of the NPU", "[train]") {
  // CommOpt-like: 6 of 10 SMs and 50 of 100 B/cycle to communication. Compute keeps 400 FLOPs
  // and 50 bytes per cycle: l1 250 + 500 + 750, l2 125 + 200 (its 10,000 bytes) = 1825.
  const auto commopt = train(two_npus(), sim::TrainMode::CommOpt, 50, 6);
  CHECK(commopt.compute_cycles == 1825u);
  // NoOverlap: compute keeps everything (750); the all-reduces all go out when the backward
  // pass ends and the forward pass waits for the last of them
  const auto noov = train(two_npus(), sim::TrainMode::NoOverlap);
  CHECK(noov.compute_cycles == 750u);
  CHECK(noov.layers[0].allreduce_issued == 750u);
  CHECK(noov.layers[1].allreduce_issued == 750u);
  const Cycles last = std::max(noov.layers[0].allreduce_done, noov.layers[1].allreduce_done);
  CHECK(noov.layers[0].forward_start == last);
  CHECK(noov.iteration_cycles == last - 750 + 750);
  // ACE: all SMs, 100 - 50 B/cycle for compute: l2's weight gradient takes 200, the rest by FLOPs
  const auto ace = train(two_npus(), sim::TrainMode::Ace, 50);
  CHECK(ace.compute_cycles == 850u);
  CHECK(ace.comm.memory_read_bytes[0] == 10192u);  // ACE's DMA reads each gradient once
  // communication that takes all the memory bandwidth leaves compute none: an error
  CHECK_THROWS_WITH(train(two_npus(), sim::TrainMode::CommOpt), Contains("compute needs some of both"));
}

TEST_CASE("layer tables: bad fields are named", "[train][bad-input]") {
  Json t = table();
  t["layers"][1]["forward"]["flops"] = -1;
  CHECK_THROWS_WITH(sim::parse_layer_table(t, "t.json"), Contains("t.json") && Contains("layers[1].forward.flops") &&
                                                             Contains("expected a number from 0 to 1e+18"));
  // sizes that overflowed into a shorter iteration or a crash are named errors
  t = table();
  t["layers"][0]["weight_grad"]["bytes"] = 1e300;
  CHECK_THROWS_WITH(sim::parse_layer_table(t, "t.json"), Contains("layers[0].weight_grad.bytes"));
  t = table();
  t["layers"][0]["alltoall_bytes"] = std::uint64_t{1} << 48;
  CHECK_THROWS_WITH(sim::parse_layer_table(t, "t.json"), Contains("layers[0].alltoall_bytes: expected at most 2^40"));
  t = table();
  t["layers"][1]["parameters"] = std::uint64_t{1} << 62;
  CHECK_THROWS_WITH(sim::parse_layer_table(t, "t.json"), Contains("layers[1].parameters: expected at most 2^40"));
  t = table();
  t["layers"][0]["params"] = 3;
  CHECK_THROWS_WITH(sim::parse_layer_table(t, "t.json"), Contains("params"));
  t = table();
  t["layers"] = Json::array();
  CHECK_THROWS_WITH(sim::parse_layer_table(t, "t.json"), Contains("expected a non-empty list of layers"));
  CHECK_THROWS_WITH(sim::parse_train_mode("fast"), Contains("expected nooverlap, commopt, compopt, ace or ideal"));
  Json cfg = two_npus();
  cfg["system"].erase("npu");
  const sim::Config c = test::config(cfg);
  sim::TrainSpec s;
  CHECK_THROWS_WITH(sim::run_training(c, sim::parse_layer_table(table(), "t"), s), Contains("has no system.npu"));
}

TEST_CASE("training: a model-parallel layer's all-to-alls block the forward and backward passes", "[train]") {
  // Layer 1 of the table gets an all-to-all of 8 KiB and no parameters anywhere: no
  // all-reduce, so each iteration waits for exactly two all-to-alls on an idle network.
  Json t = table();
  t["layers"][0]["alltoall_bytes"] = 8192;
  t["layers"][0]["parameters"] = 0;
  t["layers"][1]["parameters"] = 0;
  const sim::Config c = test::config(two_npus());
  sim::TrainSpec s;
  s.mode = sim::TrainMode::Ideal;
  s.shares = sim::default_shares(s.mode, *c.system.npu, c.clock_ghz);
  s.chunk_bytes = 0;
  const auto r = sim::run_training(c, sim::parse_layer_table(t, "table"), s);
  sim::CollectiveSpec a2a;
  a2a.op = sim::CollectiveOp::AllToAll;
  a2a.algorithm = sim::CollectiveAlgorithm::Direct;
  a2a.bytes = 8192;
  a2a.chunk_bytes = 0;
  const Cycles alone = sim::run_collective(c, a2a).cycles;
  CHECK(alone > 0u);
  CHECK(r.compute_cycles == 750u);
  CHECK(r.iteration_cycles == 750 + 2 * alone);
  CHECK(r.layers[1].forward_start == r.layers[0].forward_end + alone);
}

TEST_CASE("training: shares held only while collectives are in flight", "[train]") {
  // ACE with 50 of the 100 B/cycle, and layer 1's weight gradient memory-bound: 80,000 bytes,
  // 800 cycles with all the bandwidth, 1600 with compute's half (its 2e5 FLOPs take 200).
  Json t = table();
  t["layers"][0]["weight_grad"]["bytes"] = 80000;
  const sim::Config c = test::config(two_npus());
  sim::TrainSpec s;
  s.mode = sim::TrainMode::Ace;
  s.shares = sim::default_shares(s.mode, *c.system.npu, c.clock_ghz);
  s.shares.comm_memory_gb_per_s = 50 * c.clock_ghz;
  const sim::LayerTable lt = sim::parse_layer_table(t, "table");
  const auto fixed = sim::run_training(c, lt, s);
  s.hold = sim::ShareHold::InFlight;
  const auto held = sim::run_training(c, lt, s);
  // static: l2's weight gradient takes 200 (10,000 bytes at 50), so its all-reduce goes at 350,
  // and l1's weight gradient takes 1600
  CHECK(fixed.layers[1].allreduce_issued == 350u);
  CHECK(fixed.layers[0].allreduce_issued == 350u + 1600u);
  // in flight: nothing is in flight before 250, so l2's weight gradient takes 100 and its
  // all-reduce goes at 250; l1's weight gradient runs at half rate until that all-reduce is done
  // D cycles later (D < 1600), then at full rate: 250 + D + (1 - D / 1600) x 800 = 1050 + D / 2
  CHECK(held.layers[1].allreduce_issued == 250u);
  const Cycles d = held.layers[1].allreduce_done - 250;
  REQUIRE(d < 1600u);
  CHECK(held.layers[0].allreduce_issued == static_cast<Cycles>(std::ceil(1050 + d / 2.0)));
  // iteration 2 (forwards 150) issues its all-reduces too: l2's weight gradient 100 with nothing
  // in flight, l1's again 800 + D / 2 beside l2's all-reduce on an idle network, its input
  // gradient 300 (by FLOPs, whatever is in flight)
  CHECK(held.compute_cycles == 150u + 100u + static_cast<Cycles>(std::ceil(800 + d / 2.0)) + 300u);
  CHECK(fixed.compute_cycles == 150u + 200u + 1900u);
  // nothing to communicate: all of the NPU throughout, 150 + 100 + 800 + 300
  Json quiet = t;
  quiet["layers"][0]["parameters"] = 0;
  quiet["layers"][1]["parameters"] = 0;
  const auto alone = sim::run_training(c, sim::parse_layer_table(quiet, "table"), s);
  CHECK(alone.compute_cycles == 1350u);
  CHECK(alone.iteration_cycles == 1350u);
  CHECK_THROWS_WITH(sim::parse_share_hold("lent"), Contains("expected static or in-flight"));
}
