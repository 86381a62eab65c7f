// Re-layouts (sim/program/relayout.h): the pieces two layouts give, worked out by hand; a
// relayout item times exactly as the sends, copies and receives it stands for; and bad
// relayouts are named errors. Exchange test chip (test/support.h): 4 B/cycle ports, latency 30,
// a copy of 8n elements takes n cycles.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "compiler/compile.h"
#include "sim/program/relayout.h"
#include "test/support.h"

using namespace tessera;
using test::ProgramBuilder;

namespace {

// A [4, 16] tensor by rows (core 0: rows 0-1, core 1: rows 2-3) and by columns (core 0: columns
// 0-7, core 1: columns 8-15), as program JSON.
Json rows_and_columns() {
  return Json::array({{{"shape", {4, 16}}, {"boxes", {{0, 0, 0, 2, 16}, {1, 2, 0, 2, 16}}}},
                      {{"shape", {4, 16}}, {"boxes", {{0, 0, 0, 4, 8}, {1, 0, 8, 4, 8}}}}});
}

Json relayout_program(bool both_cores = true) {
  ProgramBuilder p;
  for (std::uint32_t c = 0; c < 2; ++c) {
    p.alloc(c, "rows", 64).alloc(c, "cols", 64);
    if (c == 0 || both_cores) p.core(c).push_back({{"op", "relayout"}, {"id", 0}});
  }
  Json j = p.json();
  j["tags"] = Json::array({{{"op", "transpose"}, {"phase", "input"}}});
  j["layouts"] = rows_and_columns();
  j["relayouts"] = Json::array({{{"moves", {{{"from", 0}, {"to", 1}, {"source", "rows"}, {"target", "cols"}, {"tag", 0}}}}}});
  return j;
}

sim::Layout layout(std::vector<std::int64_t> shape, std::vector<std::uint32_t> cores, std::vector<std::int64_t> boxes) {
  return sim::Layout{std::move(shape), std::move(cores), std::move(boxes)};
}

}  // namespace

TEST_CASE("relayout: rows to columns on two cores, by hand", "[relayout]") {
  const sim::Layout rows = layout({4, 16}, {0, 1}, {0, 0, 2, 16, 2, 0, 2, 16});
  const sim::Layout cols = layout({4, 16}, {0, 1}, {0, 0, 4, 8, 0, 8, 4, 8});
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::int64_t, std::int64_t, std::int64_t>> pieces;
  sim::for_each_piece(rows, cols, [&](std::uint32_t from, std::uint32_t to, const sim::Box& b) {
    pieces.emplace_back(from, to, b.origin[0], b.origin[1], b.elements());
  });
  // by receiving core, then along the source boxes: 2 x 8 elements each
  REQUIRE(pieces.size() == 4);
  CHECK(pieces[0] == std::make_tuple(0u, 0u, 0, 0, 16));
  CHECK(pieces[1] == std::make_tuple(1u, 0u, 2, 0, 16));
  CHECK(pieces[2] == std::make_tuple(0u, 1u, 0, 8, 16));
  CHECK(pieces[3] == std::make_tuple(1u, 1u, 2, 8, 16));

  sim::Relayout r{{sim::Move{0, 1, 7, 2, "x", "rows", "cols"}}};
  auto steps = sim::relayout_steps(r, {rows, cols});
  // each core: its send (16 elements x 2 bytes), its copy (16 elements), its receive
  for (std::uint32_t c : {0u, 1u}) {
    REQUIRE(steps.count(c) == 3);
    const sim::RelayoutStep* s = steps.first(c);
    CHECK((s[0].kind == sim::RelayoutStep::Send && s[0].peer == 1 - c && s[0].value == 32 && s[0].tag == 7));
    CHECK((s[1].kind == sim::RelayoutStep::Copy && s[1].peer == c && s[1].value == 16));
    CHECK((s[2].kind == sim::RelayoutStep::Recv && s[2].peer == 1 - c && s[2].value == 32));
  }
  CHECK(steps.count(2) == 0);  // a core beyond both layouts has no part
  // each piece is one send and one receive with the peers swapped (the engine pairs them by it)
  for (std::uint32_t c = 0; c < 2; ++c) {
    const sim::RelayoutStep* s = steps.first(c);
    const sim::RelayoutStep* other = steps.first(1 - c);
    CHECK(s[0].piece == other[2].piece);  // c's send is the other's receive from c
    CHECK(s[2].piece == other[0].piece);
    CHECK(s[0].piece != s[2].piece);
  }
}

