// The endpoint engines of a collective (sim/collective/engines.h): the cores baseline and ACE
// against the ideal engine, cycle by cycle and byte by byte, worked out by hand.
#include <catch2/catch.hpp>

#include "sim/collective/collective.h"
#include "sim/collective/engines.h"
#include "sim/noc/topology.h"
#include "test/support.h"

using namespace tessera;
using Catch::Matchers::Contains;

namespace {
// test::collective_system with one ALU of 16 B/cycle in the ACE.
Json engines_system(Json dims) {
  Json c = test::collective_system(std::move(dims));
  c["system"]["ace"]["alus"] = 1;
  c["system"]["ace"]["alu_bytes_per_cycle"] = 16;
  return c;
}
Json ring(const char* kind, std::uint32_t size) {
  return Json::array({{{"kind", kind}, {"size", size}, {"link_bytes_per_cycle", 16}, {"link_latency_cycles", 100}}});
}
sim::CollectiveResult run(const Json& cfg, const std::string& engine, sim::CollectiveOp op, sim::CollectiveAlgorithm alg,
                          Bytes bytes, Bytes chunk) {
  sim::CollectiveSpec s;
  s.op = op;
  s.algorithm = alg;
  s.bytes = bytes;
  s.chunk_bytes = chunk;
  s.engine = engine;
  return sim::run_collective(test::config(cfg), s);
}
}  // namespace

TEST_CASE("ring all-reduce on 3 chips, one chunk: what the cores and ACE add to the ideal engine, by hand", "[collective][engines]") {
  // A one-way ring of 3, N = 12 KiB in one chunk: 4 steps of 4 KiB messages (2 reductions,
  // 2 copies). Each step has its link to itself, so the network's part is the same for every
  // engine and only the endpoints differ.
  const Json cfg = engines_system(ring("unidirectional_ring", 3));
  const auto go = [&](const char* engine) {
    return run(cfg, engine, sim::CollectiveOp::AllReduce, sim::CollectiveAlgorithm::Ring, 12288, 0);
  };
  const auto ideal = go("ideal"), cores = go("cores"), ace = go("ace");
  // cores, per chip: the first send reads its 4 KiB (128 cycles at 32 B/cycle) and passes the
  // core (256 at 16 B/cycle): 384. Each reduction: the AFI writes the 4 KiB (128), the core
  // reads 8 KiB (256) and adds it up (512): 896 where the ideal engine takes 1. The first copy
  // is written (128) and read and passed on (384): 512 instead of 1. The last is written: 128.
  CHECK(cores.cycles - ideal.cycles == 384 + 2 * (896 - 1) + (512 - 1) + 128);
  // ACE: the TX DMA reads the 12 KiB chunk (384), the ALU adds each reduction (256 at 16 B/cycle
  // instead of the ideal cycle), a copy is ready when it arrives (0 instead of 1), and the RX
  // DMA writes the chunk back (384).
  CHECK(ace.cycles - ideal.cycles == 384 + 2 * (256 - 1) - 1 + 384);
  // memory: cores read 4 + 8 + 8 + 4 KiB (1.5 x the 16 KiB each sends) and write the 4 arriving
  // messages plus the chip's own sum, kept while it goes on: 20 KiB. ACE reads and writes N.
  for (std::uint32_t c = 0; c < 3; ++c) {
    CHECK(cores.sent_bytes[c] == 16384u);
    CHECK(cores.memory_read_bytes[c] == 24576u);
    CHECK(cores.memory_write_bytes[c] == 20480u);
    CHECK(ace.memory_read_bytes[c] == 12288u);
    CHECK(ace.memory_write_bytes[c] == 12288u);
    CHECK(ideal.memory_read_bytes[c] == 0u);
  }
}

