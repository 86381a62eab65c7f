// Every bad-input path gives an error that names the file, field, core or item.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "sim/common/error.h"
#include "test/support.h"

using namespace tessera;
using test::ProgramBuilder;
using Catch::Contains;

namespace {
// The message of the exception of type E that `fn` throws ("" if it throws nothing or another type).
template <class E, class F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (...) {
  }
  return "";
}
void check_program_error(const Json& prog, const std::string& text) {
  CHECK_THAT(error_of<ProgramError>([&] { test::run(test::exchange_config(), prog); }), Contains(text));
}
}  // namespace

TEST_CASE("config: unknown keys, missing fields, wrong types, inconsistent values", "[bad-input]") {
  Json c = test::exchange_config();
  c["chip"]["core"]["sram_byte"] = 1;
  CHECK_THAT(error_of<ConfigError>([&] { test::config(c); }), Contains("unknown field(s) chip.core.sram_byte"));
  // the known fields listed include the optional ones the file leaves out (they were missing)
  c = test::exchange_config();
  c["system"]["afii"] = Json::object();
  CHECK_THAT(error_of<ConfigError>([&] { test::config(c); }),
             Contains("unknown field(s) system.afii (known here: ") && Contains("afi, ") && Contains("ace, ") &&
                 Contains("npu") && !Contains("topology"));
  c = test::exchange_config();
  c["chip"]["core"].erase("sram_bytes");
  CHECK_THROWS_WITH(test::config(c), Contains("test config: chip.core.sram_bytes: required field is missing"));
  c = test::exchange_config();
  c["clock_ghz"] = "fast";
  CHECK_THROWS_WITH(test::config(c), Contains("clock_ghz: expected a positive number, got \"fast\""));
  c = test::exchange_config();
  c["chip"]["exchange"]["latency_cycles"] = -3;
  CHECK_THROWS_WITH(test::config(c), Contains("chip.exchange.latency_cycles: expected a non-negative integer"));
  Json m = test::mesh_config(3, 3);
  m["chip"]["cores"] = 10;
  CHECK_THROWS_WITH(test::config(m), Contains("rows x cols = 3 x 3 = 9 but chip.cores is 10"));
  m = test::mesh_config(3, 3);
  m["chip"]["exchange"] = test::exchange_config()["chip"]["exchange"];
  CHECK_THROWS_WITH(test::config(m), Contains("exactly one of chip.exchange and chip.mesh"));
  c = test::exchange_config();
  c["chip"]["core"]["matrix"]["macs_per_cycle"]["fp8"] = 4;
  CHECK_THROWS_WITH(test::config(c), Contains("macs_per_cycle.fp8: not a dtype"));
  c = test::exchange_config();
  c["system"] = {{"chips", 2}, {"topology", "ring"}};
  CHECK_THROWS_WITH(test::config(c), Contains("system.topology: replaced by system.dimensions"));
  c["system"] = {{"dimensions", {{{"kind", "hypercube"}, {"size", 2}, {"link_bytes_per_cycle", 8}, {"link_latency_cycles", 5}}}}};
  CHECK_THROWS_WITH(test::config(c), Contains("system.dimensions[0].kind: expected \"ring\", \"unidirectional_ring\""));
  c["system"] = {{"chips", 6}, {"dimensions", {{{"kind", "ring"}, {"size", 2}, {"link_bytes_per_cycle", 8}, {"link_latency_cycles", 5}},
                                              {{"kind", "switch"}, {"size", 4}, {"link_bytes_per_cycle", 8}, {"link_latency_cycles", 5}}}}};
  CHECK_THROWS_WITH(test::config(c), Contains("system.chips: 6 chips, but the sizes of system.dimensions multiply to 8"));
  c["system"] = {{"chips", 2}};
  CHECK_THROWS_WITH(test::config(c), Contains("system.chips: 2 chips need system.dimensions"));
  c["system"] = {{"dimensions", {{{"kind", "ring"}, {"size", 4}, {"link_bytes_per_cycle", 8}, {"link_latency_cycles", 5}, {"link_efficiency", 1.5}}}}};
  CHECK_THROWS_WITH(test::config(c), Contains("system.dimensions[0].link_efficiency: expected a share in (0, 1]"));
  c["system"] = {{"dimensions", {{{"kind", "ring"}, {"size", 64}, {"link_bytes_per_cycle", 8}, {"link_latency_cycles", 5}},
                                 {{"kind", "ring"}, {"size", 128}, {"link_bytes_per_cycle", 8}, {"link_latency_cycles", 5}}}}};
  CHECK_THROWS_WITH(test::config(c), Contains("system.dimensions: the sizes multiply to more than 4096 chips"));
  c["system"] = {{"dimensions", {{{"kind", "ring"}, {"size", 4294967298ull}, {"link_bytes_per_cycle", 8}, {"link_latency_cycles", 5}}}}};
  CHECK_THROWS_WITH(test::config(c), Contains("system.dimensions[0].size: expected 1..4096"));
  // rates, latencies and the clock far outside any chip: their cycle counts overflowed into
  // plausible-looking results (a link of 1e-20 B/cycle as fast as one of 20)
  c["system"] = {{"dimensions", {{{"kind", "ring"}, {"size", 4}, {"link_bytes_per_cycle", 1e-20}, {"link_latency_cycles", 5}}}}};
  CHECK_THROWS_WITH(test::config(c), Contains("system.dimensions[0].link_bytes_per_cycle: expected 1e-06 .. 1e+12 per cycle"));
  c["system"] = {{"dimensions", {{{"kind", "ring"}, {"size", 4}, {"link_bytes_per_cycle", 8}, {"link_latency_cycles", 1ull << 55}}}}};
  CHECK_THROWS_WITH(test::config(c), Contains("system.dimensions[0].link_latency_cycles: expected at most 1000000000 cycles"));
  c = test::exchange_config();
  c["clock_ghz"] = 1e300;
  CHECK_THROWS_WITH(test::config(c), Contains("clock_ghz: expected 0.001 .. 1000 GHz"));
  c = test::exchange_config();
  c["chip"]["exchange"]["send_bytes_per_cycle"] = 1e13;
  CHECK_THROWS_WITH(test::config(c), Contains("chip.exchange.send_bytes_per_cycle: expected 1e-06 .. 1e+12 per cycle"));
}

