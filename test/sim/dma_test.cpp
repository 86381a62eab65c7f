// DMA engines on the 8-core exchange test chip (test/support.h): ports 4 B/cycle, exchange
// latency 30, one 8 B/cycle off-chip channel with latency 100, DMA issue 1 cycle (the default).
// An asynchronous transfer starts when it is issued and costs the core its issue cycle; compute
// overlaps it; `wait` ends when it is done. So compute C after a transfer of T: max(1 + C, T).
#include <catch2/catch.hpp>

#include "test/support.h"

using namespace tessera;
using test::ProgramBuilder;

namespace {
Json async(const std::string& op, std::uint32_t peer, std::uint64_t bytes, const std::string& handle) {
  return {{"op", op}, {"peer", peer}, {"buffer", "buf"}, {"bytes", bytes}, {"handle", handle}};
}
Json wait_for(const std::string& handle) { return {{"op", "wait"}, {"handle", handle}}; }

// Core 0 sends 1 KiB to core 1 (256 cycles on the ports, +30 to arrive) and computes `c` cycles.
std::uint64_t sender_finish(std::uint64_t c, bool overlap) {
  ProgramBuilder p;
  p.alloc(0, "buf", 4096);
  if (overlap) p.core(0).push_back(async("send", 1, 1024, "s"));
  else p.send(0, 1, 1024);
  p.delay(0, c);
  if (overlap) p.core(0).push_back(wait_for("s"));
  p.alloc(1, "buf", 4096).recv(1, 0, 1024);
  return test::finish(test::run(test::exchange_config(), p.json()), 0);
}
}  // namespace

TEST_CASE("compute overlapped with a transfer takes max(C, T) plus the issue cost, not C + T", "[dma]") {
  // T = 256 (the send port), issue = 1
  CHECK(sender_finish(100, false) == 256 + 100);
  CHECK(sender_finish(100, true) == 256);      // the transfer is longer: max(1 + 100, 256)
  CHECK(sender_finish(400, true) == 1 + 400);  // the compute is longer
  CHECK(sender_finish(400, false) == 256 + 400);
}

TEST_CASE("an asynchronous receive and load overlap compute too", "[dma]") {
  ProgramBuilder p;
  p.alloc(0, "buf", 1024).send(0, 1, 1024);  // arrives at 256 + 30 = 286
  p.alloc(1, "buf", 4096);
  p.core(1).push_back(async("recv", 0, 1024, "r"));
  p.delay(1, 500).core(1).push_back(wait_for("r"));
  // core 2: load 800 B (100 cycles on the channel + 100 latency) while computing 150
  p.tensors.push_back({{"name", "t"}, {"bytes", 800}});
  p.alloc(2, "buf", 1200);
  p.core(2).push_back({{"op", "load"}, {"tensor", "t"}, {"buffer", "buf"}, {"bytes", 800}, {"handle", "l"}});
  p.delay(2, 150).core(2).push_back(wait_for("l"));
  // core 3: the same receive pattern, but waits at once: the blocking time
  p.alloc(4, "buf", 64).send(4, 3, 64);  // 16 + 30 = 46
  p.alloc(3, "buf", 64);
  p.core(3).push_back(async("recv", 4, 64, "r"));
  p.core(3).push_back(wait_for("r"));
  const Json r = test::run(test::exchange_config(), p.json());
  CHECK(test::finish(r, 1) == 1 + 500);
  CHECK(test::finish(r, 2) == 200);  // max(1 + 150, 100 + 100)
  CHECK(test::finish(r, 3) == 46);
  for (const auto& c : r["cores"])
    if (c["core"] == 1) {
      CHECK(c["cycles"]["compute"] == 500);
      CHECK(c["cycles"]["recv"] == 1);  // the issue; the wait found it done
    }
}

TEST_CASE("several transfers in flight on one core leave its port in issue order", "[dma]") {
  // two sends of 400 B (100 cycles each) issued at 0 and 1: the port sends them one after the
  // other, 0..100 and 100..200; both are waited for after 10 cycles of compute
  ProgramBuilder p;
  p.alloc(0, "buf", 400);
  p.core(0).push_back(async("send", 1, 400, "a"));
  p.core(0).push_back(async("send", 2, 400, "b"));
  p.delay(0, 10);
  p.core(0).push_back(wait_for("a"));
  p.core(0).push_back(wait_for("b"));
  p.alloc(1, "buf", 400).recv(1, 0, 400);
  p.alloc(2, "buf", 400).recv(2, 0, 400);
  const Json r = test::run(test::exchange_config(), p.json());
  CHECK(test::finish(r, 1) == 100 + 30);
  CHECK(test::finish(r, 2) == 200 + 30);
  CHECK(test::finish(r, 0) == 200);
}

TEST_CASE("DMA handles: misuse is a named error before simulation", "[dma][bad-input]") {
  auto fails = [](const Json& items, const std::string& what) {
    ProgramBuilder p;
    p.alloc(0, "buf", 64);
    for (const auto& it : items) p.core(0).push_back(it);
    p.alloc(1, "buf", 64).recv(1, 0, 64);
    CHECK_THROWS_WITH(test::run(test::exchange_config(), p.json()), Catch::Contains(what));
  };
  fails(Json::array({async("send", 1, 64, "h")}), "DMA handle 'h' is started here and never waited for");
  fails(Json::array({async("send", 1, 64, "h"), wait_for("h"), wait_for("h")}),
        "no transfer is in flight on handle 'h'");
  fails(Json::array({async("send", 1, 32, "h"), async("send", 1, 32, "h"), wait_for("h")}),
        "handle 'h' is still in use");
  fails(Json::array({{{"op", "repeat"}, {"count", 2}, {"body", Json::array({async("send", 1, 32, "h")})}},
                     wait_for("h")}),
        "a repeat body must wait for every DMA handle it starts");
}
