// The DFModel-style mapping model against hand-computed values on a toy layer: hidden 8, 2
// heads, 4 tokens, FFN 32, 2-byte words, on chips of 64 FLOP/s and 64 B/s of DRAM, so that
// every time is a small number of seconds worked out in the comments.
#include <catch2/catch.hpp>

#include "compiler/lower/mapping_lower.h"
#include "compiler/partition/dfmodel.h"
#include "sim/common/error.h"
#include "test/support.h"

using namespace tessera;
using partition::Strategy;

namespace {

partition::LlmSpec toy(std::uint32_t layers = 2) {
  partition::LlmSpec s;
  s.name = "toy";
  s.layers = layers;
  s.hidden = 8;
  s.heads = 2;
  s.ffn = 32;
  s.seq = 4;
  s.micro_batch = 1;
  s.seq_tile = 4;
  return s;
}

partition::SystemSpec chip(std::vector<partition::DimSpec> dims = {}) {
  partition::SystemSpec s;
  s.name = "toy-system";
  s.peak_flops = 64;
  s.sram_bytes = 1e9;
  s.dram_bytes_per_s = 64;
  s.dims = std::move(dims);
  return s;
}

// `n` NPUs of 1024 FLOPs and 8 bytes per cycle on a ring: links of 16 B/cycle, latency 100.
sim::Config npu_ring(std::uint32_t n) {
  Json c = test::collective_system(Json::array(
      {{{"kind", "ring"}, {"size", n}, {"link_bytes_per_cycle", 16}, {"link_latency_cycles", 100}}}));
  c["system"]["npu"] = {{"sms", 8}, {"fp16_flops_per_cycle", 1024}, {"memory_bytes_per_cycle", 8}};
  return test::config(c);
}

}  // namespace

TEST_CASE("a GPT layer's FLOPs, kernel by kernel", "[parallel]") {
  const auto layer = partition::gpt_layer(toy());
  REQUIRE(layer.size() == 11);
  // T = 4 tokens: Q/K/V/Proj 2*4*8*8 = 512; scores and MHA2 2*4*4*8 = 256; softmax 5*2*16 = 160;
  // adds 4*8 = 32; FFN0/FFN1 2*4*8*32 = 2048.
  const double expect[11] = {512, 512, 512, 256, 160, 256, 512, 32, 2048, 2048, 32};
  for (std::size_t k = 0; k < 11; ++k) CHECK(layer[k].flops == Approx(expect[k]));
  CHECK(layer[8].weight_bytes == Approx(8 * 32 * 2));
  CHECK(layer[4].out_bytes == Approx(2 * 4 * 4 * 2));  // the scores: heads x seq x seq
}

TEST_CASE("all-reduce time per dimension kind, and hierarchically over two", "[parallel]") {
  using K = sim::DimensionKind;
  const auto sys = chip({{K::Ring, 4, 100}, {K::Ring, 2, 100}, {K::FullyConnected, 4, 100}, {K::Switch, 4, 100}});
  CHECK(partition::allreduce_seconds(sys, {0}, 800) == Approx(6));   // 2 * 3/4 * 800 / (2 * 100)
  CHECK(partition::allreduce_seconds(sys, {2}, 800) == Approx(4));   // 2 * 800 / (4 * 100)
  CHECK(partition::allreduce_seconds(sys, {3}, 800) == Approx(12));  // 2 * 3/4 * 800 / 100
  // ring of 4, then the ring of 2 (one link each way) on the quarter left: 6 + 2 * 1/2 * 200 / 100
  CHECK(partition::allreduce_seconds(sys, {0, 1}, 800) == Approx(8));
}

