// Fast-forward (sim/system/fast_forward.h): stretches between global barriers that repeat from
// an idle state are replayed, with the same results as simulating them, worked out by hand on
// the exchange test chip (test/support.h: ports 4 B/cycle, latency 30, barrier 100, a copy of
// 8n elements is n cycles) and held field for field to the full simulation.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "test/support.h"

using namespace tessera;
using test::ProgramBuilder;

namespace {

Json simulate(const Json& cfg_json, const Json& prog_json, bool fast_forward) {
  sim::Config cfg = test::config(cfg_json);
  sim::Program prog = sim::parse_program(prog_json, "test program", cfg);
  sim::SimOptions opt;
  opt.fast_forward = fast_forward;
  return sim::simulate(cfg, prog, opt).results;
}

// Everything but the fast-forward counts.
Json without_counts(Json r) {
  r.erase("fast_forward");
  return r;
}

// Stretch 0: every core 10 cycles, sync. Then `layers` stretches: core 0 sends 400 B to core 1
// and to core 2 (100 cycles each on its port), core 1 receives and computes 20 cycles, core 2
// receives and computes 5; sync. Then core 0 computes 7 cycles. Each layer's items carry its
// own tag ("layer<k>"), and its sends read a buffer of its own.
Json layers_program(int layers, std::uint64_t last_layer_bytes = 400) {
  ProgramBuilder p;
  Json tags = Json::array();
  for (std::uint32_t c = 0; c < 3; ++c) p.alloc(c, "buf", 4096).delay(c, 10).sync(c);
  for (int k = 0; k < layers; ++k) {
    tags.push_back({{"op", fmt::format("layer{}", k + 1)}, {"phase", "main"}});
    const std::uint64_t bytes = k + 1 == layers ? last_layer_bytes : 400;
    const std::string b = fmt::format("w{}", k);
    std::size_t from[3];
    for (std::uint32_t c = 0; c < 3; ++c) from[c] = p.core(c).size();
    p.alloc(0, b, 4096).send(0, 1, bytes, b).send(0, 2, bytes, b);
    p.recv(1, 0, bytes).delay(1, 20);
    p.recv(2, 0, bytes).delay(2, 5);
    for (std::uint32_t c = 0; c < 3; ++c) {
      Json& items = p.core(c);
      for (std::size_t i = from[c]; i < items.size(); ++i)
        if (items[i]["op"] != "alloc") items[i]["tag"] = k;
      p.sync(c);
    }
  }
  p.delay(0, 7);
  Json j = p.json();
  j["tags"] = tags;
  return j;
}

std::uint64_t busy(const Json& r, std::uint32_t core, const char* activity) {
  for (const auto& c : r["cores"])
    if (c["core"] == core) return c["cycles"][activity].get<std::uint64_t>();
  return ~0ull;
}

const Json& op_row(const Json& r, const std::string& name) {
  for (const auto& o : r["operators"])
    if (o["name"] == name) return o;
  FAIL("no operator " << name);
  return r;
}

}  // namespace

TEST_CASE("fast-forward: three identical layers, two replayed, timed as by hand", "[fast_forward]") {
  const Json cfg = test::exchange_config(3);
  const Json prog = layers_program(3);
  const Json r = simulate(cfg, prog, true);
  // stretch 0 ends at 10 + 100. A layer: core 0's sends end at 100 and 200 (one send port);
  // core 1 has its message at 100 + 30 and computes to 150; core 2 at 200 + 30, computes to
  // 235; the barrier releases at 335. The last 7 cycles of core 0 end the program.
  CHECK(test::total(r) == 110 + 3 * 335 + 7);
  REQUIRE(r.contains("fast_forward"));
  CHECK(r["fast_forward"]["stretches"] == 4);
  CHECK(r["fast_forward"]["repeating"] == 3);
  CHECK(r["fast_forward"]["recorded"] == 1);
  CHECK(r["fast_forward"]["replayed"] == 2);
  // per core: sends 200 a layer on core 0; receives 130 and 230; syncs 100 + 135, 185, 100 a layer
  CHECK(busy(r, 0, "send") == 3 * 200);
  CHECK(busy(r, 1, "recv") == 3 * 130);
  CHECK(busy(r, 2, "recv") == 3 * 230);
  CHECK(busy(r, 0, "sync") == 100 + 3 * 135);
  CHECK(busy(r, 1, "sync") == 100 + 3 * 185);
  CHECK(busy(r, 2, "sync") == 100 + 3 * 100);
  CHECK(busy(r, 0, "compute") == 10 + 7);
  CHECK(busy(r, 1, "compute") == 10 + 3 * 20);
  CHECK(r["messages"] == 6);
  CHECK(r["barriers"] == 4);
  CHECK(r["work_items"] == 3 * 2 + 3 * (2 + 2 + 2 + 3) + 1);  // delays and syncs, sends, receives
  for (const auto& l : r["links"])
    if (l["name"] == "chip0.core0.send") CHECK(l["bytes"] == 3 * 800);
  // each layer's tag spans its own stretch: from its start to core 2's compute end
  for (int k = 0; k < 3; ++k) {
    const Json& o = op_row(r, fmt::format("layer{}", k + 1));
    CHECK(o["start_cycle"] == 110 + 335 * k);
    CHECK(o["end_cycle"] == 110 + 335 * k + 235);
  }
  // and every field as the full simulation has it
  const Json ref = simulate(cfg, prog, false);
  CHECK_FALSE(ref.contains("fast_forward"));
  CHECK(without_counts(r) == ref);
}