TEST_CASE("4x4x4 hierarchical all-reduce: ACE reads and writes N, the baseline reads 3.625 N for the 2.25 N it sends", "[collective][engines]") {
  // Per chip, N in chunks of 64 KiB, every ring used both ways (messages of a chunk's 1/8):
  // local reduce-scatter: a first read of 1/8 and 3 reductions of 2/8 each way = 1.75 N read;
  // 3 arrivals and the final sum written each way = N.
  // vertical and horizontal all-reduce of N/4 (messages N/32): 1 + 3 x 2 + 2 copies = 9/32 read
  // each way (the first copy carries the sum straight from the reduction) = 0.5625 N each; 6
  // arrivals + the kept sum = 7/32 written each way = 0.4375 N each.
  // local all-gather (messages N/8): 3 reads and 3 arrivals each way = 0.75 N read, 0.75 N written.
  // Reads 1.75 + 2 x 0.5625 + 0.75 = 3.625 N; writes 1 + 2 x 0.4375 + 0.75 = 2.625 N.
  const Json cfg = read_json_file(std::string(TESSERA_SOURCE_DIR) + "/configs/ace-torus-64.json");
  const Bytes n = 1 << 20;
  const auto cores = run(cfg, "cores", sim::CollectiveOp::AllReduce, sim::CollectiveAlgorithm::Hierarchical, n, 64 << 10);
  const auto ace = run(cfg, "ace", sim::CollectiveOp::AllReduce, sim::CollectiveAlgorithm::Hierarchical, n, 64 << 10);
  for (std::uint32_t c = 0; c < 64; ++c) {
    CHECK(cores.sent_bytes[c] == 9 * n / 4);
    CHECK(cores.memory_read_bytes[c] == 29 * n / 8);
    CHECK(cores.memory_write_bytes[c] == 21 * n / 8);
    CHECK(ace.sent_bytes[c] == 9 * n / 4);
    CHECK(ace.memory_read_bytes[c] == n);
    CHECK(ace.memory_write_bytes[c] == n);
  }
  // The FSMs go to the phases by the chunks each needs in flight: a chunk spends 3 x (90 +
  // 8192 / 151.0) = 433 cycles in a local phase against 49,152 / 302.0 = 163 on its bandwidth
  // (2.66 chunks), 6 x (500 + 2048 / 18.9) = 3,651 against 24,576 / 37.75 = 651 in an
  // inter-package one (5.61): 16 FSMs share out as 3, 5, 5, 3. The SRAM by bandwidth x initial
  // chunk: 4 MiB x 37.75 x 16 KiB / 30,925,684 = 83,883 bytes for each inter-package phase.
  REQUIRE(ace.ace_fsms_per_phase.size() == 4);
  CHECK(ace.ace_fsms_per_phase == std::vector<std::uint32_t>{3, 5, 5, 3});
  REQUIRE(ace.ace_partition_bytes.size() == 5);
  CHECK(ace.ace_partition_bytes[1] == Approx(83883).margin(2));
  CHECK(ace.ace_partition_bytes[4] == ace.ace_partition_bytes[3]);  // the terminal one as the last phase's
}

TEST_CASE("all-to-all on a ring of 8: the baseline relays through the memory of the chips on the way, ACE does not", "[collective][engines]") {
  // Each chip sends m = chunk / 8 to each of 7 others, the shorter way round: 1, 1, 2, 2, 3, 3
  // and 4 hops, 16 in all. The cores engine writes every hop's arrival and reads the 7
  // originals and the 9 relayed: 16 m each way. ACE's DMA reads the chunk and writes it: 8 m.
  const Json cfg = engines_system(ring("ring", 8));
  const Bytes chunk = 8 * 2048;
  const auto cores = run(cfg, "cores", sim::CollectiveOp::AllToAll, sim::CollectiveAlgorithm::Direct, chunk, 0);
  const auto ace = run(cfg, "ace", sim::CollectiveOp::AllToAll, sim::CollectiveAlgorithm::Direct, chunk, 0);
  for (std::uint32_t c = 0; c < 8; ++c) {
    CHECK(cores.memory_read_bytes[c] == 16 * 2048u);
    CHECK(cores.memory_write_bytes[c] == 16 * 2048u);
    CHECK(ace.memory_read_bytes[c] == chunk);
    CHECK(ace.memory_write_bytes[c] == chunk);
  }
  // the relayed plan: a chain of neighbour messages per original, 16 x 8 in all
  const sim::Config c = test::config(cfg);
  sim::CollectiveSpec s;
  s.op = sim::CollectiveOp::AllToAll;
  s.algorithm = sim::CollectiveAlgorithm::Direct;
  s.bytes = chunk;
  s.chunk_bytes = 0;
  const sim::CollectivePlan plan = sim::plan_collective(c, s);
  const sim::CollectivePlan relayed = sim::relay_through_neighbours(plan, sim::NetTopology(c));
  CHECK(plan.messages.size() == 56u);
  CHECK(relayed.messages.size() == 128u);
}