TEST_CASE("kernel by kernel: every tensor through DRAM; fused: compute-bound", "[parallel]") {
  partition::Mapping m;
  m.fused = false;
  const partition::Evaluation kbk = partition::evaluate(toy(), chip(), m);
  REQUIRE(kbk.feasible);
  REQUIRE(kbk.partitions.size() == 11);
  // Q: 512 FLOP = 8 s; reads the input (64 B), writes 64 B, loads 128 B of weights: 4 s -> 8.
  CHECK(kbk.partitions[0].compute_s == Approx(8));
  CHECK(kbk.partitions[0].memory_s == Approx(4));
  // Add: 0.5 s of compute; reads Proj's output and the input, writes: 192 B = 3 s.
  CHECK(kbk.partitions[7].seconds() == Approx(3));
  // FFN0: 32 s of compute; 64 + 256 + 512 B = 13 s.
  CHECK(kbk.partitions[8].memory_s == Approx(13));
  // 8+8+8 + 4 + 2.5 + 4 + 8 + 3 + 32 + 32 + 3
  CHECK(kbk.layer_s == Approx(112.5));
  CHECK(kbk.utilisation == Approx(2 * 6880.0 / (2 * 112.5 * 64)));
  m.fused = true;
  const partition::Evaluation f = partition::evaluate(toy(), chip(), m);
  REQUIRE(f.feasible);
  CHECK(f.layer_s == Approx(6880.0 / 64));  // 107.5 s: every partition compute-bound
  CHECK(f.utilisation == Approx(1.0));
  CHECK(f.tokens_per_s == Approx(4 / (2 * 107.5)));
}

TEST_CASE("SRAM: buffers per sequence tile, double-buffered crossings, two weight chunks", "[parallel]") {
  partition::LlmSpec s = toy();
  s.seq_tile = 2;  // half the tokens per tile
  partition::Mapping m;
  m.sizes = std::vector<std::size_t>(11, 1);
  const partition::Evaluation e = partition::evaluate(s, chip(), m);
  REQUIRE(e.feasible);
  // Q alone: the input's tile (32 B) and its output's (32 B), each twice; weights 128 B, half resident.
  CHECK(e.partitions[0].sram_bytes == Approx(2 * 32 + 2 * 32 + 64));
  // Q, K, V, MHA1 fused: the input twice (read once), Q and K buffered for MHA1 (depth 4 and 3),
  // V and the scores leave (twice each), three half-resident weights.
  m.sizes = {4, 7};
  const partition::Evaluation g = partition::evaluate(s, chip(), m);
  REQUIRE(g.feasible);
  CHECK(g.partitions[0].sram_bytes == Approx(2 * 32 + 4 * 32 + 3 * 32 + 2 * 32 + 2 * 32 + 3 * 64));
  partition::SystemSpec small = chip();
  small.sram_bytes = 100;
  m.sizes.clear();
  const partition::Evaluation none = partition::evaluate(s, small, m);
  CHECK_FALSE(none.feasible);
  CHECK_THAT(none.why, Catch::Contains("kernel 'Q' alone needs"));
}

TEST_CASE("tensor and pipeline parallelism: shards, all-reduces, stage hand-off", "[parallel]") {
  const auto sys = chip({{sim::DimensionKind::Ring, 2, 16}});
  partition::Mapping m;
  m.dims = {Strategy::TP};
  m.fused = false;
  const partition::Evaluation tp = partition::evaluate(toy(), sys, m);
  REQUIRE(tp.feasible);
  CHECK(tp.tp == 2);
  // Proj and FFN1 all-reduce 64 B each over the one link each way: 2 * 1/2 * 64 / 16 = 4 s
  CHECK(tp.network_s == Approx(8));
  // everything but the two adds halves: (6880 - 64) / 2 + 64 FLOP
  CHECK(tp.compute_s == Approx(3472.0 / 64));
  m.dims = {Strategy::PP};
  const partition::Evaluation pp = partition::evaluate(toy(), sys, m);
  REQUIRE(pp.feasible);
  CHECK(pp.pp == 2);
  CHECK(pp.stage_s == Approx(112.5));  // one layer per stage
  CHECK(pp.p2p_s == Approx(4));         // 64 B of activations at 16 B/s
  CHECK(pp.utilisation == Approx(2 * 6880.0 / (112.5 * 64 * 2)));
  m.dims = {Strategy::DP};
  const partition::Evaluation dp = partition::evaluate(toy(), sys, m);
  CHECK(dp.tokens_per_s == Approx(2 * 4 / (2 * 112.5)));
}

