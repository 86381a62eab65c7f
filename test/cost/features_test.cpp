// The cost model's closed-form features, against hand-computed values on the small test configs.
#include <catch2/catch.hpp>

#include "compiler/cost/features.h"
#include "sim/common/error.h"
#include "test/support.h"

using namespace tessera;

TEST_CASE("compute features count tiles, lane groups and passes", "[cost][features]") {
  const sim::Config cfg = sim::parse_config(test::exchange_config(4), "test");
  const auto& core = cfg.chip.core;
  // 20x32x8 on 16x4x16 tiles: 2 x 2 x 2 = 8 tiles, 4 output blocks; a tile is 1024 MACs at 64
  // per cycle = 16 cycles, fetches (16*16 + 16*4) * 2 B = 640 B at 64 B/cycle = 10 cycles, and a
  // block writes back 16*4*2 = 128 B at 32 B/cycle = 4 cycles. Three steps, each with 6 + 8
  // cycles of issue and fill.
  cost::ComputeFeatures f = cost::compute_features(core, {"matmul", 1, 20, 32, 8}, 3);
  CHECK(f.mac_cycles == Approx(3 * (14 + 8 * 16)));
  CHECK(f.fetch_cycles == Approx(3 * 8 * 10));
  CHECK(f.writeback_cycles == Approx(3 * 4 * 4));
  CHECK(f.vector_cycles == 0);
  // gelu (8 cycles per lane group) of 100 elements on 8 lanes: 13 groups, no issue cost.
  cost::StepShape g;
  g.kind = "gelu";
  g.elements = 100;
  CHECK(cost::compute_features(core, g, 2).vector_cycles == Approx(2 * 13 * 8));
  // softmax of 3 rows of 20: per lane group max + sub + exp + add + mul = 1+1+4+1+1 = 8, 3 groups;
  // per row two lane trees of log2(8) = 3 and a division (4): 3*8 + 6 + 4 = 34 per row.
  cost::StepShape s;
  s.kind = "softmax";
  s.rows = 3;
  s.cols = 20;
  CHECK(cost::compute_features(core, s, 1).vector_cycles == Approx(3 * 34));
  s.kind = "conv2d";
  CHECK_THROWS_WITH(cost::compute_features(core, s, 1), Catch::Contains("'conv2d'"));
}

TEST_CASE("gather features on an exchange chip: busiest port, two-port chain, messages", "[cost][features]") {
  const sim::Config cfg = sim::parse_config(test::exchange_config(4), "test");
  const cost::Fabric fabric(cfg);
  // Core 0 sends 400 B to cores 1 and 2; core 3 sends 200 B to core 1. Ports move 4 B/cycle:
  // core 0 sends 800 B (200 cycles), core 1 receives 600 B (150 cycles). In order: 0->1 takes
  // core 1 for cycles 0-100, then 0->2 runs 100-200 while 3->1 (listed last) takes core 1 at
  // 100-150: the last message is taken by cycle 200.
  const cost::GatherFeatures f = fabric.gather({{0, 1, 400}, {0, 2, 400}, {3, 1, 200}});
  CHECK(f.port_cycles == Approx(200));
  CHECK(f.order_cycles == Approx(200));
  // Four senders each send 8 B to each of four receivers, by receiving core: the convoy of
  // a port-holding exchange. Receiver r takes sender s at slot r + s (2 cycles per slot, 8 B at
  // 4 B/cycle): the last at slot 3 + 3, ending at 14; the ports alone would say 8.
  std::vector<cost::Message> convoy;
  for (std::uint32_t r = 4; r < 8; ++r)
    for (std::uint32_t s = 0; s < 4; ++s) convoy.push_back({s, r, 8});
  const sim::Config eight = sim::parse_config(test::exchange_config(8), "test");
  const cost::GatherFeatures c = cost::Fabric(eight).gather(convoy);
  CHECK(c.port_cycles == Approx(8));
  CHECK(c.order_cycles == Approx(14));
  // Two operands gathered at once (each core sends its share of the first, then of the second):
  // the first, 1->0, 2->0, 3->0, 3->2 (16 B: 4 cycles each); the second, 1->2. Core 0 takes
  // cores 1, 2, 3 at 0-4, 4-8, 8-12. Core 1 puts up 1->2 at 4, core 3 puts up 3->2 at 12, so
  // core 2 takes 1->2 at 4-8 and 3->2 at 12-16: 16. (Receiver by receiver in list order, the
  // first operand's 3->2 would go before the second's 1->2 and the gather end at 20.)
  const sim::Config four = sim::parse_config(test::exchange_config(4), "test");
  const cost::GatherFeatures joint = cost::Fabric(four).gather({{1, 0, 16}, {2, 0, 16}, {3, 0, 16}, {3, 2, 16}, {1, 2, 16}});
  CHECK(joint.order_cycles == Approx(16));
  CHECK(f.messages == 2);
  CHECK(f.link_cycles == 0);  // one chip: no links
  CHECK(f.latency_cycles == 30);
  CHECK(f.local_cycles == 0);
}