TEST_CASE("config and program files: missing or not JSON", "[bad-input]") {
  CHECK_THROWS_WITH(sim::load_config("/nonexistent/x.json"), Contains("/nonexistent/x.json: cannot open file"));
  const std::string path = "/tmp/tessera-bad-input-test.json";
  std::ofstream(path) << "{ \"name\": ";
  CHECK_THROWS_WITH(sim::load_config(path), Contains(path + ": not valid JSON"));
  std::ofstream(path) << "{ \"name\": \"x\", \"clock_ghz\": 1e400 }";  // parses, but no double holds it
  CHECK_THROWS_WITH(sim::load_config(path), Contains(path + ": not valid JSON") && Contains("number overflow"));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(sim::load_config("/tmp"), Contains("/tmp: not a regular file"));
}

TEST_CASE("JSON files: a key given twice in one object is named with its path", "[bad-input]") {
  // the parser keeps the last of the two silently: this config would run with 2 KiB of SRAM
  Json c = test::exchange_config();
  std::string text = c.dump();
  const std::string key = "\"sram_bytes\":";
  const auto at = text.find(key);
  REQUIRE(at != std::string::npos);
  text.insert(at, key + "2048,");
  const std::string path = "/tmp/tessera-duplicate-key-test.json";
  std::ofstream(path) << text;
  CHECK_THROWS_WITH(sim::load_config(path),
                    Contains(path + ": chip.core.sram_bytes: the key is given twice in one object"));
  // inside an array the element is named; the same key in two different objects is fine
  std::ofstream(path) << R"({"a": [{"x": 1}, {"x": 2, "y": {"z": 1}, "x": 3}], "b": {"x": 1}})";
  CHECK_THROWS_WITH(read_json_file(path), Contains(path + ": a[1].x: the key is given twice"));
  std::ofstream(path) << R"({"a": [{"x": 1}, {"x": 2, "y": {"x": 1}}], "x": {"x": 1}})";
  CHECK(read_json_file(path)["a"][1]["y"]["x"] == 1);
  // objects of many keys (past the linear search) too
  std::string many = "{";
  for (int i = 0; i < 40; ++i) many += "\"k" + std::to_string(i) + "\": 0, ";
  std::ofstream(path) << many + "\"k7\": 1}";
  CHECK_THROWS_WITH(read_json_file(path), Contains(path + ": k7: the key is given twice"));
  std::remove(path.c_str());
}