TEST_CASE("mappings that cannot work say why; search ranks the ones that can", "[parallel]") {
  auto sys = chip({{sim::DimensionKind::Ring, 4, 16}});
  partition::Mapping m;
  m.dims = {Strategy::TP};
  CHECK_THAT(partition::evaluate(toy(), sys, m).why, Catch::Contains("2 heads do not divide over TP 4"));
  m.dims = {Strategy::PP};
  CHECK_THAT(partition::evaluate(toy(), sys, m).why, Catch::Contains("more stages than the model's 2 layers"));
  sys.dram_capacity = 1000;  // a layer's weights are 4 * 128 + 2 * 512 = 1536 B
  m.dims = {Strategy::DP};
  CHECK_THAT(partition::evaluate(toy(), sys, m).why, Catch::Contains("2 layers per stage hold"));
  m.dims = {};
  CHECK_THROWS_AS(partition::evaluate(toy(), sys, m), Error);
  sys.dram_capacity = 0;
  const auto all = partition::search(toy(), sys);
  REQUIRE(all.size() == 6);
  CHECK(all.front().feasible);
  for (std::size_t i = 1; i < all.size(); ++i)
    if (all[i].feasible) CHECK(all[i - 1].utilisation >= all[i].utilisation);
}

TEST_CASE("training: backward at twice the work, 1F1B fill and drain, the DP gradient all-reduce", "[parallel]") {
  partition::LlmSpec s = toy();
  s.training = true;
  s.global_batch = 4;
  partition::Mapping m;
  const partition::Evaluation one = partition::evaluate(s, chip(), m);
  REQUIRE(one.feasible);
  CHECK(one.micro_batches == 4);
  // fused into one compute-bound partition: forward 107.5 s, backward 215 s (DRAM: 2 * 26 s plus
  // the weight gradients, 1536 B = 24 s, is less); 2 layers: 645 s a micro-batch, 4 of them
  CHECK(one.backward_layer_s == Approx(215));
  CHECK(one.interval_s == Approx(4 * 645));
  CHECK(one.utilisation == Approx(1.0));
  const auto sys = chip({{sim::DimensionKind::Ring, 2, 16}});
  m.dims = {Strategy::PP};
  const partition::Evaluation pp = partition::evaluate(s, sys, m);
  REQUIRE(pp.feasible);
  // a layer per stage: 322.5 s a step; 4 micro-batches + 1 step of fill and drain
  CHECK(pp.interval_s == Approx(5 * 322.5));
  CHECK(pp.utilisation == Approx(0.8));
  m.dims = {Strategy::DP};
  const partition::Evaluation dp = partition::evaluate(s, sys, m);
  REQUIRE(dp.feasible);
  CHECK(dp.micro_batches == 2);
  // both layers' weights (3072 B) all-reduced over the one link each way: 2 * 1/2 * 3072 / 16
  CHECK(dp.gradient_allreduce_s == Approx(192));
  CHECK(dp.interval_s == Approx(2 * 645 + 192));
  m.dims = {Strategy::TP};
  m.fused = false;
  const partition::Evaluation tp = partition::evaluate(s, sys, m);
  REQUIRE(tp.feasible);
  // input gradients of the column-sharded kernels, 64 B each (4 s): Q, K, V and FFN0 apart
  double backward_network = 0;
  for (const auto& p : tp.partitions) backward_network += p.backward_network_s;
  CHECK(backward_network == Approx(16));
  s.global_batch = 3;
  m.dims = {Strategy::DP};
  CHECK_THAT(partition::evaluate(s, sys, m).why, Catch::Contains("global batch of 3 does not split"));
}