TEST_CASE("ACE with tight partitions and one FSM per phase: slower, never stuck", "[collective][engines]") {
  // 4 x 4 torus of the test links, hierarchical all-reduce of 256 KiB in 16 KiB chunks: three
  // phases. One FSM per phase and partitions of one chunk force chunks through one at a time.
  Json cfg = engines_system(Json::array({ring("ring", 4)[0], ring("ring", 4)[0]}));
  const auto go = [&](std::uint64_t sram, std::uint32_t fsms) {
    cfg["system"]["ace"]["sram_bytes"] = sram;
    cfg["system"]["ace"]["fsms"] = fsms;
    return run(cfg, "ace", sim::CollectiveOp::AllReduce, sim::CollectiveAlgorithm::Hierarchical, 256 << 10, 16 << 10);
  };
  const auto roomy = go(4 << 20, 16);
  // bandwidth x initial chunk: 16 KiB, 4 KiB and 4 KiB over equal links, terminal as the last:
  // 16 + 4 + 4 + 4 = 28 parts; 28 KiB gives every partition exactly the chunk it must hold
  // (16 KiB for the reduce-scatter, 4 KiB for the all-reduce, 16 KiB for the all-gather) ...
  // except the all-gather, which grows its chunk to 16 KiB in a partition sized for 4: refused.
  CHECK_THROWS_WITH(go(28 << 10, 3), Contains("phase 2") && Contains("less than one chunk's 16384 bytes"));
  // 112 KiB: the reduce-scatter 64 KiB (4 chunks), the all-reduce 16 KiB (4), the all-gather
  // and the terminal partition 16 KiB (1 chunk) each
  const auto tight = go(112 << 10, 3);
  CHECK(tight.cycles > roomy.cycles);
  for (std::uint32_t c = 0; c < 16; ++c) CHECK(tight.memory_write_bytes[c] == 256u << 10);
  CHECK(tight.admission_wait_cycles > roomy.admission_wait_cycles);
  CHECK_THROWS_WITH(go(4 << 20, 2), Contains("system.ace.fsms: 2 FSMs for a collective of 3 phases"));
}

TEST_CASE("collective engines: a config without their parts, or an unknown engine, is a named error", "[collective][engines][bad-input]") {
  Json cfg = engines_system(ring("ring", 3));
  CHECK_THROWS_WITH(run(cfg, "magic", sim::CollectiveOp::AllReduce, sim::CollectiveAlgorithm::Ring, 6 << 10, 0),
                    Contains("engine magic: unknown engine (expected ideal, cores or ace)"));
  cfg["system"].erase("ace");
  CHECK_THROWS_WITH(run(cfg, "ace", sim::CollectiveOp::AllReduce, sim::CollectiveAlgorithm::Ring, 6 << 10, 0),
                    Contains("has no system.ace"));
  cfg["system"].erase("endpoint");
  CHECK_THROWS_WITH(run(cfg, "cores", sim::CollectiveOp::AllReduce, sim::CollectiveAlgorithm::Ring, 6 << 10, 0),
                    Contains("has no system.endpoint"));
  cfg["system"]["endpoint"] = {{"memory_bytes_per_cycle", 32}, {"cores", 0}};
  CHECK_THROWS_WITH(test::config(cfg), Contains("system.endpoint.cores") && Contains("expected 1..4096"));
  cfg["system"]["endpoint"] = {{"memory_bytes_per_cycle", 32}, {"threads", 2}};
  CHECK_THROWS_WITH(test::config(cfg), Contains("threads"));
}