TEST_CASE("gather features on a mesh: links under X-then-Y routing, hops, local copies", "[cost][features]") {
  const sim::Config cfg = sim::parse_config(test::mesh_config(1, 4), "test");
  const cost::Fabric fabric(cfg);
  // 0->3 1024 B, 1->3 512 B, 0->1 256 B, and a local copy of 64 B (32 elements) on core 2.
  // Eastward links: 0->1 carries 1024 + 256, 1->2 and 2->3 carry 1024 + 512 = 1536 B: 48 cycles
  // at 32 B/cycle; core 3 receives 1536 B: 48 cycles at its 32 B/cycle port. Longest path: 3 hops
  // of 2 + 1 cycles. The copy: 4 lane groups of 1 cycle.
  const cost::GatherFeatures f = fabric.gather({{0, 3, 1024}, {1, 3, 512}, {2, 2, 64}, {0, 1, 256}});
  CHECK(f.port_cycles == Approx(48));
  CHECK(f.link_cycles == Approx(48));
  // In order, packet by packet (256 B, 8 cycles each): core 3 takes core 0's first packet (0-8),
  // core 1's first (8-16), core 0's second, put up at 8 (16-24), core 1's second, put up at 16
  // (24-32), then core 0's last two (32-48); core 0's packet to core 1 goes up at 48 and ends at
  // 56. By whole messages it was 48 (core 3 busy until 48, core 0's message to core 1 ending at
  // 40): the packets of the two messages into core 3 interleave, so core 0 is held longer.
  CHECK(f.order_cycles == Approx(56));
  CHECK(f.messages == 2);
  CHECK(f.latency_cycles == 9);
  CHECK(f.local_cycles == 4);
  // A shift round on a 2x2 torus-free mesh: 0->1->3->2->0, 512 B each: every link carries one
  // message (16 cycles), one hop each.
  const sim::Config sq = sim::parse_config(test::mesh_config(2, 2), "test");
  const cost::GatherFeatures r = cost::Fabric(sq).round({{0, 1}, {1, 3}, {3, 2}, {2, 0}}, 512);
  CHECK(r.link_cycles == Approx(16));
  CHECK(r.port_cycles == Approx(16));
  CHECK(r.latency_cycles == 3);
}

TEST_CASE("gather features on a mesh: a channel holds each packet for whole cycles", "[cost][features]") {
  // Cores 0 and 1 of a 1x4 mesh each send eight 2-byte messages to core 3. A mesh channel holds a
  // packet at least a cycle (docs/hardware-model.md), so the link 2->3 and core 3's port are busy
  // 16 cycles, not the 32 bytes' one cycle at 32 B/cycle.
  const sim::Config cfg = sim::parse_config(test::mesh_config(1, 4), "test");
  std::vector<cost::Message> m;
  test::ProgramBuilder p;
  for (std::uint32_t c : {0u, 1u, 3u}) p.alloc(c, "buf", 64);
  for (int i = 0; i < 8; ++i)
    for (std::uint32_t from : {0u, 1u}) {
      m.push_back({from, 3, 2});
      p.send(from, 3, 2).recv(3, from, 2);
    }
  const cost::GatherFeatures f = cost::Fabric(cfg).gather(m);
  CHECK(f.link_cycles == Approx(16));
  CHECK(f.port_cycles == Approx(16));
  CHECK(f.order_cycles == Approx(16));
  // The simulator (24 cycles): the 16 packets through the busiest link, and one path's latency
  // at most (by bytes the link would have been busy one cycle).
  const auto simulated = static_cast<double>(test::total(test::run(test::mesh_config(1, 4), p.json())));
  CHECK(simulated >= f.link_cycles);
  CHECK(simulated <= f.link_cycles + f.latency_cycles);
  // 300 bytes: a packet of 256 (8 cycles) and one of 44 (2 cycles, not 1.4).
  const cost::GatherFeatures g = cost::Fabric(cfg).gather({{0, 1, 300}});
  CHECK(g.link_cycles == Approx(10));
  CHECK(g.port_cycles == Approx(10));
}