TEST_CASE("the 1F1B timeline: equal stages match the closed form, hand-offs add their latency", "[parallel]") {
  partition::LlmSpec s = toy();
  s.training = true;
  s.global_batch = 4;
  partition::Mapping m;
  m.dims = {Strategy::PP};
  auto end_of = [](const partition::Evaluation& e) {
    double end = 0;
    for (const auto& x : partition::timeline(e)) end = std::max(end, x.end_s);
    return end;
  };
  // hand-offs of no time: (4 micro-batches + 1) steps of 107.5 + 215 s
  const partition::Evaluation fast = partition::evaluate(s, chip({{sim::DimensionKind::Ring, 2, 1e30}}), m);
  REQUIRE(fast.feasible);
  CHECK(end_of(fast) == Approx(5 * 322.5));
  CHECK(partition::timeline(fast).size() == 16);  // 4 forwards and 4 backwards per stage
  // 4 s hand-offs: stage 0 runs f0 f1 b0 f2 b1 f3 b2 b3, stage 1 f0 b0 f1 b1 ...; worked by hand,
  // stage 0's last backward starts when stage 1's (1194.5 .. 1409.5) has arrived, at 1413.5
  const partition::Evaluation slow = partition::evaluate(s, chip({{sim::DimensionKind::Ring, 2, 16}}), m);
  REQUIRE(slow.p2p_s == Approx(4));
  CHECK(end_of(slow) == Approx(1628.5));
}

