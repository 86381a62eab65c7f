// Collective items in programs (docs/program.md): a core of each chip takes its chip's part; the
// engine chosen per run carries it on the network the cores share; with a handle the core
// computes while it runs.
#include <catch2/catch.hpp>

#include "sim/collective/collective.h"
#include "sim/simulate.h"
#include "test/support.h"

using namespace tessera;
using Catch::Matchers::Contains;
using test::ProgramBuilder;

namespace {
// Four chips of two cores (test/support.h's exchange chip) on a bidirectional ring of 16 B/cycle
// links, latency 100, with an AFI, an endpoint and an ACE.
Json four_chips() {
  return test::collective_system(Json::array(
      {{{"kind", "ring"}, {"size", 4}, {"link_bytes_per_cycle", 16}, {"link_latency_cycles", 100}}}));
}
const Json kAllReduce = {{"op", "allreduce"}, {"algorithm", "ring"}, {"bytes", 16384}, {"chunk_bytes", 0}};

// The leader (core 0) of every chip takes part; `before` and `after` cycles of compute around
// it on chip 0's leader; with `async`, the compute runs between the start and the wait.
Json program(bool async, std::uint64_t compute) {
  ProgramBuilder p;
  for (std::uint32_t chip = 0; chip < 4; ++chip) {
    const std::uint32_t core = 2 * chip;
    p.alloc(core, "buf", 32768);
    Json item = {{"op", "collective"}, {"collective", 0}};
    if (async) item["handle"] = "ar";
    p.core(core).push_back(item);
    for (std::uint64_t left = compute; left > 0; left -= std::min<std::uint64_t>(left, 4096))
      p.delay(core, std::min<std::uint64_t>(left, 4096));  // 8 bytes a cycle of buffer
    if (async) p.core(core).push_back({{"op", "wait"}, {"handle", "ar"}});
  }
  Json j = p.json();
  j["collectives"] = Json::array({kAllReduce});
  return j;
}
Json simulate(const Json& prog, const std::string& engine) {
  const sim::Config cfg = test::config(four_chips());
  sim::SimOptions opt;
  opt.collective_engine = engine;
  return sim::simulate(cfg, sim::parse_program(prog, "test program", cfg), opt).results;
}
}  // namespace

TEST_CASE("a collective item takes as long as the collective run alone, and overlaps compute with a handle", "[collective][program]") {
  for (const char* engine : {"ideal", "cores", "ace"}) {
    INFO(engine);
    sim::CollectiveSpec s;
    s.op = sim::CollectiveOp::AllReduce;
    s.bytes = 16384;
    s.chunk_bytes = 0;
    s.engine = engine;
    const sim::Config cfg = test::config(four_chips());
    const sim::CollectiveResult alone = sim::run_collective(cfg, s);
    // issued at cycle 0 by every chip, as `tessera collective` does: the last chip's part is
    // done when the collective is, and its core goes on the cycle after the engine says so
    const Json blocking = simulate(program(false, 0), engine);
    std::uint64_t last = 0;
    for (std::uint32_t chip = 0; chip < 4; ++chip) last = std::max(last, test::finish(blocking, 2 * chip));
    CHECK(last == alone.cycles + (std::string(engine) == "ideal" ? 2 : 1));  // ideal: the endpoint's cycle, then the next
    CHECK(blocking["collectives_done_cycle"][0] == alone.cycles);
    const std::uint64_t t = test::finish(blocking, 0);
    // compute C after the collective: T + C; started with a handle: max(1 + C, T)
    CHECK(test::finish(simulate(program(false, 500), engine), 0) == t + 500);
    CHECK(test::finish(simulate(program(true, 500), engine), 0) == std::max<std::uint64_t>(1 + 500, t));
    CHECK(test::finish(simulate(program(true, 3 * t), engine), 0) == 1 + 3 * t);
  }
}

TEST_CASE("collective items: every chip once, on one core, not in a repeat; a config with an AFI", "[collective][program][bad-input]") {
  const sim::Config cfg = test::config(four_chips());
  const auto parse = [&](const Json& p) { return sim::parse_program(p, "p.json", cfg); };
  Json p = program(false, 0);
  p["cores"].erase(p["cores"].begin() + 1);  // chip 1's leader is gone
  CHECK_THROWS_WITH(parse(p), Contains("collectives[0]: no core of chip 1 has a collective item for it"));
  p = program(false, 0);
  p["cores"].push_back({{"core", 1}, {"items", Json::array({{{"op", "collective"}, {"collective", 0}}})}});
  CHECK_THROWS_WITH(parse(p), Contains("chip 0 takes part on cores 0 and 1"));
  p = program(false, 0);
  p["cores"][0]["items"][1] = {{"op", "repeat"}, {"count", 2}, {"body", Json::array({{{"op", "collective"}, {"collective", 0}}})}};
  CHECK_THROWS_WITH(parse(p), Contains("runs its item 2 times (inside a repeat)"));
  p = program(false, 0);
  p["cores"][0]["items"][1]["collective"] = 3;
  CHECK_THROWS_WITH(parse(p), Contains("expected < 1"));
  p = program(false, 0);
  p["collectives"][0]["bytes"] = 1001;  // not 2 x 4 equal messages
  CHECK_THROWS_WITH(parse(p), Contains("collectives[0].bytes") && Contains("do not divide"));
  p = program(false, 0);
  p["collectives"][0]["op"] = "broadcast";
  CHECK_THROWS_WITH(parse(p), Contains("collectives[0].op") && Contains("unknown collective \"broadcast\""));
  Json no_afi = four_chips();
  no_afi["system"].erase("afi");
  CHECK_THROWS_WITH(sim::parse_program(program(false, 0), "p.json", test::config(no_afi)),
                    Contains("no system.afi"));
}

TEST_CASE("collective items follow the order of the collectives on their core", "[collective][program][bad-input]") {
  const sim::Config cfg = test::config(four_chips());
  Json p = program(false, 0);
  p["collectives"].push_back(kAllReduce);
  const Json second = {{"op", "collective"}, {"collective", 1}};
  for (auto& c : p["cores"]) c["items"].insert(c["items"].begin() + 1, second);
  CHECK_THROWS_WITH(sim::parse_program(p, "p.json", cfg), Contains("collective 0 after collective 1 on this core"));
  for (auto& c : p["cores"]) std::swap(c["items"][1], c["items"][2]);  // 0 then 1: fine
  CHECK_NOTHROW(sim::parse_program(p, "p.json", cfg));
}
