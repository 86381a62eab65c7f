// IPU-style exchange, barriers and off-chip memory on the 8-core test chip (test/support.h):
// ports 4 B/cycle, exchange latency 30, barrier 100, one 8 B/cycle channel with latency 100.
#include <catch2/catch.hpp>

#include "test/support.h"

using namespace tessera;
using test::ProgramBuilder;

TEST_CASE("ring shift: bytes/bandwidth + latency per step, plus the barrier", "[exchange]") {
  const std::uint32_t n = 6;
  const std::uint64_t bytes = 1024, steps = 5;
  ProgramBuilder p;
  for (std::uint32_t c = 0; c < n; ++c) {
    p.alloc(c, "buf", bytes);
    p.core(c).push_back({{"op", "repeat"}, {"count", steps}, {"body", Json::array({
        {{"op", "send"}, {"peer", (c + 1) % n}, {"buffer", "buf"}},
        {{"op", "recv"}, {"peer", (c + n - 1) % n}, {"buffer", "buf"}},
        {{"op", "sync"}}})}});
  }
  Json r = test::run(test::exchange_config(), p.json());
  // each step: 1024/4 = 256 cycles on the ports, 30 latency, 100 barrier
  CHECK(test::total(r) == steps * (256 + 30 + 100));
  CHECK(r["messages"] == n * steps);
  CHECK(r["barriers"] == steps);
  for (const auto& c : r["cores"]) {
    CHECK(c["cycles"]["send"] == steps * 256);
    CHECK(c["cycles"]["recv"] == steps * 30);
    CHECK(c["cycles"]["sync"] == steps * 100);
  }
  for (const auto& l : r["links"])
    if (l["name"] == "chip0.core0.send") CHECK(l["bytes"] == steps * bytes);
}

TEST_CASE("two senders into one receiver take twice as long as one", "[exchange]") {
  auto run_with = [](int senders) {
    ProgramBuilder p;
    p.alloc(0, "buf", 2048);
    for (int s = 1; s <= senders; ++s) {
      p.alloc(s, "buf", 2048).send(s, 0, 2048);
      p.recv(0, s, 2048);
    }
    return test::total(test::run(test::exchange_config(), p.json()));
  };
  CHECK(run_with(1) == 512 + 30);
  CHECK(run_with(2) == 2 * 512 + 30);  // the receive port serves one sender at a time
  CHECK(run_with(3) == 3 * 512 + 30);
}

TEST_CASE("one sender fanning out shares its send port", "[exchange]") {
  ProgramBuilder p;
  p.alloc(0, "buf", 400).send(0, 1, 400).send(0, 2, 400);
  p.alloc(1, "buf", 400).recv(1, 0, 400);
  p.alloc(2, "buf", 400).recv(2, 0, 400);
  Json r = test::run(test::exchange_config(), p.json());
  CHECK(test::finish(r, 1) == 100 + 30);
  CHECK(test::finish(r, 2) == 200 + 30);  // the second message waits for the port
  CHECK(test::finish(r, 0) == 200);       // the sender is done when its port has sent
}

TEST_CASE("sends of one cycle take the receiver's port in source-core order", "[exchange]") {
  // Cores 1-3 reach a barrier in different orders (one of them 50 cycles late), then each sends
  // 16 bytes (4 cycles) to core 0. Released together at 50 + 100, they are booked by core id,
  // whatever order the kernel resumes them in: core 1 done at 154, core 2 at 158, core 3 at 162.
  for (std::uint32_t late : {1u, 3u}) {
    INFO("late core " << late);
    ProgramBuilder p;
    p.alloc(0, "buf", 512).sync(0);
    for (std::uint32_t c = 1; c <= 3; ++c) {
      p.alloc(c, "buf", 512);
      if (c == late) p.delay(c, 50);
      p.sync(c).send(c, 0, 16);
    }
    for (std::uint32_t c : {3u, 2u, 1u}) p.recv(0, c, 16);
    const Json r = test::run(test::exchange_config(4), p.json());
    CHECK(test::finish(r, 1) == 154);
    CHECK(test::finish(r, 2) == 158);
    CHECK(test::finish(r, 3) == 162);
    CHECK(test::finish(r, 0) == 162 + 30);
  }
}

TEST_CASE("a recv posted after the message arrived does not wait", "[exchange]") {
  ProgramBuilder p;
  p.alloc(0, "buf", 64).send(0, 1, 64);
  p.alloc(1, "buf", 4000).delay(1, 500).recv(1, 0, 64);
  Json r = test::run(test::exchange_config(), p.json());
  CHECK(test::finish(r, 1) == 500);
}

