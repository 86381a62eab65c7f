// Program files (sim/program/program_file.h): the binary form holds the same program as the
// JSON, is checked with the same errors, and damage to it is a named error.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "sim/common/error.h"
#include "sim/program/program_file.h"
#include "test/support.h"

using namespace tessera;
using test::ProgramBuilder;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("tessera-{}-{}", getpid(), name)).string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// A 6-core ring, 5 steps of send 1024 bytes / recv / sync (exchange_test.cpp): 5 x (256 + 30 + 100).
Json ring_program() {
  ProgramBuilder p;
  for (std::uint32_t c = 0; c < 6; ++c) {
    p.alloc(c, "buf", 1024);
    p.core(c).push_back({{"op", "repeat"}, {"count", 5}, {"body", Json::array({
        {{"op", "send"}, {"peer", (c + 1) % 6}, {"buffer", "buf"}},
        {{"op", "recv"}, {"peer", (c + 5) % 6}, {"buffer", "buf"}},
        {{"op", "sync"}}})}});
  }
  return p.json("ring");
}

std::string load_error(const std::string& path, const sim::Config& cfg) {
  try {
    sim::load_program(path, cfg);
  } catch (const ProgramError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("program files: the binary form runs as the JSON does, both ways", "[program-file]") {
  const Json cfg_json = test::exchange_config(6);
  const sim::Config cfg = test::config(cfg_json);
  const std::string json = temp_path("ring.json"), bin = temp_path("ring.tpb"), back = temp_path("ring-back.json");
  write_text(json, ring_program().dump(1));
  sim::convert_program(json, bin);
  sim::convert_program(bin, back);
  CHECK(Json::parse(std::ifstream(back)) == ring_program());
  for (const auto& f : {json, bin, back}) {
    const Json r = sim::simulate(cfg, sim::load_program(f, cfg)).results;
    CHECK(r["total_cycles"] == 5 * (256 + 30 + 100));
    CHECK(r["messages"] == 30);
  }
  CHECK(std::filesystem::file_size(bin) < std::filesystem::file_size(json) / 3);
  for (const auto& f : {json, bin, back}) std::filesystem::remove(f);
}

TEST_CASE("program files: a bad program gives the same error in either form", "[program-file]") {
  const sim::Config cfg = test::config(test::exchange_config(6));
  const std::string json = temp_path("bad.json"), bin = temp_path("bad.tpb");
  Json p = ring_program();
  p["cores"][3]["items"][1]["body"][1]["peer"] = 3;  // core 3 receives from itself
  write_text(json, p.dump());
  sim::convert_program(json, bin);
  const std::string from_json = load_error(json, cfg), from_bin = load_error(bin, cfg);
  CHECK_THAT(from_json, Catch::Contains("cores[3].items[1].body[1].peer: a core cannot send to or receive from itself"));
  CHECK(from_bin.substr(bin.size()) == from_json.substr(json.size()));  // after the file name
  p = ring_program();
  p["cores"][2]["items"][1]["body"][2]["group"] = "left";
  write_text(json, p.dump());
  sim::convert_program(json, bin);
  CHECK(load_error(bin, cfg).substr(bin.size()) == load_error(json, cfg).substr(json.size()));
  CHECK_THAT(load_error(bin, cfg), Catch::Contains("no group named 'left'"));
  std::filesystem::remove(json);
  std::filesystem::remove(bin);
}

TEST_CASE("program files: damaged binary files are named errors", "[program-file]") {
  const sim::Config cfg = test::config(test::exchange_config(6));
  const std::string json = temp_path("ok.json"), bin = temp_path("ok.tpb"), cut = temp_path("cut.tpb");
  write_text(json, ring_program().dump());
  sim::convert_program(json, bin);
  // the binary form without its last core: decompress, drop the tail, compress again
  {
    sim::ProgramWriter w(cut, sim::ProgramFormat::Binary);
    Json top = ring_program();
    Json cores = top["cores"];
    top.erase("cores");
    w.header(top, {0, 1, 2, 3, 4, 5});
    for (int c = 0; c < 5; ++c) w.core(cores[c]);
    w.close();
  }
  CHECK_THAT(load_error(cut, cfg), Catch::Contains("the file ends after 5 of its 6 cores"));
  {
    sim::ProgramWriter w(cut, sim::ProgramFormat::Binary);
    Json top = ring_program();
    Json cores = top["cores"];
    top.erase("cores");
    w.header(top, {0, 1, 2, 3, 4, 5});
    for (int c : {0, 2, 1, 3, 4, 5}) w.core(cores[c]);
    w.close();
  }
  CHECK_THAT(load_error(cut, cfg), Catch::Contains("cores[1].core: core 2, but the list of cores has core 1 in this place"));
  // bytes cut from the compressed stream
  {
    std::ifstream in(bin, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  CHECK_THAT(load_error(cut, cfg), Catch::Contains(cut + ": "));
  // only the gzip trailer (CRC and length, the last 8 bytes) cut: every record reads, and the
  // file loaded as if whole
  for (std::size_t drop : {1, 4, 8}) {
    {
      std::ifstream in(bin, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - drop);
    }
    CHECK_THAT(load_error(cut, cfg),
               Catch::Contains("the file is cut short: its compressed stream ends without the gzip trailer"));
  }
  // a gzip file that is not a program
  {
    sim::ProgramWriter w(cut, sim::ProgramFormat::Binary);
    w.close();
  }
  CHECK_THAT(load_error(cut, cfg), Catch::Contains("the file holds no program"));
  for (const auto& f : {json, bin, cut}) std::filesystem::remove(f);
}
