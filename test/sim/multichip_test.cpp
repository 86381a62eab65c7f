// Two chips of 8 exchange cores (test/support.h) joined by one link each way:
// 8 B/cycle, latency 50, 256-byte packets, 4-packet buffers.
#include <catch2/catch.hpp>

#include "test/support.h"

using namespace tessera;
using test::ProgramBuilder;

namespace {
Json two_chips() {
  Json c = test::exchange_config(8);
  c["system"] = {{"chips", 2}, {"topology", "ring"}, {"link_bytes_per_cycle", 8},
                 {"link_latency_cycles", 50}, {"sync_latency_cycles", 1000},
                 {"packet_bytes", 256}, {"buffer_bytes", 1024}};
  return c;
}
// `pairs` cores send 1 KiB each: core i -> core i + offset.
Json pairs_program(std::uint32_t pairs, std::uint32_t offset) {
  ProgramBuilder p;
  for (std::uint32_t i = 0; i < pairs; ++i) {
    p.alloc(i, "buf", 1024).send(i, i + offset, 1024);
    p.alloc(i + offset, "buf", 1024).recv(i + offset, i, 1024);
  }
  return p.json();
}
}  // namespace

TEST_CASE("a single message crossing chips", "[multichip]") {
  // packets of 256 B: send port 64 cycles (+30 latency), link 32 cycles (+50), recv port 64.
  // First packet: 0..64, 94..126, 176..240; packets follow every 64 cycles on the ports, so
  // the 4th arrives at 240 + 3*64 = 432. On chip the same message takes 256 + 30.
  CHECK(test::total(test::run(two_chips(), pairs_program(1, 8))) == 432);
  CHECK(test::total(test::run(two_chips(), pairs_program(1, 4))) == 286);
}

TEST_CASE("cross-chip traffic is slower than on-chip traffic by the link ratio", "[multichip]") {
  // 8 senders at 4 B/cycle each offer 32 B/cycle; the link carries 8 B/cycle: 4x fewer bytes
  // per cycle. On chip all 8 pairs run in parallel: 286 cycles.
  const std::uint64_t on_chip = test::total(test::run(two_chips(), pairs_program(4, 4)));
  CHECK(on_chip == 286);
  const Json cross = test::run(two_chips(), pairs_program(8, 8));
  // The link must carry 8 KiB at 8 B/cycle = 1024 busy cycles; with the first packet's way to
  // the link (64 + 30) and the last one's way from it (50 + 64) the ideal is 1232 cycles.
  // Input-buffer credits are returned in reservation order (docs/hardware-model.md), which
  // costs the interleaved senders some of the link's idle gaps: tessera gives 1450.
  const std::uint64_t t = test::total(cross);
  CHECK(t == 1450);
  CHECK(t >= 1232);
  for (const auto& l : cross["links"])
    if (l["name"] == "link.chip0->chip1") {
      CHECK(l["bytes"] == 8 * 1024);
      CHECK(l["busy_cycles"] == 1024);
    }
  // per sender, cross-chip is at least the link ratio (32 offered / 8 carried = 4x) slower
  CHECK(double(t) / on_chip >= 4.0);
}

TEST_CASE("a barrier spanning chips costs the system sync latency", "[multichip]") {
  ProgramBuilder p;
  p.groups["local"] = {0, 1};
  p.alloc(0, "buf", 8).sync(0).sync(0, "local");
  p.alloc(1, "buf", 8).sync(1).sync(1, "local");
  p.alloc(9, "buf", 8).sync(9);
  Json r = test::run(two_chips(), p.json());
  CHECK(test::finish(r, 9) == 1000);
  CHECK(test::finish(r, 0) == 1000 + 100);
}

TEST_CASE("shipped V-IPU configs load and scale the core space", "[multichip]") {
  for (int chips : {2, 4}) {
    sim::Config c = sim::load_config(std::string(TESSERA_SOURCE_DIR) + "/configs/vipu-" + std::to_string(chips) + ".json");
    CHECK(c.total_cores() == 1472u * chips);
    // 160 GB/s at 1.33 GHz
    CHECK(c.system.link_bytes_per_cycle * c.clock_ghz == Approx(160).epsilon(0.001));
  }
}
