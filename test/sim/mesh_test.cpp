// Mesh NoC at packet level on the test configs: 32 B/cycle links and ports, 256-byte packets
// (D = 8 cycles per channel), link latency 1, router latency 2. Virtual cut-through: the head
// moves on after each channel's latency (injection: router 2; link: link + router = 3), so one
// packet over h hops arrives after D + 2 + 3h cycles: the serialisation is paid once.
#include <catch2/catch.hpp>

#include "test/support.h"

using namespace tessera;
using test::ProgramBuilder;

namespace {
Json one_message(std::uint32_t src, std::uint32_t dst, std::uint64_t bytes) {
  ProgramBuilder p;
  p.alloc(src, "buf", bytes).send(src, dst, bytes);
  p.alloc(dst, "buf", bytes).recv(dst, src, bytes);
  return p.json();
}
}  // namespace

TEST_CASE("mesh: hop latency of a single packet (cut-through)", "[mesh]") {
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 1, 256))) == 8 + 2 + 3);
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 3, 256))) == 8 + 2 + 9);
  // 3x3: corner to corner is 2 hops along the row then 2 down the column
  CHECK(test::total(test::run(test::mesh_config(3, 3), one_message(0, 8, 256))) == 8 + 2 + 12);
  // a torus takes the wrap-around link: 0 -> 3 on a 1x4 ring is one hop west
  CHECK(test::total(test::run(test::mesh_config(1, 4, 1024, true), one_message(0, 3, 256))) == 8 + 2 + 3);
}

TEST_CASE("mesh: corner to corner on mesh-10x12 pays the serialisation once", "[mesh]") {
  // 20 hops, D = 256 / 32 = 8: 8 + 2 + 20 * 3 = 70 (store-and-forward would be 22 * 8 + 2 + 60 = 238)
  const Json cfg = read_json_file(std::string(TESSERA_SOURCE_DIR) + "/configs/mesh-10x12.json");
  CHECK(test::total(test::run(cfg, one_message(0, 119, 256))) == 70);
}

TEST_CASE("mesh: a packet shorter than a cycle of the link takes one cycle per channel, no more", "[mesh]") {
  // 16 or 32 bytes on 32 B/cycle channels: D = 1 (a channel carries at most one packet a cycle),
  // so over 3 hops 1 + 2 + 9 = 12 for both. Fewer bytes never arrive later (before the fix, the
  // head of the 16-byte packet waited for a tail that had left half a cycle earlier: 16 cycles).
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 3, 32))) == 12);
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 3, 16))) == 12);
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 3, 1))) == 12);
  // Links twice as fast as the 32 B/cycle interface: still D = 1 per channel, so still 12 (the
  // head took the next link only once a tail it had already passed could have been streamed).
  Json fast = test::mesh_config(1, 4);
  fast["chip"]["mesh"]["link_bytes_per_cycle"] = 64;
  CHECK(test::total(test::run(fast, one_message(0, 3, 16))) == 12);
  CHECK(test::total(test::run(fast, one_message(0, 3, 32))) == 12);
}

TEST_CASE("mesh: packets of one message pipeline behind each other", "[mesh]") {
  // 4 packets over 3 hops: the last leaves 3 * 8 cycles after the first
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 3, 1024))) == 19 + 3 * 8);
  // a partial last packet is shorter: 1024 + 64 bytes -> a 5th packet of 2 cycles per channel
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 3, 1088))) == 43 + 2);
}

TEST_CASE("mesh: two streams through one link take turns, oldest packet first", "[mesh]") {
  // X: core 0 -> 2 (links 0>1, 1>2) at cycle 0; Y: core 1 -> 3 (links 1>2, 2>3) at cycle 1; 4
  // packets each. Alone, X arrives at 8 + 2 + 6 + 24 = 40 and Y at 1 + 40 = 41. A source puts
  // up its next packet when the last one takes the injection port: X0, X1 at 0, Y0, Y1 at 1,
  // X2 at 8, Y2 at 9, X3 at 16, Y3 at 17 (ages in that order). Their packets reach link 1>2 at
  // X: 5, 13, 21, 29 and Y: 3, 11, 19, 27; each time the link frees it serves the oldest packet
  // waiting: Y0 3..11 (alone), X0 11..19, X1 19..27, Y1 27..35, X2 35..43, Y2 43..51, X3 51..59,
  // Y3 59..67. X's last packet ejects at 54..62; Y's crosses 2>3 at 62..70 and ejects at 65..73.
  // (Ranking by the cycle a packet reached the link instead would alternate Y, X, Y, X.)
  ProgramBuilder p;
  p.alloc(0, "buf", 1024).send(0, 2, 1024);
  p.alloc(1, "buf", 1024).delay(1, 1).send(1, 3, 1024);
  p.alloc(2, "buf", 1024).recv(2, 0, 1024);
  p.alloc(3, "buf", 1024).recv(3, 1, 1024);
  Json r = test::run(test::mesh_config(1, 4), p.json());
  CHECK(test::finish(r, 2) == 62);
  CHECK(test::finish(r, 3) == 73);
  ProgramBuilder q;
  q.alloc(1, "buf", 1024).delay(1, 1).send(1, 3, 1024);
  q.alloc(3, "buf", 1024).recv(3, 1, 1024);
  CHECK(test::total(test::run(test::mesh_config(1, 4), q.json())) == 41);
  for (const auto& l : r["links"])
    if (l["name"] == "chip0.r0c1.E") {
      CHECK(l["bytes"] == 2048);
      CHECK(l["busy_cycles"] == 64);  // busy without a gap from 3 to 67
    }
}

