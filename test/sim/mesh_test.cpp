// Mesh NoC on the test configs: 32 B/cycle links and ports, 256-byte packets (8 cycles per
// stage), link latency 1, router latency 2. One packet over h hops arrives after
// (h + 2) * 8 + 2 + 3h cycles: injection, h links, ejection, each 8 cycles, plus latencies.
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

TEST_CASE("mesh: hop latency of a single packet", "[mesh]") {
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 1, 256))) == 3 * 8 + 2 + 3);
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 3, 256))) == 5 * 8 + 2 + 9);
  // 3x3: corner to corner is 2 hops along the row then 2 down the column
  CHECK(test::total(test::run(test::mesh_config(3, 3), one_message(0, 8, 256))) == 6 * 8 + 2 + 12);
  // a torus takes the wrap-around link: 0 -> 3 on a 1x4 ring is one hop west
  CHECK(test::total(test::run(test::mesh_config(1, 4, 1024, true), one_message(0, 3, 256))) == 3 * 8 + 2 + 3);
}

TEST_CASE("mesh: packets of one message pipeline behind each other", "[mesh]") {
  // 4 packets over 3 hops: the last leaves 3 * 8 cycles after the first
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 3, 1024))) == 51 + 3 * 8);
  // a partial last packet is shorter: 1024 + 64 bytes -> a 5th packet of 2 cycles per stage
  CHECK(test::total(test::run(test::mesh_config(1, 4), one_message(0, 3, 1088))) == 75 + 2);
}

TEST_CASE("mesh: two streams through one link take longer than one", "[mesh]") {
  // X: core 0 -> 2 (links 0>1, 1>2) at cycle 0; Y: core 1 -> 3 (links 1>2, 2>3) at cycle 1.
  // Each 4 packets. X alone arrives at 40 + 3*8 = 64. Y finds link 1>2 reserved by X until 53
  // (X's 4th packet crosses it at 45..53), crosses it at 53..85, then link 2>3 and ejection:
  // last packet 77..85 on 1>2, 88..96 on 2>3, 99..107 ejecting.
  ProgramBuilder p;
  p.alloc(0, "buf", 1024).send(0, 2, 1024);
  p.alloc(1, "buf", 1024).delay(1, 1).send(1, 3, 1024);
  p.alloc(2, "buf", 1024).recv(2, 0, 1024);
  p.alloc(3, "buf", 1024).recv(3, 1, 1024);
  Json r = test::run(test::mesh_config(1, 4), p.json());
  CHECK(test::finish(r, 2) == 64);
  CHECK(test::finish(r, 3) == 107);
  // alone, Y would take 1 + 64
  ProgramBuilder q;
  q.alloc(1, "buf", 1024).delay(1, 1).send(1, 3, 1024);
  q.alloc(3, "buf", 1024).recv(3, 1, 1024);
  CHECK(test::total(test::run(test::mesh_config(1, 4), q.json())) == 65);
  for (const auto& l : r["links"])
    if (l["name"] == "chip0.r0c1.E") CHECK(l["bytes"] == 2048);
}

TEST_CASE("mesh: a full input buffer holds the upstream link (back-pressure)", "[mesh]") {
  // Y: core 2 -> 3, 8 packets at cycle 0, owns link 2>3 from 10 to 74.
  // X: core 0 -> 3, 4 packets at cycle 1, must queue behind Y in link 2>3's input buffer.
  // Z: core 1 -> 2, 1 packet at cycle 2, needs link 1>2, which X also uses.
  auto z_arrival = [](std::uint64_t buffer_bytes) {
    ProgramBuilder p;
    p.alloc(2, "buf", 2048).send(2, 3, 2048).recv(2, 1, 256);
    p.alloc(0, "buf", 1024).delay(0, 1).send(0, 3, 1024);
    p.alloc(1, "buf", 256).delay(1, 2).send(1, 2, 256);
    p.alloc(3, "buf", 2048).recv(3, 2, 2048).recv(3, 0, 1024);
    return test::finish(test::run(test::mesh_config(1, 4, buffer_bytes), p.json()), 2);
  };
  // 4-packet buffers: X's packets enter 2>3's buffer as Y's leave it (credits at 42, 50, 58,
  // 66), so X holds link 1>2 until 74; Z crosses it at 74..82 and ejects at 85..93.
  CHECK(z_arrival(1024) == 93);
  // 1-packet buffers: a packet may leave a stage only when the one slot downstream is free.
  // Y itself slows to one packet per 11 cycles on 2>3 (starts 10, 21, ..., 87). X's packets
  // then cross 1>2 at 87, 98, 109, 120 (each waiting for the slot behind 2>3), so link 1>2's
  // input buffer frees only at 120: Z injects at 120..128, crosses 1>2 at 130..138 and ejects
  // at 141..149.
  CHECK(z_arrival(256) == 149);
}
