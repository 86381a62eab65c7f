// Sweep specs expand into the points a reader counts by hand; the runner records every way a
// point can end (ok, a named error, a crash, a hang) and goes on; results survive a torn line.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "cli/sweep/runner.h"
#include "cli/sweep/spec.h"
#include "cli/sweep/store.h"
#include "sim/common/error.h"

using namespace tessera;
using namespace tessera::sweep;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path dir;
  TempDir() {
    char tmpl[] = "/tmp/tessera-sweep-test-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

// A spec in `t` over config {"chip": {"cores": 4, "sram_bytes": 1024}}.
Spec spec_from(const TempDir& t, const std::string& json) {
  t.write("base.json", R"({"name": "base", "chip": {"cores": 4, "sram_bytes": 1024}})");
  return parse_spec(Json::parse(json), (t.dir / "spec.json").string());
}

}  // namespace

TEST_CASE("sweep specs expand cartesian, zipped, ranged and filtered axes in order", "[sweep]") {
  TempDir t;
  // a: 3 values; (cores, sram) zipped: 3 pairs; d: 4, 8 (log range). Cartesian: 3 * 3 * 2 = 18.
  // The filter a * d <= 8 keeps (a, d) = (1, 4), (1, 8), (2, 4): 3 * 3 = 9 points.
  const Spec s = spec_from(t, R"({
    "config": "base.json",
    "axes": [
      {"name": "a", "option": "--batch", "values": [1, 2, 3]},
      {"pointer": "/chip/cores", "range": {"from": 8, "to": 24, "step": 8}, "zip": "g"},
      {"pointer": "/chip/sram_bytes", "values": [2048, 4096, 8192], "zip": "g"},
      {"name": "d", "option": "--seq", "log_range": {"from": 4, "to": 8, "factor": 2}}
    ],
    "args": ["--quiet"],
    "filter": "a * d <= 8"
  })");
  const auto points = expand(s, "build-1");
  REQUIRE(points.size() == 9);
  // Last axis fastest: index = ((a * 3) + g) * 2 + d over the full product.
  CHECK(points[0].index == 0);
  CHECK(points[0].values == Json{{"a", 1}, {"cores", 8}, {"sram_bytes", 2048}, {"d", 4}});
  CHECK(points[1].index == 1);
  CHECK(points[1].values["d"] == 8);
  CHECK(points[6].index == 6);  // a = 2, g = 0, d = 4
  CHECK(points[6].values == Json{{"a", 2}, {"cores", 8}, {"sram_bytes", 2048}, {"d", 4}});
  CHECK(points[8].index == 10);  // a = 2, g = 2, d = 4
  CHECK(points[8].config["chip"] == Json{{"cores", 24}, {"sram_bytes", 8192}});
  CHECK(points[8].config["name"] == "base");
  CHECK(points[8].options == std::vector<std::string>{"--batch", "2", "--seq", "4", "--quiet"});
  // Keys: distinct points differ; the same point of another build is another point.
  CHECK(points[0].key != points[1].key);
  CHECK(expand(s, "build-1")[3].key == points[3].key);
  CHECK(expand(s, "build-2")[3].key != points[3].key);
}