TEST_CASE("collectives issued at different cycles share one network", "[collective][engines]") {
  // The same all-reduce alone, issued 5000 cycles later on an idle network, and twice at once
  const Json cfg = engines_system(ring("ring", 4));
  const sim::Config c = test::config(cfg);
  sim::CollectiveSpec s;
  s.op = sim::CollectiveOp::AllReduce;
  s.algorithm = sim::CollectiveAlgorithm::Ring;
  s.bytes = 64 << 10;
  s.chunk_bytes = 16 << 10;
  for (const char* engine : {"ideal", "cores", "ace"}) {
    INFO(engine);
    const auto alone = sim::run_collectives(c, engine, {{s, 0}});
    const auto later = sim::run_collectives(c, engine, {{s, 5000}});
    CHECK(later.done[0] == alone.done[0] + 5000);  // nothing else in the network: the same time, shifted
    const auto both = sim::run_collectives(c, engine, {{s, 0}, {s, 0}});
    CHECK(std::max(both.done[0], both.done[1]) > alone.done[0]);  // they share the links
    CHECK(std::max(both.done[0], both.done[1]) <= 2 * alone.done[0] + 1000);
    const auto apart = sim::run_collectives(c, engine, {{s, 0}, {s, alone.done[0] + 1}});
    CHECK(apart.done[0] == alone.done[0]);  // the second waits for nothing and delays nothing
    CHECK(apart.done[1] == 2 * alone.done[0] + 1);
  }
}

TEST_CASE("ACE runs an all-to-all beside a hierarchical all-reduce: the all-to-all uses the first phase's FSMs and room", "[collective][engines]") {
  // FIFO: the all-reduce, issued first, goes first (LIFO below)
  Json cfg = engines_system(Json::array({ring("ring", 4)[0], ring("ring", 4)[0]}));
  cfg["system"]["ace"]["admission"] = "fifo";
  const sim::Config c = test::config(cfg);
  sim::CollectiveSpec ar, a2a;
  ar.op = sim::CollectiveOp::AllReduce;
  ar.algorithm = sim::CollectiveAlgorithm::Hierarchical;
  ar.bytes = 256 << 10;
  ar.chunk_bytes = 16 << 10;
  a2a.op = sim::CollectiveOp::AllToAll;
  a2a.algorithm = sim::CollectiveAlgorithm::Direct;
  a2a.bytes = 64 << 10;
  a2a.chunk_bytes = 16 << 10;
  const auto both = sim::run_collectives(c, "ace", {{ar, 0}, {a2a, 0}});
  const auto ar_alone = sim::run_collectives(c, "ace", {{ar, 0}});
  const auto a2a_alone = sim::run_collectives(c, "ace", {{a2a, 0}});
  for (std::uint32_t chip = 0; chip < 16; ++chip) {  // each chunk read and written once
    CHECK(both.totals.memory_read_bytes[chip] == (256u + 64u) << 10);
    CHECK(both.totals.memory_write_bytes[chip] == (256u + 64u) << 10);
  }
  INFO("chunks out of order: " << both.totals.chunks_out_of_order);
  CHECK(both.done[0] >= ar_alone.done[0]);  // they share the links, the FSMs and the room
  CHECK(both.done[1] >= a2a_alone.done[0]);
  // sharing is close to the two one after the other, not free: either order can end a little
  // past their sum (FIFO 35,232 cycles against 34,900 with packets ranked by age on the links)
  CHECK(std::max(both.done[0], both.done[1]) <= (ar_alone.done[0] + a2a_alone.done[0]) * 102 / 100);
  // the all-to-all's chunks (one phase) finish before the all-reduce's chunks ahead of them
  // (four phases): completions out of order across FSMs
  CHECK(both.totals.chunks_out_of_order > 0u);
  CHECK(ar_alone.totals.chunks_out_of_order == 0u);
  // LIFO: the all-to-all, issued last, goes first and is done long before the all-reduce, which
  // finishes later than under FIFO
  cfg["system"]["ace"]["admission"] = "lifo";
  const auto lifo = sim::run_collectives(test::config(cfg), "ace", {{ar, 0}, {a2a, 0}});
  CHECK(lifo.done[1] < both.done[1]);
  CHECK(lifo.done[1] < lifo.done[0]);
  CHECK(lifo.done[0] > both.done[0]);
  CHECK(lifo.done[1] < ar_alone.done[0]);
  for (std::uint32_t chip = 0; chip < 16; ++chip) CHECK(lifo.totals.memory_read_bytes[chip] == (256u + 64u) << 10);
}