TEST_CASE("a mapping on the simulator: PP hand-offs and TP all-reduces as messages, by hand", "[parallel][sim]") {
  // Two NPUs of 1024 FLOPs and 8 bytes per cycle (the test chip's 8 cores of 64 MACs and its
  // DRAM channel) on a ring of 2: links of 16 B/cycle, latency 100.
  const sim::Config cfg = npu_ring(2);
  const partition::SystemSpec sys = partition::system_spec(cfg);
  partition::Mapping m;
  m.dims = {Strategy::PP};
  m.fused = false;
  const partition::Evaluation e = partition::evaluate(toy(2), sys, m);
  REQUIRE(e.feasible);
  REQUIRE(e.pp == 2u);
  // a layer on a chip: every kernel alone, the longer of FLOPs / 1024 and bytes / 8, rounded up
  Cycles layer = 0;
  for (const partition::PartitionCost& p : e.partitions)
    layer += static_cast<Cycles>(std::ceil(std::max(p.flops / 1024, p.dram_bytes / 8)));
  // By hand, DRAM-bound everywhere (bytes / 8): Q, K, V, Proj read 64 + write 64 + weights 128
  // = 32 cycles each; MHA1, MHA2, Add, Add2 read 128 and write 64: 24; Softmax 16; FFN0 reads 64,
  // writes 256 and has 512 of weights: 104, FFN1 the same: 448.
  CHECK(layer == 448u);
  const sim::PipelineProgram prog = lower::lower_mapping(toy(2), sys, e, 4);
  REQUIRE(prog.messages.size() == 4u);  // a hand-off per micro-batch, 64 B (4 tokens x 8 x 2 B)
  CHECK(prog.messages[0].bytes == 64u);
  const sim::PipelineResult r = sim::run_pipeline(cfg, prog);
  // stage 1 takes micro-batch j when stage 0 is done with it and the 64 B have crossed (4
  // cycles on the link, 100 of latency): (4 + 1) layers + the last hand-off
  CHECK(r.cycles >= 5 * layer + 4 + 100);
  CHECK(r.cycles <= 5 * layer + 4 + 100 + 16);
  CHECK(r.busy_cycles == std::vector<Cycles>{4 * layer, 4 * layer});

  // TP over the 2: each row-sharded kernel's output all-reduced in two rings of one step out and
  // one back each way: 2 all-reduces x 2 rings x 2 steps x 2 chips messages per micro-batch
  m.dims = {Strategy::TP};
  const partition::Evaluation t = partition::evaluate(toy(2), sys, m);
  REQUIRE(t.tp == 2u);
  const sim::PipelineProgram tp = lower::lower_mapping(toy(2), sys, t, 1);
  CHECK(tp.messages.size() == 2u * 2 * 2 * 2 * 2);  // and two layers
  CHECK(tp.messages[0].bytes == 16u);               // 64 B of output / 2 rings / 2 chips
  CHECK(sim::run_pipeline(cfg, tp).cycles > 0u);
  CHECK_THROWS_WITH(lower::lower_mapping(toy(2), sys, t, 0), Catch::Matchers::Contains("expected 1 to 4096"));

  // ceil(5 / 4) = 2 layers per stage on a pipeline of 4: the last stage holds none and only
  // takes the hand-off (the model's stage count)
  {
    const sim::Config cfg4 = npu_ring(4);
    const partition::SystemSpec sys4 = partition::system_spec(cfg4);
    m.dims = {Strategy::PP};
    const partition::Evaluation e4 = partition::evaluate(toy(5), sys4, m);
    REQUIRE(e4.feasible);
    const sim::PipelineProgram p4 = lower::lower_mapping(toy(5), sys4, e4, 1);
    CHECK(p4.devices[3].size() == 1u);  // the wait for stage 2's hand-off
    CHECK(sim::run_pipeline(cfg4, p4).busy_cycles == std::vector<Cycles>{2 * layer, 2 * layer, layer, 0});
  }

  // Training, PP over the 2, two micro-batches: 1F1B. A backward pass of a layer, every kernel
  // alone, twice the FLOPs and bytes / 8 of twice the DRAM traffic plus the weight gradients:
  // Q, K, V, Proj (2 x 256 + 128) / 8 = 80; MHA1, MHA2, Add, Add2 2 x 192 / 8 = 48; Softmax 32;
  // FFN0, FFN1 (2 x 832 + 512) / 8 = 272: 1088. Stage 0: F0 F1 B0 B1; stage 1: F0 B0 F1 B1. With
  // x for a hand-off (64 B: 4 cycles on the link, 100 of latency): stage 1's F0 from 448 + x,
  // its B0 ends 1984 + x, stage 0's B0 from 1984 + 2x; stage 1's F1 and B1 end at 3520 + x,
  // stage 0's B1 at 4608 + 2x.
  partition::LlmSpec tr = toy(2);
  tr.training = true;
  tr.global_batch = 2;
  m.dims = {Strategy::PP};
  const partition::Evaluation te = partition::evaluate(tr, sys, m);
  REQUIRE(te.micro_batches == 2u);
  const sim::PipelineResult rt = sim::run_pipeline(cfg, lower::lower_mapping(tr, sys, te, 1));
  CHECK(rt.cycles >= 4608u + 2 * 104);
  CHECK(rt.cycles <= 4608u + 2 * 120);
  CHECK(rt.busy_cycles == std::vector<Cycles>{2 * (448 + 1088), 2 * (448 + 1088)});
}