TEST_CASE("relayout: replicas are read from the receiver itself, else by the receiver's id", "[relayout]") {
  // cores 0 and 1 both hold the whole [2, 4] tensor; cores 0, 2 and 3 want one row or all of it
  const sim::Layout both = layout({2, 4}, {0, 1}, {0, 0, 2, 4, 0, 0, 2, 4});
  const sim::Layout want = layout({2, 4}, {0, 2, 3}, {0, 0, 2, 4, 0, 0, 1, 4, 1, 0, 1, 4});
  std::vector<std::pair<std::uint32_t, std::uint32_t>> moves;
  sim::for_each_piece(both, want, [&](std::uint32_t from, std::uint32_t to, const sim::Box&) { moves.emplace_back(from, to); });
  // core 0 holds a replica: a local copy; core 2 reads replica 2 % 2 = core 0, core 3 reads core 1
  CHECK(moves == std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 0}, {0, 2}, {1, 3}});
}

namespace {

// A tiling of `shape` into a grid of `cuts[d]` slabs per dimension (uneven cuts), each tile held
// by 1 to 3 cores drawn from `cores` cores (replicas), as a layout (cores ascending).
sim::Layout random_tiling(const std::vector<std::int64_t>& shape, const std::vector<int>& cuts, std::uint32_t cores,
                          std::mt19937_64& rng) {
  const std::size_t rank = shape.size();
  std::vector<std::vector<std::int64_t>> edges(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    std::set<std::int64_t> e{0, shape[d]};
    while (static_cast<int>(e.size()) < cuts[d] + 1) e.insert(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(shape[d])));
    edges[d].assign(e.begin(), e.end());
  }
  std::map<std::uint32_t, std::vector<std::int64_t>> by_core;  // a core holds at most one tile
  std::vector<std::size_t> at(rank, 0);
  for (bool done = false; !done;) {
    const std::uint32_t copies = 1 + static_cast<std::uint32_t>(rng() % 3);
    for (std::uint32_t k = 0; k < copies; ++k) {
      const std::uint32_t c = static_cast<std::uint32_t>(rng() % cores);
      if (by_core.count(c)) continue;
      std::vector<std::int64_t> box;
      for (std::size_t d = 0; d < rank; ++d) box.push_back(edges[d][at[d]]);
      for (std::size_t d = 0; d < rank; ++d) box.push_back(edges[d][at[d] + 1] - edges[d][at[d]]);
      by_core[c] = box;
    }
    done = true;
    for (std::size_t d = rank; d-- > 0;) {
      if (++at[d] + 1 < edges[d].size()) { done = false; break; }
      at[d] = 0;
    }
  }
  sim::Layout l{shape, {}, {}};
  for (const auto& [c, box] : by_core) {
    l.cores.push_back(c);
    l.boxes.insert(l.boxes.end(), box.begin(), box.end());
  }
  return l;
}

using Piece = std::tuple<std::uint32_t, std::uint32_t, std::vector<std::int64_t>>;  // from, to, origin + extent