TEST_CASE("ACE admits the collective issued last first (LIFO), or the first (FIFO), by hand", "[collective][engines]") {
  // One FSM: a chunk at a time through the ring's one phase. A (4 chunks of 16 KiB) is issued at
  // cycle 0, B (one chunk of 16 KiB) at cycle 1, while A's first chunk holds the FSM. A chunk
  // holds the FSM for P cycles (its TX read and its ring steps); the RX write back, w, overlaps
  // the next chunk. Alone: B takes P + w, A 4P + w, so P = (A - B) / 3.
  Json cfg = engines_system(ring("ring", 4));
  cfg["system"]["ace"]["fsms"] = 1;
  sim::CollectiveSpec a, b;
  a.op = b.op = sim::CollectiveOp::AllReduce;
  a.algorithm = b.algorithm = sim::CollectiveAlgorithm::Ring;
  a.bytes = 64 << 10;
  b.bytes = a.chunk_bytes = b.chunk_bytes = 16 << 10;
  const sim::Config lifo = test::config(cfg);
  const auto a_alone = sim::run_collectives(lifo, "ace", {{a, 0}}).done[0];
  const auto b_alone = sim::run_collectives(lifo, "ace", {{b, 1}}).done[0] - 1;
  REQUIRE((a_alone - b_alone) % 3 == 0);
  const Cycles p = (a_alone - b_alone) / 3;
  CHECK(p > 0);
  // LIFO: B's chunk goes second, after A's first; A's last three wait one P more
  const auto l = sim::run_collectives(lifo, "ace", {{a, 0}, {b, 1}});
  CHECK(l.done[1] == b_alone + p);
  CHECK(l.done[0] == a_alone + p);
  // FIFO: A's four chunks first, B's after them
  cfg["system"]["ace"]["admission"] = "fifo";
  const auto f = sim::run_collectives(test::config(cfg), "ace", {{a, 0}, {b, 1}});
  CHECK(f.done[0] == a_alone);
  CHECK(f.done[1] == a_alone + p);
  // Many collectives issued while others run, one FSM per phase of a hierarchical all-reduce:
  // every chip admits in one order, so they all finish (chips choosing by what each had issued
  // when its FSM freed could each hold a chunk the other's messages never come for).
  Json torus = engines_system(Json::array({ring("ring", 4)[0], ring("ring", 4)[0]}));
  torus["system"]["ace"]["fsms"] = 4;
  sim::CollectiveSpec h = a;
  h.algorithm = sim::CollectiveAlgorithm::Hierarchical;
  std::vector<std::pair<sim::CollectiveSpec, Cycles>> issued;
  for (Cycles i = 0; i < 6; ++i) issued.emplace_back(h, 700 * i);
  const auto many = sim::run_collectives(test::config(torus), "ace", issued);
  for (std::uint32_t chip = 0; chip < 16; ++chip) CHECK(many.totals.memory_read_bytes[chip] == 6u * (64u << 10));
  CHECK(many.done[5] < many.done[0]);  // the last issued overtakes the first
  cfg["system"]["ace"]["admission"] = "oldest";
  CHECK_THROWS_WITH(test::config(cfg), Contains("system.ace.admission") && Contains("lifo"));
}