TEST_CASE("a mapping on the simulator: TP all-reduces streamed tile by tile beside the compute, by hand", "[parallel][sim]") {
  // One layer, TP over a ring of 2 NPUs (1024 FLOPs and 8 B per cycle; links of 16 B/cycle,
  // latency 100), every kernel alone; 64 tokens in 4 sequence tiles of 16. Proj and FFN1 are
  // row-sharded: each all-reduces its 64 x 64 x 2 B = 8 KiB output as two rings of two steps;
  // a step sends 2 messages of 8 KiB / 4 = 2 KiB from each chip to the other over one link:
  // 256 cycles, + 100 of latency, 356; 712 an all-reduce. Streamed, tile i's all-reduce (a
  // quarter: 64 + 100 = 164 a step) runs while tile i + 1 computes (a quarter of Proj's
  // compute is 2560 / 4 cycles, far more), and only the last tile's 2 x 164 is exposed.
  partition::LlmSpec s = toy(1);
  s.hidden = 64;
  s.ffn = 256;
  s.seq = 64;
  s.seq_tile = 16;
  const sim::Config cfg = npu_ring(2);
  const partition::SystemSpec sys = partition::system_spec(cfg);
  partition::Mapping m;
  m.dims = {Strategy::TP};
  m.fused = false;
  const partition::Evaluation e = partition::evaluate(s, sys, m);
  REQUIRE(e.feasible);
  REQUIRE(e.tp == 2u);
  Cycles layer = 0;
  std::size_t reduced = 0;
  for (const partition::PartitionCost& p : e.partitions) {
    layer += static_cast<Cycles>(std::ceil(std::max(p.flops / 1024, p.dram_bytes / 8)));
    for (double b : p.allreduce_bytes) {
      CHECK(b == Approx(8192));
      ++reduced;
      // the hiding needs a compute slice (a tile's compute over the 2 ring steps) >= 164
      CHECK(std::max(p.flops / 1024, p.dram_bytes / 8) / 4 / 2 >= 164);
    }
  }
  REQUIRE(reduced == 2u);
  const sim::PipelineResult plain = sim::run_pipeline(cfg, lower::lower_mapping(s, sys, e, 1, /*stream=*/false));
  const sim::PipelineResult streamed = sim::run_pipeline(cfg, lower::lower_mapping(s, sys, e, 1));
  INFO("layer " << layer << ": plain " << plain.cycles << ", streamed " << streamed.cycles);
  CHECK(plain.cycles == layer + 2 * 712);
  CHECK(streamed.cycles == layer + 2 * 328);
  CHECK(streamed.busy_cycles == plain.busy_cycles);  // the same compute, in slices
}

TEST_CASE("systolic compute: kernels on whole arrays, quantised per sequence tile, by hand", "[parallel]") {
  using partition::KernelShape;
  // 8 arrays of 4 x 4, tiles of 8 tokens (2 blocks of 4). A kernel of 12 outputs (3 blocks)
  // over dot products of 5: 3 lanes x 2 stages = 6 arrays at 5 cycles a tile.
  const KernelShape gemm{12, 5, 0, false};
  CHECK(partition::tile_cycles({gemm}, 8, 8, 4, 4) == 5);
  // Two of them cannot have 6 arrays each: at 10 cycles one stage takes both token blocks in
  // turn (3 lanes, 3 arrays); at 9 neither fits (6 + 6 > 8).
  CHECK(partition::tile_cycles({gemm, gemm}, 8, 8, 4, 4) == 10);
  // An element-wise kernel of 12 takes 8 cycles per lane-pass of a tile: 3 lanes at 8 cycles,
  // so the GEMM beside it must fit in 5 arrays: 10 cycles again.
  CHECK(partition::tile_cycles({gemm, KernelShape{12, 0, 0, true}}, 8, 8, 4, 4) == 10);
  // A weight gradient: 12 x 5 outputs (3 x 2 blocks), dot products over the tile's 8 tokens.
  CHECK(partition::tile_cycles({KernelShape{12, 8, 5, false}}, 8, 8, 4, 4) == 8);
  CHECK_THROWS_AS(partition::tile_cycles(std::vector<KernelShape>(9, gemm), 8, 8, 4, 4), Error);
}