TEST_CASE("fast-forward: a layer that differs in bytes is simulated, not replayed", "[fast_forward]") {
  const Json cfg = test::exchange_config(3);
  // layers 1 and 2 are the same, layer 3 sends 404 bytes: one more cycle on each send
  const Json prog = layers_program(3, 404);
  const Json r = simulate(cfg, prog, true);
  CHECK(r["fast_forward"]["repeating"] == 2);
  CHECK(r["fast_forward"]["replayed"] == 1);
  CHECK(test::total(r) == 110 + 2 * 335 + 337 + 7);
  CHECK(without_counts(r) == simulate(cfg, prog, false));
  // nothing repeats: no fast-forward at all
  const Json two = simulate(cfg, layers_program(2, 404), true);
  CHECK_FALSE(two.contains("fast_forward"));
}

TEST_CASE("fast-forward: a stretch that starts with a transfer in flight is simulated", "[fast_forward]") {
  // Core 0 starts a send on a handle before each barrier and waits for it after: no stretch
  // starts idle, so none is replayed, though they are all alike.
  ProgramBuilder p;
  for (std::uint32_t c = 0; c < 2; ++c) p.alloc(c, "buf", 4096);
  for (int k = 0; k < 3; ++k) {
    if (k > 0) p.core(0).push_back({{"op", "wait"}, {"handle", "h"}});
    p.core(0).push_back({{"op", "send"}, {"peer", 1}, {"buffer", "buf"}, {"bytes", 400}, {"handle", "h"}});
    p.sync(0);
    p.sync(1).recv(1, 0, 400);
  }
  p.core(0).push_back({{"op", "wait"}, {"handle", "h"}});
  p.sync(0).sync(1);
  const Json cfg = test::exchange_config(2);
  const Json r = simulate(cfg, p.json(), true);
  CHECK(r["fast_forward"]["repeating"] == 2);
  CHECK(r["fast_forward"]["replayed"] == 0);
  CHECK(without_counts(r) == simulate(cfg, p.json(), false));
}

TEST_CASE("fast-forward: relayouts of the same layouts replay; on a packet mesh too", "[fast_forward]") {
  // Two cores swap halves of a [4, 16] tensor (rows to columns) once per layer, each layer with a
  // relayout of its own (same layouts, other buffers), then compute; 4 layers.
  auto program = [](int layers) {
    ProgramBuilder p;
    Json relayouts = Json::array(), tags = Json::array();
    for (int k = 0; k < layers; ++k) {
      const std::string rows = fmt::format("rows{}", k), cols = fmt::format("cols{}", k);
      tags.push_back({{"op", fmt::format("t{}", k)}, {"phase", "input"}});
      relayouts.push_back({{"moves", {{{"from", 0}, {"to", 1}, {"source", rows}, {"target", cols}, {"tag", k}}}}});
      for (std::uint32_t c = 0; c < 2; ++c) {
        if (k == 0) p.alloc(c, "buf", 64);
        p.alloc(c, rows, 64).alloc(c, cols, 64);
        p.core(c).push_back({{"op", "relayout"}, {"id", k}});
        p.delay(c, 3 + c).sync(c);
      }
    }
    Json j = p.json();
    j["tags"] = tags;
    j["layouts"] = Json::array({{{"shape", {4, 16}}, {"boxes", {{0, 0, 0, 2, 16}, {1, 2, 0, 2, 16}}}},
                                {{"shape", {4, 16}}, {"boxes", {{0, 0, 0, 4, 8}, {1, 0, 8, 4, 8}}}}});
    j["relayouts"] = relayouts;
    return j;
  };
  for (const Json& cfg : {test::exchange_config(2), test::mesh_config(1, 2)}) {
    const Json r = simulate(cfg, program(4), true);
    CHECK(r["fast_forward"]["stretches"] == 4);
    CHECK(r["fast_forward"]["repeating"] == 3);  // stretch 0 starts the program: never replayed
    CHECK(r["fast_forward"]["replayed"] == 2);
    CHECK(without_counts(r) == simulate(cfg, program(4), false));
  }
  // On the exchange: each core sends its 16-element piece (32 B, 8 cycles), copies 16 elements
  // (2 cycles), receives (the message is in at 8 + 30); then 3 or 4 cycles; barrier 100.
  const Json r = simulate(test::exchange_config(2), program(4), true);
  CHECK(test::total(r) == 4 * (38 + 4 + 100));
}