TEST_CASE("a labelled axis replaces a list; a * pointer then sets that field in every element", "[sweep]") {
  TempDir t;
  t.write("sys.json", R"({"dims": [{"size": 4, "bw": 10}, {"size": 4, "bw": 10}]})");
  // topology: 2 labelled lists (a ring of 16 is one dimension, a 4x4 torus two); bw: 5, 20.
  // Cartesian 2 x 2 = 4 points; the filter drops the torus at 20 (topology_index 1, bw 20).
  const Spec s = parse_spec(Json::parse(R"J({
    "config": "sys.json",
    "axes": [
      {"name": "topology", "pointer": "/dims", "labels": ["ring-16", "torus-4x4"],
       "values": [[{"size": 16, "bw": 1}], [{"size": 4, "bw": 1}, {"size": 4, "bw": 1}]]},
      {"name": "bw", "pointer": "/dims/*/bw", "values": [5, 20]}
    ],
    "filter": "topology_index == 0 || bw != 20"
  })J"), (t.dir / "spec.json").string());
  const auto points = expand(s, "b");
  REQUIRE(points.size() == 3);
  CHECK(points[0].values == Json{{"topology", "ring-16"}, {"bw", 5}});
  CHECK(points[0].config == Json::parse(R"({"dims": [{"size": 16, "bw": 5}]})"));
  CHECK(points[1].config == Json::parse(R"({"dims": [{"size": 16, "bw": 20}]})"));
  CHECK(points[2].values == Json{{"topology", "torus-4x4"}, {"bw", 5}});
  CHECK(points[2].config == Json::parse(R"({"dims": [{"size": 4, "bw": 5}, {"size": 4, "bw": 5}]})"));
  // A "*" that matches nothing, labels of the wrong count, a value of the wrong kind at one match.
  auto bad = [&](const std::string& axes) {
    return parse_spec(Json::parse(R"({"config": "sys.json", "axes": )" + axes + "}"), (t.dir / "spec.json").string());
  };
  CHECK_THROWS_WITH(bad(R"([{"pointer": "/dims/*/speed", "values": [1]}])"),
                    Contains("axes[0].pointer: '/dims/*/speed' is not a field of the base config"));
  CHECK_THROWS_WITH(bad(R"([{"pointer": "/dims", "values": [[], [{}]], "labels": ["a"]}])"),
                    Contains("axes[0].labels: expected a list of 2 names"));
  CHECK_THROWS_WITH(bad(R"([{"pointer": "/dims/*/bw", "values": ["fast"]}])"),
                    Contains("is not a number like the base config's '/dims/0/bw' (10)"));
  CHECK_THROWS_WITH(bad(R"([{"pointer": "dims", "values": [1]}])"), Contains("'dims' is not a JSON pointer"));
  // An earlier axis can leave a later "*" nothing to set: named when the points are expanded.
  CHECK_THROWS_WITH(expand(bad(R"([{"name": "t", "pointer": "/dims", "values": [[]], "labels": ["none"]},
                                    {"pointer": "/dims/*/bw", "values": [1]}])"), "b"),
                    Contains("axis 'bw': '/dims/*/bw' names no field of the config"));
}

TEST_CASE("sweep specs in YAML are the same points as in JSON", "[sweep]") {
  TempDir t;
  t.write("base.json", R"({"name": "base", "chip": {"cores": 4, "sram_bytes": 1024}})");
  const std::string yaml = t.write("s.yaml", R"(config: base.json
workloads: [nerf, "resnet-18"]
planners: [t10, vgm]
axes:
  - pointer: /chip/sram_bytes
    values: [2048, 4096]
limits: {time_s: 60}
)");
  const std::string json = t.write("s.json", R"({"config": "base.json", "workloads": ["nerf", "resnet-18"],
    "planners": ["t10", "vgm"], "axes": [{"pointer": "/chip/sram_bytes", "values": [2048, 4096]}],
    "limits": {"time_s": 60}})");
  const auto a = expand(load_spec(yaml), "b"), b = expand(load_spec(json), "b");
  REQUIRE(a.size() == 8);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].key == b[i].key);
  CHECK(a[5].options == std::vector<std::string>{"--workload", "resnet-18", "--planner", "t10"});
  CHECK(a[5].config["chip"]["sram_bytes"] == 4096);
  CHECK(load_spec(yaml).limits.time_s == 60);
}

TEST_CASE("bad sweep specs are errors naming the file and the field", "[sweep]") {
  TempDir t;
  const std::string file = (t.dir / "spec.json").string();
  auto bad = [&](const std::string& json) { return spec_from(t, json); };
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "axis": []})"), Contains(file) && Contains("axis"));
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "axes": [{"pointer": "/chip/corez", "values": [1]}]})"),
                    Contains("axes[0]") && Contains("'/chip/corez' is not a field of the base config"));
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "axes": [
                      {"pointer": "/chip/cores", "values": [1, 2], "zip": "g"},
                      {"pointer": "/chip/sram_bytes", "values": [1], "zip": "g"}]})"),
                    Contains("axes 'cores' and 'sram_bytes' share zip group 'g' but have 2 and 1 values"));
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "axes": [{"pointer": "/chip/cores", "values": [1]}],
                      "filter": "cores > sram"})"),
                    Contains("filter") && Contains("sram"));
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "axes": [{"pointer": "/chip/cores",
                      "range": {"from": 8, "to": 2, "step": 1}}]})"),
                    Contains("axes[0].range") && Contains("at least 'from'"));
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "command": "compile"})"),
                    Contains("'compile' cannot be swept"));
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "args": ["--out", "x"]})"),
                    Contains("'--out' is set by the sweep for each point"));
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "axes": [{"name": "status", "option": "--x", "values": [1]}]})"),
                    Contains("axis name 'status' is taken"));
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "axes": [{"pointer": "/chip/cores", "values": [8, "16"]}]})"),
                    Contains("axes[0].values: value 1 (\"16\") is not a number like the base config's '/chip/cores' (4)"));
  CHECK_THROWS_WITH(bad(R"({"config": "base.json", "axes": [{"pointer": "/chip/cores", "values": []}]})"),
                    Contains("axes[0].values: expected a non-empty list"));
  CHECK_THROWS_WITH(bad(R"({"config": "missing.json"})"), Contains("missing.json"));
  CHECK_THROWS_WITH(load_spec(t.write("bad.yaml", "axes: [unclosed\n")), Contains("bad.yaml: not valid YAML"));
}