TEST_CASE("barrier releases every member latency cycles after the last arrival", "[sync]") {
  ProgramBuilder p;
  p.groups["pair"] = {2, 3};
  for (std::uint32_t c = 0; c < 4; ++c) p.alloc(c, "buf", 1000);
  p.delay(0, 40).sync(0).delay(1, 70).sync(1).delay(2, 10).sync(2).delay(3, 5).sync(3);
  p.sync(2, "pair").sync(3, "pair");
  Json r = test::run(test::exchange_config(), p.json());
  CHECK(test::finish(r, 0) == 70 + 100);
  CHECK(test::finish(r, 1) == 70 + 100);
  CHECK(test::finish(r, 2) == 70 + 100 + 100);  // then the 2-core group barrier
  CHECK(r["barriers"] == 2);
}

TEST_CASE("off-chip bandwidth is shared by the cores of a chip", "[memory]") {
  auto prog = [](int cores) {
    ProgramBuilder p;
    for (int c = 0; c < cores; ++c) {
      std::string t = "t" + std::to_string(c);
      p.tensors.push_back({{"name", t}, {"bytes", 8000}});
      p.alloc(c, "buf", 8000);
      p.core(c).push_back({{"op", "load"}, {"tensor", t}, {"buffer", "buf"}});
    }
    return p.json();
  };
  // one core: 8000 / 8 = 1000 cycles + 100 latency
  CHECK(test::total(test::run(test::exchange_config(), prog(1))) == 1100);
  // two cores at once: the channel serves them one after the other
  Json r = test::run(test::exchange_config(), prog(2));
  CHECK(test::total(r) == 2100);
  CHECK(r["offchip"][0]["bytes_read"] == 16000);
  // two channels: each request is spread over both, so one core alone takes 500 + 100
  Json two = test::exchange_config();
  two["chip"]["offchip"]["channels"] = 2;
  CHECK(test::total(test::run(two, prog(1))) == 600);
  CHECK(test::total(test::run(two, prog(2))) == 1100);
}

TEST_CASE("store counts written bytes", "[memory]") {
  ProgramBuilder p;
  p.tensors.push_back({{"name", "out"}, {"bytes", 4096}});
  p.alloc(0, "buf", 4096);
  p.core(0).push_back({{"op", "store"}, {"tensor", "out"}, {"buffer", "buf"}, {"bytes", 800}});
  Json r = test::run(test::exchange_config(), p.json());
  CHECK(test::total(r) == 100 + 100);
  CHECK(r["offchip"][0]["bytes_written"] == 800);
}

TEST_CASE("compute items take their modelled cycles inside a program", "[exchange]") {
  ProgramBuilder p;
  p.alloc(0, "A", 16 * 64 * 2).alloc(0, "B", 64 * 32 * 2).alloc(0, "C", 17 * 32 * 2);
  p.core(0).push_back({{"op", "compute"}, {"kind", "matmul"}, {"m", 17}, {"k", 64}, {"n", 32},
                       {"inputs", {"A", "B"}}, {"output", "C"}});
  // A is too small for 17 rows: the program is rejected, naming the buffer
  CHECK_THROWS_WITH(test::run(test::exchange_config(), p.json()),
                    Catch::Contains("input A buffer 'A' holds 2048 bytes but the operation needs 2176"));
  p = ProgramBuilder();
  p.alloc(0, "A", 17 * 64 * 2).alloc(0, "B", 64 * 32 * 2).alloc(0, "C", 17 * 32 * 2);
  p.core(0).push_back({{"op", "compute"}, {"kind", "matmul"}, {"m", 17}, {"k", 64}, {"n", 32},
                       {"inputs", {"A", "B"}}, {"output", "C"}});
  Json r = test::run(test::exchange_config(), p.json());
  CHECK(test::total(r) == 1102);
  CHECK(r["cores"][0]["peak_scratchpad_bytes"] == 17 * 64 * 2 + 64 * 32 * 2 + 17 * 32 * 2);
}

TEST_CASE("same inputs give bit-identical results", "[determinism]") {
  ProgramBuilder p;
  for (std::uint32_t c = 0; c < 8; ++c) p.alloc(c, "buf", 3000);
  for (std::uint32_t c = 0; c < 8; ++c)
    for (std::uint32_t d = 0; d < 8; ++d)
      if (c != d) p.send(c, d, 100 + 37 * c + 11 * d);
  for (std::uint32_t c = 0; c < 8; ++c)
    for (std::uint32_t d = 0; d < 8; ++d)
      if (c != d) p.recv(d, c, 100 + 37 * c + 11 * d);
  const Json a = test::run(test::exchange_config(), p.json());
  const Json b = test::run(test::exchange_config(), p.json());
  CHECK(a.dump() == b.dump());
  CHECK(test::total(a) > 0);
}