// The rule, by brute force: every destination box meets every source box; a piece read from
// the receiver if it holds a box at that origin, else from holder (receiver mod holders) in
// ascending core order.
std::vector<Piece> pieces_by_hand(const sim::Layout& src, const sim::Layout& dst) {
  const std::size_t rank = src.rank();
  std::map<std::vector<std::int64_t>, std::vector<std::uint32_t>> holders;  // by origin
  for (std::size_t j = 0; j < src.cores.size(); ++j)
    holders[std::vector<std::int64_t>(src.boxes.begin() + static_cast<std::ptrdiff_t>(2 * rank * j),
                                      src.boxes.begin() + static_cast<std::ptrdiff_t>(2 * rank * j + rank))]
        .push_back(src.cores[j]);
  std::vector<Piece> out;
  for (std::size_t i = 0; i < dst.cores.size(); ++i) {
    const std::uint32_t c = dst.cores[i];
    for (const auto& [origin, list] : holders) {
      std::size_t j = 0;
      while (src.cores[j] != list[0]) ++j;
      std::vector<std::int64_t> piece(2 * rank);
      bool empty = false;
      for (std::size_t d = 0; d < rank; ++d) {
        const std::int64_t lo = std::max(origin[d], dst.boxes[2 * rank * i + d]);
        const std::int64_t hi = std::min(origin[d] + src.boxes[2 * rank * j + rank + d],
                                         dst.boxes[2 * rank * i + d] + dst.boxes[2 * rank * i + rank + d]);
        piece[d] = lo;
        piece[rank + d] = hi - lo;
        empty = empty || hi <= lo;
      }
      if (empty) continue;
      const bool own = std::find(list.begin(), list.end(), c) != list.end();
      out.emplace_back(own ? c : list[c % list.size()], c, piece);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("relayout: pieces of random tilings with replicas, against brute force", "[relayout]") {
  std::mt19937_64 rng(7);
  const std::vector<std::pair<std::vector<std::int64_t>, std::vector<int>>> cases = {
      {{37}, {5}}, {{64, 48}, {4, 6}}, {{30, 20, 12}, {3, 2, 4}}, {{96, 8}, {40, 1}},
      {{200, 200}, {60, 60}},  // 64 held tiles of a 60 x 60 grid: origins sparse, a hash map
      {{40, 40, 40, 40, 40, 40, 40, 40}, {39, 1, 1, 1, 1, 1, 1, 1}}};
  for (int round = 0; round < 20; ++round) {
    for (const auto& [shape, cuts] : cases) {
      std::vector<int> other(cuts.rbegin(), cuts.rend());  // the destination cut another way
      if (other.size() != cuts.size()) other = cuts;
      for (std::size_t d = 0; d < other.size(); ++d) other[d] = std::min<int>(other[d], static_cast<int>(shape[d]) - 1);
      const sim::Layout src = random_tiling(shape, cuts, 64, rng), dst = random_tiling(shape, other, 64, rng);
      std::vector<Piece> got;
      sim::for_each_piece(src, dst, [&](std::uint32_t from, std::uint32_t to, const sim::Box& b) {
        std::vector<std::int64_t> box(b.origin);
        box.insert(box.end(), b.extent.begin(), b.extent.end());
        got.emplace_back(from, to, box);
      });
      std::sort(got.begin(), got.end());
      REQUIRE(got == pieces_by_hand(src, dst));
    }
  }
  // rank 8 with 40 distinct origins on every axis: more origin tuples than a 40-bit key holds,
  // so the holders are numbered through the ordered map instead of the packed key
  sim::Layout diag{std::vector<std::int64_t>(8, 40), {}, {}};
  for (std::uint32_t c = 0; c < 40; ++c) {
    diag.cores.push_back(c);
    for (int d = 0; d < 8; ++d) diag.boxes.push_back(c);
    for (int d = 0; d < 8; ++d) diag.boxes.push_back(1);
  }
  std::vector<Piece> got;
  sim::for_each_piece(diag, diag, [&](std::uint32_t from, std::uint32_t to, const sim::Box& b) {
    got.emplace_back(from, to, std::vector<std::int64_t>{b.origin[0], b.extent[0]});
  });
  REQUIRE(got.size() == 40);  // each core copies its own box
  for (std::uint32_t c = 0; c < 40; ++c) CHECK(got[c] == Piece{c, c, {c, 1}});
}

TEST_CASE("relayout: a relayout item takes the time of the items it stands for", "[relayout]") {
  // Each core sends 32 bytes (8 cycles at 4 B/cycle), copies 16 elements (2 cycles), then
  // receives the other's message, in since 8 + 30: 38 cycles.
  const Json r = test::run(test::exchange_config(2), relayout_program());
  CHECK(test::total(r) == 38);
  CHECK(r["messages"] == 2);
  CHECK(r["work_items"] == 6);
  for (const auto& c : r["cores"]) {
    CHECK(c["cycles"]["send"] == 8);
    CHECK(c["cycles"]["compute"] == 2);
    CHECK(c["cycles"]["recv"] == 28);
  }
  CHECK(r["operators"][0]["name"] == "transpose");
  CHECK(r["operators"][0]["exchange_cycles"] == 36.0);  // (8 + 28) per core, averaged
  // the same, written out by hand
  ProgramBuilder p;
  for (std::uint32_t c = 0; c < 2; ++c) {
    p.alloc(c, "buf", 64).send(c, 1 - c, 32).delay(c, 2).recv(c, 1 - c, 32);
  }
  CHECK(test::total(test::run(test::exchange_config(2), p.json())) == 38);
}

TEST_CASE("relayout: a receive posted before its message is sent waits for it", "[relayout]") {
  // Core 0 computes 100 cycles first. Core 1 sends at 0 (done at 8; in at 8 + 30 = 38), copies
  // (10) and posts its receive at 10, before core 0 has sent: core 0 sends at 100, done at 108,
  // so core 1's message is in at 138. Core 0 copies (110) and finds core 1's message in since 38.
  Json j = relayout_program();
  Json& items = j["cores"][0]["items"];
  const Json alloc = {{"op", "alloc"}, {"buffer", "buf"}, {"bytes", 800}};
  const Json delay = {{"op", "compute"}, {"kind", "copy"}, {"dtype", "int8"}, {"elements", 800},
                      {"inputs", {"buf"}}, {"output", "buf"}};
  items.insert(items.begin() + 2, alloc);
  items.insert(items.begin() + 3, delay);
  const Json r = test::run(test::exchange_config(2), j);
  CHECK(test::total(r) == 138);
  CHECK(r["cores"][0]["cycles"]["recv"] == 0);
  CHECK(r["cores"][1]["cycles"]["recv"] == 128);
  CHECK(r["cores"][0]["finish_cycle"] == 110);
}

TEST_CASE("relayout: a relayout run in a loop pairs each run's send with that run's receive", "[relayout]") {
  // [4, 16] all on core 0, moved to core 1, twice. Core 0 sends 256 bytes (64 cycles) and again
  // at once: done at 64 and 128, running ahead of core 1. Core 1's first receive is done when the
  // first message is in (64 + 30 = 94), its second at 128 + 30 = 158.
  ProgramBuilder p;
  for (std::uint32_t c = 0; c < 2; ++c) {
    p.alloc(c, "a", 256).alloc(c, "b", 256);
    p.core(c).push_back({{"op", "repeat"}, {"count", 2}, {"body", {{{"op", "relayout"}, {"id", 0}}}}});
  }
  Json j = p.json();
  j["layouts"] = Json::array({{{"shape", {4, 16}}, {"boxes", {{0, 0, 0, 4, 16}}}},
                              {{"shape", {4, 16}}, {"boxes", {{1, 0, 0, 4, 16}}}}});
  j["relayouts"] = Json::array({{{"moves", {{{"from", 0}, {"to", 1}, {"source", "a"}, {"target", "b"}, {"element_bytes", 4}}}}}});
  const Json r = test::run(test::exchange_config(2), j);
  CHECK(test::total(r) == 158);
  CHECK(r["messages"] == 2);
  CHECK(r["cores"][0]["finish_cycle"] == 128);
  CHECK(r["cores"][0]["cycles"]["send"] == 128);
  CHECK(r["cores"][1]["cycles"]["recv"] == 158);
}

TEST_CASE("relayout: bad relayouts are named errors", "[relayout]") {
  const sim::Config cfg = test::config(test::exchange_config(2));
  auto error = [&](const Json& prog) {
    try {
      sim::parse_program(prog, "p.json", cfg);
    } catch (const ProgramError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Json j = relayout_program(false);
  CHECK_THAT(error(j), Catch::Contains("relayout 0: core 0 runs it 1 time(s) but core 1 runs it 0 time(s)"));
  j = relayout_program();
  j["layouts"][1]["boxes"][1] = {1, 0, 8, 4, 9};
  CHECK_THAT(error(j), Catch::Contains("layouts[1].boxes: boxes[1]: dimension 1: [8, 17) is empty or outside the shape's 16"));
  j = relayout_program();
  j["layouts"][1]["boxes"] = {{1, 0, 8, 4, 8}, {0, 0, 0, 4, 8}};
  CHECK_THAT(error(j), Catch::Contains("ascending core order"));
  j = relayout_program();
  j["relayouts"][0]["moves"][0]["to"] = 2;
  CHECK_THAT(error(j), Catch::Contains("relayouts[0].moves[0].to: expected < 2 (the number of layouts)"));
  j = relayout_program();
  j["cores"][0]["items"][2]["id"] = 1;
  CHECK_THAT(error(j), Catch::Contains("cores[0].items[2].id: expected < 1 (the number of relayouts)"));
  j = relayout_program();
  j["cores"][0]["items"][1]["bytes"] = 16;  // the target buffer is too small for core 0's box
  CHECK_THAT(error(j), Catch::Contains("relayout 0 target buffer 'cols' holds 16 bytes but the operation needs 64"));
  j = relayout_program();
  j["relayouts"][0]["moves"][0]["speed"] = 1;
  CHECK_THAT(error(j), Catch::Contains("speed"));
  j = relayout_program();
  j["cores"].push_back({{"core", 2}, {"items", {{{"op", "relayout"}, {"id", 0}}}}});
  try {
    sim::parse_program(j, "p.json", test::config(test::exchange_config(3)));
    FAIL("no error");
  } catch (const ProgramError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cores[2].items[0].id: core 2 holds no box of relayout 0's layouts"));
  }
}

TEST_CASE("relayout: a compiled model's relayouts time the same through JSON as built directly", "[relayout]") {
  const sim::Config cfg = test::config(test::exchange_config(8));
  const ir::Workload w = test::mlp_workload();
  const compiler::Compiled c = compiler::compile(w, cfg, compiler::CompileOptions{});
  REQUIRE(!c.program.relayouts.empty());
  const Json j = c.program.json();
  CHECK(j["relayouts"].size() == c.program.relayouts.size());
  const Json via_json = sim::simulate(cfg, sim::parse_program(j, "mlp", cfg)).results;
  const Json direct = sim::simulate(cfg, c.program.program(cfg)).results;
  CHECK(via_json["total_cycles"] == direct["total_cycles"]);
  CHECK(via_json["messages"] == direct["messages"]);
  CHECK(via_json["work_items"] == direct["work_items"]);
  CHECK(direct["relayout_steps_peak"].get<std::uint64_t>() > 0);
}

TEST_CASE("relayout: the DMA engine runs a compiled model's relayouts exactly as the items they stand for", "[relayout]") {
  // The reference (SimOptions::relayouts_by_items) runs each step as an item on the core's thread
  // and matches messages by (source, destination); the engine runs them in the fabric's event
  // loop and matches by piece. Every field of the results must agree, on the exchange and on a
  // mesh at both levels of detail, for both planners (VGM's relayouts are all-to-all).
  Json flit = test::mesh_config(4, 4);
  flit["chip"]["mesh"]["model"] = "flit";
  for (const Json& cj : {test::exchange_config(16), test::mesh_config(4, 4), flit}) {
    const sim::Config cfg = test::config(cj);
    for (const char* planner : {"t10", "vgm"}) {
      INFO(cj["name"].get<std::string>() << " " << cj["chip"].dump() << " " << planner);
      compiler::CompileOptions o;
      o.planner = planner;
      const compiler::Compiled c = compiler::compile(test::mlp_workload(), cfg, o);
      REQUIRE(!c.program.relayouts.empty());
      const sim::Program p = c.program.program(cfg);
      sim::SimOptions reference;
      reference.relayouts_by_items = true;
      const Json by_items = sim::simulate(cfg, p, reference).results;
      const Json by_engine = sim::simulate(cfg, p).results;
      CHECK(by_items["total_cycles"].get<std::uint64_t>() > 0);
      CHECK(by_engine == by_items);
    }
  }
}