TEST_CASE("the sweep runner records ok, named errors, crashes and hangs, and goes on", "[sweep]") {
  TempDir t;
  // A stand-in for tessera that behaves as its --mode says: the runner's handling of each way a
  // process can end, without depending on a real failure of the simulator.
  const std::string fake = t.write("fake.sh", R"(#!/bin/sh
mode=""; out=""
while [ $# -gt 0 ]; do case "$1" in --mode) mode=$2; shift;; --out) out=$2; shift;; esac; shift; done
case $mode in
  ok) echo '{"total_cycles": 42, "phase": {"compute": 7, "table": [1]}, "operator_table": [1, 2]}' > "$out";;
  error) echo "some progress"; echo "tessera: error: cfg.json: chip.cores: expected a positive integer" >&2; exit 1;;
  crash) kill -SEGV $$;;
  hang) sleep 30;;
esac
)");
  chmod(fake.c_str(), 0755);
  const Spec s = spec_from(t, R"({"config": "base.json", "axes": [
      {"option": "--mode", "values": ["ok", "error", "crash", "hang", "ok"]}],
      "limits": {"time_s": 1, "memory_gb": 1}})");
  auto points = expand(s, "b");
  REQUIRE(points.size() == 5);
  CHECK(points[0].key == points[4].key);  // the same point twice runs once
  Store store((t.dir / "out").string());
  RunOptions opt;
  opt.tessera = fake;
  opt.jobs = 2;
  opt.progress = false;
  const RunSummary sum = run_points(s, points, store, opt);
  CHECK(sum.ran == 5);
  CHECK(sum.ok == 2);
  CHECK(sum.failed == 3);
  const auto done = store.load();
  REQUIRE(done.size() == 4);
  // Before the sweep ends, results.csv already holds at least the first finished point (it is
  // rewritten at most every 2 s; the points here end within 1 s): a header and a row.
  {
    std::ifstream early(store.path("results.csv"));
    std::string header, row;
    CHECK(std::getline(early, header));
    CHECK(std::getline(early, row));
    CHECK(header.rfind("point,key,status,mode,error", 0) == 0);
  }
  const Json& ok = done.at(points[0].key);
  CHECK(ok["status"] == "ok");
  CHECK(ok["result"] == Json{{"total_cycles", 42}, {"phase.compute", 7}});
  CHECK(done.at(points[1].key)["status"] == "error");
  CHECK(done.at(points[1].key)["error"] == "cfg.json: chip.cores: expected a positive integer");
  CHECK(done.at(points[2].key)["status"] == "crashed");
  CHECK_THAT(done.at(points[2].key)["error"].get<std::string>(), Contains("killed by signal 11"));
  CHECK(done.at(points[3].key)["status"] == "timeout");
  CHECK(done.at(points[3].key)["error"] == "stopped after 1 s (limits.time_s)");
  // Final files: one row per point in order, the duplicate sharing the first one's result.
  store.finalize(points, done);
  std::ifstream csv(store.path("results.csv"));
  std::string header, row0;
  std::getline(csv, header);
  std::getline(csv, row0);
  CHECK(header == "point,key,status,mode,error,phase.compute,total_cycles");
  CHECK(row0 == "0," + points[0].key + ",ok,ok,,7,42");
  std::string line, last;
  while (std::getline(csv, line)) last = line;
  CHECK(last == "4," + points[0].key + ",ok,ok,,7,42");
}

TEST_CASE("sweep results ignore a line torn by a kill", "[sweep]") {
  TempDir t;
  Store store((t.dir / "out").string());
  store.append(Json{{"key", "aaaa"}, {"status", "ok"}});
  std::ofstream(store.path("results.jsonl"), std::ios::app) << R"({"key": "bbbb", "sta)";
  const auto done = store.load();
  CHECK(done.size() == 1);
  CHECK(done.count("aaaa") == 1);
}