TEST_CASE("program: structural errors name the core and item", "[bad-input]") {
  ProgramBuilder p;
  p.alloc(0, "buf", 64).send(0, 1, 64, "nope").alloc(1, "buf", 64).recv(1, 0, 64);
  check_program_error(p.json(), "cores[0].items[1]: core 0: buffer 'nope' is not allocated here");

  p = ProgramBuilder();
  p.alloc(0, "buf", 64).send(0, 99, 64);
  check_program_error(p.json(), "cores[0].items[1].peer: core 99 does not exist (the config has 8 cores)");

  p = ProgramBuilder();
  p.alloc(0, "buf", 64).send(0, 1, 64).alloc(1, "buf", 64);
  check_program_error(p.json(), "core 0 sends 1 message(s) to core 1 but core 1 posts 0 matching recv(s)");

  p = ProgramBuilder();
  p.alloc(0, "buf", 64).send(0, 1, 64).alloc(1, "buf", 64).recv(1, 0, 32);
  check_program_error(p.json(), "core 0 sends 64 bytes in total to core 1 but core 1 receives 32 bytes");

  p = ProgramBuilder();
  p.alloc(3, "a", 40000).alloc(3, "big", 30000);
  check_program_error(p.json(), "core 3: scratchpad overflow allocating buffer 'big' of 30000 bytes: "
                                "40000 bytes in use, capacity 65536 bytes, short by 4464 bytes");

  check_program_error(Json{{"format", "tessera-program"}, {"version", 1}, {"cores", Json::array()}},
                      "cores: no cores: a program runs on at least one");

  // sizes past 2^64 wrapped round: an allocation that fitted beside another, and a matmul of
  // 2^32 x 2^32 x 2^32 whose operands' bytes came out as a few
  p = ProgramBuilder();
  p.alloc(3, "a", 1024).alloc(3, "huge", 18446744073709550616ull);
  check_program_error(p.json(), "core 3: scratchpad overflow allocating buffer 'huge' of 18446744073709550616 bytes: "
                                "1024 bytes in use, capacity 65536 bytes");
  p = ProgramBuilder();
  p.alloc(0, "a", 2).alloc(0, "b", 2).alloc(0, "c", 2);
  p.core(0).push_back({{"op", "compute"}, {"kind", "matmul"}, {"m", 1ull << 32}, {"k", 1ull << 32}, {"n", 1ull << 32},
                       {"inputs", {"a", "b"}}, {"output", "c"}});
  check_program_error(p.json(), "cores[0].items[3].m: the extents' product overflows 2^64 bytes");

  p = ProgramBuilder();
  p.alloc(0, "buf", 8).sync(0).alloc(1, "buf", 8).sync(1).sync(1);
  check_program_error(p.json(), "group 'all': core 0 syncs 1 time(s) but core 1 syncs 2 time(s)");

  p = ProgramBuilder();
  p.core(0).push_back({{"op", "jump"}});
  check_program_error(p.json(), "cores[0].items[0].op: unknown op \"jump\"");

  p = ProgramBuilder();
  p.alloc(0, "buf", 8);
  p.core(0).push_back({{"op", "sync"}, {"group", "all"}, {"colour", "red"}});
  check_program_error(p.json(), "unknown field(s) cores[0].items[1].colour");

  p = ProgramBuilder();
  p.core(0).push_back({{"op", "repeat"}, {"count", 3}, {"body", {{{"op", "alloc"}, {"buffer", "x"}, {"bytes", 8}}}}});
  check_program_error(p.json(), "a repeat body must free every buffer it allocates");
  // a buffer from before the body, freed in it and allocated again at another size: not as found
  p = ProgramBuilder();
  p.alloc(0, "w", 16);
  p.core(0).push_back({{"op", "repeat"}, {"count", 2}, {"body", {{{"op", "free"}, {"buffer", "w"}},
                                                                {{"op", "alloc"}, {"buffer", "w"}, {"bytes", 8}}}}});
  check_program_error(p.json(), "a repeat body must free every buffer it allocates");
  // freed and allocated again at its size, inside a nested body: as found, the program runs
  p = ProgramBuilder();
  p.alloc(0, "w", 16);
  const Json inner = {{"op", "repeat"}, {"count", 2}, {"body", {{{"op", "free"}, {"buffer", "w"}},
                                                               {{"op", "alloc"}, {"buffer", "w"}, {"bytes", 16}}}}};
  p.core(0).push_back({{"op", "repeat"}, {"count", 2}, {"body", Json::array({inner})}});
  CHECK(test::total(test::run(test::exchange_config(2), p.json())) == 0);
  // the inner body frees what the outer one allocated before it: the inner is not as found
  p = ProgramBuilder();
  const Json frees = {{"op", "repeat"}, {"count", 1}, {"body", {{{"op", "free"}, {"buffer", "x"}}}}};
  const Json alloc_x = {{"op", "alloc"}, {"buffer", "x"}, {"bytes", 8}};
  p.core(0).push_back({{"op", "repeat"}, {"count", 2}, {"body", Json::array({alloc_x, frees})}});
  check_program_error(p.json(), "a repeat body must free every buffer it allocates");

  p = ProgramBuilder();
  p.groups["pair"] = {0, 1};
  p.alloc(2, "buf", 8).sync(2, "pair");
  check_program_error(p.json(), "core 2 is not a member of group 'pair'");

  p = ProgramBuilder();
  p.alloc(0, "buf", 8);
  p.core(0).push_back({{"op", "load"}, {"tensor", "weights"}, {"buffer", "buf"}});
  check_program_error(p.json(), "no off-chip tensor named 'weights'");

  Json bad = p.json();
  bad["format"] = "something-else";
  check_program_error(bad, "format: expected \"tessera-program\"");
}