TEST_CASE("off-chip I/O spreads over every chip's channels", "[cost][features]") {
  // The test chip: one 8 B/cycle channel with 100 cycles of latency. 800 bytes: 100 + 100.
  const sim::Config cfg = sim::parse_config(test::exchange_config(4), "test");
  CHECK(cost::offchip_cycles(cfg, 800) == Approx(200));
  CHECK(cost::offchip_cycles(cfg, 0) == 0);
  Json two = test::exchange_config(4);
  two["chip"]["offchip"]["channels"] = 2;
  CHECK(cost::offchip_cycles(sim::parse_config(two, "two channels"), 800) == Approx(150));
}

namespace {
// Chips of two exchange cores (chip c holds cores 2c and 2c + 1) joined by `dims`: 256-byte
// packets, 64-byte flits (the default).
cost::Fabric chips_fabric(std::vector<Json> dims, std::vector<sim::Config>& keep) {
  Json c = test::exchange_config(2);
  c["system"] = {{"dimensions", dims}, {"packet_bytes", 256}, {"buffer_bytes", 4096}};
  keep.push_back(sim::parse_config(c, "chips"));
  return cost::Fabric(keep.back());
}
Json dim(const std::string& kind, int size) {
  return {{"kind", kind}, {"size", size}, {"link_bytes_per_cycle", 100}, {"link_latency_cycles", 50}};
}
}  // namespace

TEST_CASE("gather features between chips: links in dimension order, packets at least a flit", "[cost][features]") {
  std::vector<sim::Config> keep;
  keep.reserve(8);
  // A ring of 4. Core 0 (chip 0) sends 1000 B to core 4 (chip 2): the two ways tie, so up,
  // over links 0->1 and 1->2; core 2 (chip 1) sends 500 B to core 4 over 1->2; core 1 sends
  // 10 B to core 6 (chip 3), down over 0->3, a flit's time (64 B). Link 1->2 carries 1500 B:
  // 15 cycles at 100 B/cycle. The longest path: the exchange's 30 cycles and two links of 50.
  // The busiest port: core 4 receives 1500 B at 4 B/cycle.
  const std::vector<cost::Message> msgs{{0, 4, 1000}, {2, 4, 500}, {1, 6, 10}};
  const cost::GatherFeatures ring = chips_fabric({dim("ring", 4)}, keep).gather(msgs);
  CHECK(ring.chip_link_cycles == Approx(15));
  CHECK(ring.link_cycles == 0);
  CHECK(ring.latency_cycles == Approx(130));
  CHECK(ring.port_cycles == Approx(375));
  // 300 messages of 10 B from core 1 to core 6 (chip 3): 300 flits of 64 B on link 0->3, 192
  // cycles, not the 30 their bytes would take.
  std::vector<cost::Message> small(300, {1, 6, 10});
  CHECK(chips_fabric({dim("ring", 4)}, keep).gather(small).chip_link_cycles == Approx(192));
  // A switch of 4: up from chips 0 and 1, down into chip 2 (1500 B); two links on each path.
  const cost::GatherFeatures sw = chips_fabric({dim("switch", 4)}, keep).gather(msgs);
  CHECK(sw.chip_link_cycles == Approx(15));
  CHECK(sw.latency_cycles == Approx(130));
  // Fully connected: every pair has its own link, the busiest is 0->2 (1000 B), one link a path.
  const cost::GatherFeatures fc = chips_fabric({dim("fully_connected", 4)}, keep).gather(msgs);
  CHECK(fc.chip_link_cycles == Approx(10));
  CHECK(fc.latency_cycles == Approx(80));
  // A unidirectional ring: core 4 (chip 2) to core 0 (chip 0) goes up, 2->3->0; core 6 (chip 3)
  // adds 700 B on 3->0: 1700 B.
  const cost::GatherFeatures uni = chips_fabric({dim("unidirectional_ring", 4)}, keep).gather({{4, 0, 1000}, {6, 1, 700}});
  CHECK(uni.chip_link_cycles == Approx(17));
  // Two rings of 2 (chip = x + 2y): core 0 (0,0) to core 6 (1,1) crosses dimension 0 first
  // (0->1), then dimension 1 (1->3), where core 2's 500 B from chip 1 join it: 15 cycles.
  const cost::GatherFeatures two = chips_fabric({dim("ring", 2), dim("ring", 2)}, keep).gather({{0, 6, 1000}, {2, 6, 500}});
  CHECK(two.chip_link_cycles == Approx(15));
}