TEST_CASE("forwarding by packet: a ring step's packets leave as the step before's arrive, by hand", "[collective][engines]") {
  // The one-way ring of 3 above, N = 12 KiB in one chunk: 4 steps of 4 KiB messages (16 packets
  // of 256 bytes each), and every chip's one link carries all 4 of its steps: 16 KiB at 16
  // B/cycle = 1,024 cycles of link time. A step adds alpha = 101 (the link's latency 100, the
  // ideal endpoint's cycle; a packet's time on the 64 B/cycle bus overlaps the link's).
  // By message, each step waits for the whole message before it: 1,024 + 4 x 101 - 1 = 1,427.
  // By packet, a step's packets leave as the step before's arrive: the links stay busy and the
  // latency is paid once: 1,024 + 101 - 1 = 1,124.
  Json cfg = engines_system(ring("unidirectional_ring", 3));
  const auto go = [&](const char* forwarding, const char* engine) {
    cfg["system"]["collective_forwarding"] = forwarding;
    return run(cfg, engine, sim::CollectiveOp::AllReduce, sim::CollectiveAlgorithm::Ring, 12288, 0);
  };
  const auto ideal_msg = go("message", "ideal"), ideal_pkt = go("packet", "ideal");
  CHECK(ideal_msg.cycles == 1427u);
  CHECK(ideal_pkt.cycles == 1124u);
  // ACE by packet: the TX DMA reads the chunk first (384 cycles at 32 B/cycle) and the RX DMA
  // writes it back last (384); the ALU (16 B/cycle, as fast as the link) adds each packet as it
  // comes and delays none of the link's: 384 + 1,124 + 384 = 1,892.
  const auto ace_pkt = go("packet", "ace");
  CHECK(ace_pkt.cycles == 1892u);
  // the same bytes move, and ACE still reads and writes N
  for (std::uint32_t c = 0; c < 3; ++c) {
    CHECK(ideal_pkt.sent_bytes[c] == 16384u);
    CHECK(ace_pkt.memory_read_bytes[c] == 12288u);
    CHECK(ace_pkt.memory_write_bytes[c] == 12288u);
  }
  // a slower ALU (4 B/cycle: 64 cycles a packet) holds the links back: a chip's ALU adds its 2
  // reductions' 32 packets in 2,048 cycles, between the two DMAs (384 each), and each of the 4
  // steps adds at most its latency and one packet's addition to the fill: 2,816 .. 3,476
  cfg["system"]["ace"]["alu_bytes_per_cycle"] = 4;
  const Cycles slow_alu = go("packet", "ace").cycles;
  CHECK(slow_alu >= 384u + 2048u + 384u);
  CHECK(slow_alu <= 384u + 2048u + 384u + 4u * (101u + 64u));
  cfg["system"]["ace"]["alu_bytes_per_cycle"] = 16;
  // the baseline works on whole messages in memory whatever the setting
  CHECK(go("packet", "cores").cycles == go("message", "cores").cycles);
  // an unknown setting is a named error
  cfg["system"]["collective_forwarding"] = "flit";
  CHECK_THROWS_WITH(test::config(cfg), Contains("collective_forwarding") && Contains("expected \"message\" or \"packet\""));
}

TEST_CASE("ACE's SRAM and FSMs: forwarding by packet, gains flatten at 4 MiB and 16 FSMs (the paper's Fig. 9a)", "[collective][engines]") {
  // 8 MiB all-reduce on the 4x4x4 torus (a smaller case of the README's 64 MiB sweep). The
  // paper: 8 MiB with 20 FSMs is at most 6% better than 4 MiB with 16. By message, every ring
  // step on the 500-cycle links waits for a whole 2 KiB message, the five chunks the paper's
  // partition rule leaves the inter-package phases do not keep their links busy, and more SRAM
  // and FSMs still pay (measured 2026-11-29: 106,158 -> 91,792 cycles, 1.16x); by packet they
  // do (94,286 -> 90,780, 1.04x).
  const Json torus = read_json_file(std::string(TESSERA_SOURCE_DIR) + "/configs/ace-torus-64.json");
  const auto go = [&](const char* forwarding, Bytes sram, std::uint32_t fsms) {
    Json cfg = torus;
    cfg["system"]["collective_forwarding"] = forwarding;
    cfg["system"]["ace"]["sram_bytes"] = sram;
    cfg["system"]["ace"]["fsms"] = fsms;
    return double(run(cfg, "ace", sim::CollectiveOp::AllReduce, sim::CollectiveAlgorithm::Hierarchical, 8 << 20, 64 << 10)
                      .cycles);
  };
  const double by_packet = go("packet", 4 << 20, 16) / go("packet", 8 << 20, 20);
  const double by_message = go("message", 4 << 20, 16) / go("message", 8 << 20, 20);
  CHECK(by_packet >= 1.0);
  CHECK(by_packet <= 1.06);
  CHECK(by_message > 1.10);
}