namespace {

// The DFModel authors' A100 (their repository's system files: 432 arrays of 16 x 16 at 1.41
// GHz, 88,080,384 B of SRAM) with the given DRAM and one dimension per entry of `dims`.
partition::SystemSpec dfmodel_a100(double dram_bytes_per_s, std::vector<partition::DimSpec> dims) {
  partition::SystemSpec s;
  s.name = "a100-dfmodel";
  s.clock_hz = 1.41e9;
  s.peak_flops = 432.0 * 256 * 2 * s.clock_hz;
  s.sram_bytes = 88080384;
  s.dram_bytes_per_s = dram_bytes_per_s;
  s.dims = std::move(dims);
  return s;
}

partition::LlmSpec dfmodel_gpt(std::uint32_t layers, std::uint64_t hidden, std::uint64_t heads) {
  partition::LlmSpec s;
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.seq = 2048;
  s.seq_tile = 32;
  s.systolic = true;
  return s;
}

}  // namespace

TEST_CASE("systolic compute against the DFModel authors' stored runs on A100s", "[parallel]") {
  using K = sim::DimensionKind;
  // GPT-3 XL shape (hidden 2048, 16 heads) fused on 4 GPUs, TP4, tiles of 32 tokens: the
  // authors' run prints 6144 cycles per tile for its forward partition (Compute_Latency
  // 278,876.6 ns over 64 tiles): Q, K and V take 22 arrays each at 3 x 2048 cycles, and the
  // whole layer does not fit 432 arrays at 4096.
  partition::Mapping tp;
  tp.dims = {Strategy::TP};
  const partition::Evaluation xl =
      partition::evaluate(dfmodel_gpt(24, 2048, 16), dfmodel_a100(1555e9, {{K::Switch, 4, 300e9}}), tp);
  REQUIRE(xl.feasible);
  REQUIRE(xl.partitions.size() == 1);
  CHECK(xl.partitions[0].tile_cycles == 6144);
  CHECK(xl.partitions[0].compute_s == Approx(278876.6e-9).epsilon(1e-6));
  // 60 layers of hidden 10240, TP8, kernel by kernel, weights loaded before each kernel (the
  // code's setup latency): FFN0 alone takes 20,480 cycles a tile (216 x 2 arrays, two row
  // passes over 10,240) plus 104.9 MB at 2039 GB/s: the authors' run prints 981,014.7 ns.
  partition::LlmSpec big = dfmodel_gpt(60, 10240, 80);
  big.weight_setup = true;
  big.training = true;
  big.global_batch = 1792;
  const auto sys = dfmodel_a100(2039e9, {{K::Ring, 8, 600e9}, {K::Ring, 4, 25e9}, {K::Ring, 32, 25e9}});
  partition::Mapping m;
  m.dims = {Strategy::TP, Strategy::PP, Strategy::DP};
  m.fused = false;
  const partition::Evaluation e = partition::evaluate(big, sys, m);
  REQUIRE(e.feasible);
  const partition::PartitionCost& ffn0 = e.partitions[8];
  CHECK(ffn0.tile_cycles == 20480);
  CHECK(ffn0.seconds() == Approx(981014.7e-9).epsilon(1e-5));
  // Q's weight gradient (1280 x 10240 outputs over the tile's 32 tokens) takes 3840 cycles a
  // tile, the authors' weight-update kernel 174,297 ns; its input gradient (10240 outputs over
  // 1280) 3840 too.
  CHECK(e.partitions[0].backward_compute_s == Approx(2 * 3840 * 64 / 1.41e9));
  // The search picks the published mapping, TP8 PP4 DP32; the authors' run gives utilisation
  // 0.595 (their backward shapes Q, K and V's input gradients like the forward, slower).
  std::vector<partition::Evaluation> kbk;
  for (partition::Evaluation& x : partition::search(big, sys))
    if (!x.mapping.fused) kbk.push_back(std::move(x));
  REQUIRE(kbk.front().feasible);
  CHECK(kbk.front().tp == 8);
  CHECK(kbk.front().pp == 4);
  CHECK(kbk.front().dp == 32);
  CHECK(kbk.front().utilisation == Approx(0.595).epsilon(0.10));
}