TEST_CASE("mesh: a full input buffer holds the upstream channel (credits)", "[mesh]") {
  // Core 0 -> 1 on a 1x2 mesh, 4 packets. A packet's space in a buffer comes back when its tail
  // leaves it. With 4-packet buffers the packets stream: the last arrives at 13 + 3 * 8 = 37.
  // With 1-packet buffers the credit loop shows: packet 0 injects 0..8, crosses the link 2..10,
  // ejects 5..13; packet 1 may inject only when packet 0 has left the router's input buffer
  // (10): 10..18; it reaches the link at 12 but the buffer behind the link is free only at 13
  // (packet 0's ejection ends): 13..21, ejects 16..24. Each packet then takes 11 cycles, not 8:
  // 13 + 3 * 11 = 46.
  auto arrival = [](std::uint64_t buffer_bytes) {
    return test::total(test::run(test::mesh_config(1, 2, buffer_bytes), one_message(0, 1, 1024)));
  };
  CHECK(arrival(1024) == 37);
  CHECK(arrival(256) == 46);
  CHECK(arrival(65536) == 37);  // more buffer never hurts
}

TEST_CASE("mesh: a slow network interface does not hold a fast link (1x4, two streams)", "[mesh]") {
  // NI 8 B/cycle, links 32 B/cycle, 4-packet buffers; streams 0 -> 2 and 1 -> 3 of 4 KiB
  // (16 packets). Injection takes 32 cycles a packet, the links 8: a packet takes a link only
  // when it can stream at the link's rate, so each stream uses link 1>2 a quarter of the time
  // and the two together cost almost nothing. Alone: packet i injects at 32i..32i+32 and ejects
  // at 32i+32..32i+64 (the link carries it just in time), the last ends at 15 * 32 + 64 = 544.
  Json cfg = test::mesh_config(1, 4);
  cfg["chip"]["mesh"]["ni_bytes_per_cycle"] = 8;
  auto stream = [](ProgramBuilder& p, std::uint32_t from, std::uint32_t to) {
    p.alloc(from, "buf", 4096).send(from, to, 4096);
    p.alloc(to, "buf", 4096).recv(to, from, 4096);
  };
  ProgramBuilder a, b, both;
  stream(a, 0, 2);
  stream(b, 1, 3);
  stream(both, 0, 2);
  stream(both, 1, 3);
  CHECK(test::total(test::run(cfg, a.json())) == 544);
  CHECK(test::total(test::run(cfg, b.json())) == 544);
  const Json r = test::run(cfg, both.json());
  // together they finish at 549 and 544: within 5% of alone, and within 5% of the 568 cycles
  // the same streams took alone under store-and-forward (538..596)
  CHECK(test::finish(r, 2) == 549);
  CHECK(test::finish(r, 3) == 544);
  for (std::uint32_t core : {2u, 3u}) {
    CHECK(test::finish(r, core) >= 568 * 95 / 100);
    CHECK(test::finish(r, core) <= 568 * 105 / 100);
  }
}

TEST_CASE("mesh: the flit level runs programs with the same zero-load timing", "[mesh]") {
  // 256-byte packets are 8 flits of 32 bytes: the same D = 8, so the same hand formula
  Json flit = test::mesh_config(1, 4);
  flit["chip"]["mesh"]["model"] = "flit";
  CHECK(test::total(test::run(flit, one_message(0, 3, 256))) == 8 + 2 + 9);
  CHECK(test::total(test::run(flit, one_message(0, 3, 1024))) == 19 + 3 * 8);
  Json flit3 = test::mesh_config(3, 3);
  flit3["chip"]["mesh"]["model"] = "flit";
  CHECK(test::total(test::run(flit3, one_message(0, 8, 256))) == 8 + 2 + 12);
}