TEST_CASE("program: a deadlock is reported with the cores involved, never a hang", "[bad-input]") {
  // each core waits to receive before it sends: counts match, but nobody can start
  ProgramBuilder p;
  p.alloc(0, "buf", 64).recv(0, 1, 64).send(0, 1, 64);
  p.alloc(1, "buf", 64).recv(1, 0, 64).send(1, 0, 64);
  CHECK_THAT(error_of<SimulationError>([&] { test::run(test::exchange_config(), p.json()); }),
             Catch::Matchers::Contains("deadlock at cycle 0: 2 core(s) can never finish") &&
                           Catch::Matchers::Contains("core 0 waits in recv from core 1 (0 unreceived message(s) from others) at cores[0].items[1]") &&
                           Catch::Matchers::Contains("core 1 waits in recv from core 0 (0 unreceived message(s) from others) at cores[1].items[1]"));
  // the same inside nested repeats: the report names the item's place by its path in the file
  // (rebuilt from the repeat that holds it and its index there)
  p = ProgramBuilder();
  for (std::uint32_t c = 0; c < 2; ++c) {
    const std::uint32_t peer = 1 - c;
    const Json inner = {{"op", "repeat"}, {"count", 2}, {"body", Json::array({
        {{"op", "recv"}, {"peer", peer}, {"buffer", "buf"}, {"bytes", 64}},
        {{"op", "send"}, {"peer", peer}, {"buffer", "buf"}, {"bytes", 64}}})}};
    p.alloc(c, "buf", 64);
    p.core(c).push_back({{"op", "repeat"}, {"count", 3}, {"body", Json::array({{{"op", "sync"}}, inner})}});
  }
  CHECK_THAT(error_of<SimulationError>([&] { test::run(test::exchange_config(), p.json()); }),
             Catch::Matchers::Contains("core 0 waits in recv from core 1 (0 unreceived message(s) from others) at "
                                       "cores[0].items[1].body[1].body[0]") &&
                 Catch::Matchers::Contains("at cores[1].items[1].body[1].body[0]"));
  // a barrier one member never reaches because it waits for a message sent after the barrier
  p = ProgramBuilder();
  p.alloc(0, "buf", 64).sync(0).send(0, 1, 64);
  p.alloc(1, "buf", 64).recv(1, 0, 64).sync(1);
  CHECK_THROWS_WITH(test::run(test::exchange_config(), p.json()),
                    Contains("core 0 waits at sync on group 'all' (1 of 2 members arrived)"));
}

TEST_CASE("program: message sizes are checked in order at run time", "[bad-input]") {
  ProgramBuilder p;
  p.alloc(0, "buf", 256).send(0, 1, 100).send(0, 1, 200);
  p.alloc(1, "buf", 256).recv(1, 0, 200).recv(1, 0, 100);
  CHECK_THAT(error_of<SimulationError>([&] { test::run(test::exchange_config(), p.json()); }),
             Catch::Matchers::Contains("core 1 posted a recv of 200 bytes from core 0, but the matching send carries 100 bytes") &&
                 Catch::Matchers::Contains("100 bytes (at cores[1].items[1])"));  // its second item, after the alloc
}
