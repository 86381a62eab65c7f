// The paper's worked examples as tests: rTensor factors (Fig. 6), the two-core matmul plans
// (Fig. 3), the pace alignment rule (Fig. 7) and the 3x3 placement (Fig. 10) — each plan is
// lowered, run on the simulator carrying real values, and compared with a reference evaluation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "compiler/compile.h"
#include "compiler/plan/rtensor.h"
#include "sim/simulate.h"
#include "test/support.h"

using namespace tessera;

namespace {

struct Rig {
  sim::Config cfg;
  ir::Workload w;
  plan::Target target;
  explicit Rig(std::uint32_t cores, std::uint64_t sram = 65536) {
    Json c = test::exchange_config(cores);
    c["chip"]["core"]["sram_bytes"] = sram;
    cfg = sim::parse_config(c, "test config");
    target.config = &cfg;
    target.cores = cores;
  }
  void matmul(std::int64_t M, std::int64_t K, std::int64_t N) {
    w.name = "mm";
    w.add_tensor("A", {M, K}, ir::TensorRole::Input);
    w.add_tensor("B", {K, N}, ir::TensorRole::Weight);
    w.add_op("mm", "C[m,n] += A[m,k] * B[k,n]");
    w.finalize();
  }
  plan::Plan plan(std::map<std::string, std::int64_t> fop, std::vector<plan::Rotation> rot) {
    std::string why;
    auto p = plan::make_plan(w.ops()[0], w, fop, rot, target, &why);
    INFO(why);
    REQUIRE(p);
    return *p;
  }
  // Lowers `p` for the single operator (functional), simulates, returns results.
  Json run(const plan::Plan& p, Json* program = nullptr, const std::function<void(Json&)>& edit = {}) {
    schedule::Schedule s;
    s.planner = "t10";
    s.ops.push_back(schedule::OpSchedule{p, p, 0, 1, {}, {}});
    lower::Options lo;
    lo.functional = true;
    Json prog = lower::lower(w, s, cfg, lo).json();
    if (edit) edit(prog);
    if (program) *program = prog;
    sim::ProgramOptions po;
    po.functional = true;
    return sim::simulate(cfg, sim::parse_program(prog, "test", cfg, po)).results;
  }
  double max_error(const Json& results) {
    double worst = 0;
    for (const auto& [name, ref] : lower::reference_outputs(w)) {
      auto got = results["outputs"][name]["values"].get<std::vector<float>>();
      REQUIRE(got.size() == ref.size());
      for (std::size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, double(std::abs(got[i] - ref[i])));
    }
    return worst;
  }
};

std::uint64_t main_tag(const Json& prog) {
  for (std::size_t t = 0; t < prog["tags"].size(); ++t)
    if (prog["tags"][t]["op"] == "mm" && prog["tags"][t]["phase"] == "main") return t;
  FAIL("no main tag");
  return 0;
}

std::uint64_t count_sends(const Json& prog, std::uint64_t core, std::uint64_t* bytes = nullptr) {
  std::uint64_t n = 0;
  for (const auto& it : prog["cores"][core]["items"])
    if (it["op"] == "send" && it["tag"] == main_tag(prog)) {
      ++n;
      if (bytes) *bytes += it["bytes"].get<std::uint64_t>();
    }
  return n;
}

}  // namespace

TEST_CASE("Fig. 6: spatial and temporal factors give rings, replication and steps", "[plan]") {
  // A[m,k] of [2,8] on 8 cores: fop m:2 and n:4, so fs_A = [2,1] and 4 cores share each
  // sub-tensor (they differ in n).
  Rig r(8);
  r.matmul(2, 8, 4);
  auto b = r.plan({{"m", 2}, {"n", 4}}, {plan::Rotation{1, 2}});
  const plan::Part& a = b.parts[0];
  CHECK(a.fs == std::vector<std::int64_t>{2, 1});
  CHECK(a.sharing == 4);
  CHECK(a.ft == std::vector<std::int64_t>{1, 2});
  CHECK(a.rings == 2);  // 4 / 2: two rings of two cores, each holding its own copy
  CHECK(a.bytes_per_core == 1 * 4 * 2);  // 8 / 2 elements of k, fp16
  // Total memory = rings x |A|.
  CHECK(a.bytes_per_core * b.cores == Bytes(a.rings) * 2 * 8 * 2);
  auto c = r.plan({{"m", 2}, {"n", 4}}, {plan::Rotation{1, 4}});
  CHECK(c.parts[0].rings == 1);
  CHECK(c.pace[2] == 2);  // k is axis 2 (m, n, k); 8 / 4 elements per step
  CHECK(c.steps == 4);
  // ft must divide the sharing degree.
  std::string why;
  CHECK_FALSE(plan::make_plan(r.w.ops()[0], r.w, {{"m", 2}, {"n", 4}}, {plan::Rotation{1, 3}}, r.target, &why));
  CHECK(why.find("does not divide") != std::string::npos);
  CHECK(r.max_error(r.run(c)) < 1e-4);
}

TEST_CASE("Fig. 3: two-core matmul, replicated vs rotated weights", "[plan]") {
  Rig r(2);
  r.matmul(32, 64, 16);  // |W| = 64 x 16 fp16 = 2048 bytes
  auto rep = r.plan({{"m", 2}}, {});
  auto rot = r.plan({{"m", 2}}, {plan::Rotation{}, plan::Rotation{0, 2}});
  CHECK(rep.steps == 1);
  CHECK(rep.parts[1].bytes_per_core == 2048);  // both cores hold all of W: 2x in total
  CHECK(rot.steps == 2);
  CHECK(rot.parts[1].bytes_per_core == 1024);  // W split: 1x in total
  CHECK(rot.parts[1].shift_bytes == 1024);     // one shift of |W|/2 per core per step
  Json p1, p2;
  CHECK(r.max_error(r.run(rep, &p1)) < 1e-4);
  CHECK(count_sends(p1, 0) == 0);
  CHECK(r.max_error(r.run(rot, &p2)) < 1e-4);
  std::uint64_t bytes = 0;
  CHECK(count_sends(p2, 0, &bytes) == 2);  // 2 steps (the second restores the layout)
  CHECK(bytes == 2048);
}

TEST_CASE("Fig. 7: paces align on a shared axis", "[plan]") {
  Rig r(8);
  r.matmul(2, 8, 4);
  // A partitions of 2 (ft 4), B partitions of 4 (ft 2): rp = 2, 8 / 2 = 4 steps.
  auto p = r.plan({{"m", 2}, {"n", 4}}, {plan::Rotation{1, 4}, plan::Rotation{0, 2}});
  CHECK(p.pace[2] == 2);
  CHECK(p.steps == 4);
  CHECK(p.parts[1].window_chunks == 2);
  CHECK(r.max_error(r.run(p)) < 1e-4);
  // A hand-made unaligned program: each step computes on B's partition length (4 of k) while A
  // rotates 2 at a time; A's window does not hold what the sub-task reads, so the result is wrong.
  auto unaligned = [](Json& prog) {
    for (auto& core : prog["cores"])
      for (auto& it : core["items"])
        if (it["op"] == "compute" && it.contains("eval") && it["eval"]["ranges"].size() == 3) {
          auto& k = it["eval"]["ranges"][2];
          k[1] = k[0].get<std::int64_t>() + 4;
        }
  };
  CHECK(r.max_error(r.run(p, nullptr, unaligned)) > 0.01);
  // The planner rejects temporal factors whose partitions cannot share one pace.
  Rig q(6);
  q.matmul(2, 12, 3);
  std::string why;
  CHECK_FALSE(plan::make_plan(q.w.ops()[0], q.w, {{"m", 2}, {"n", 3}}, {plan::Rotation{1, 3}, plan::Rotation{0, 2}}, q.target, &why));
  CHECK(why.find("unaligned") != std::string::npos);
}

TEST_CASE("Fig. 10: 3x3 matmul on 9 cores, Cannon-style placement", "[plan]") {
  Rig r(9);
  r.matmul(3, 3, 3);
  auto p = r.plan({{"m", 3}, {"n", 3}}, {plan::Rotation{1, 3}, plan::Rotation{0, 3}});
  CHECK(p.steps == 3);
  Json prog;
  CHECK(r.max_error(r.run(p, &prog)) < 1e-4);
  // Each core sends one element of A and one of B per step, to one neighbour per tensor: A
  // within its row (same m), B within its column (same n).
  for (std::uint64_t c = 0; c < 9; ++c) {
    std::uint64_t bytes = 0;
    CHECK(count_sends(prog, c, &bytes) == 6);
    CHECK(bytes == 12);
    std::set<std::uint64_t> a_peers, b_peers;
    for (const auto& it : prog["cores"][c]["items"])
      if (it["op"] == "send" && it["tag"] == main_tag(prog)) (it["buffer"] == "w.B" ? b_peers : a_peers).insert(it["peer"].get<std::uint64_t>());
    REQUIRE(a_peers.size() == 1);
    REQUIRE(b_peers.size() == 1);
    CHECK(*a_peers.begin() / 3 == c / 3);  // same m row: core = 3 m + n
    CHECK(*b_peers.begin() % 3 == c % 3);  // same n column
  }
}

TEST_CASE("Rotation along an output axis and along two axes at once", "[plan]") {
  Rig r(8);
  r.matmul(8, 16, 8);
  // fop n:8: A is shared by all 8 cores and rotates along m (C holds all of m).
  auto p = r.plan({{"n", 8}}, {plan::Rotation{0, 8}});
  CHECK(p.steps == 8);
  CHECK(r.max_error(r.run(p)) < 1e-4);
  // fop m:2 n:4: A rotates on k among 4, B on n among 2: a two-level loop nest.
  auto q = r.plan({{"m", 2}, {"n", 4}}, {plan::Rotation{1, 4}, plan::Rotation{1, 2}});
  CHECK(q.loop.size() == 2);
  CHECK(r.max_error(r.run(q)) < 1e-4);
}

// OPT-13B's FFN down-projection, [512 x 20480] x [20480 x 5120] on 1472 cores: splitting n into
// pieces of 28 columns takes 183 or 184 cores (up to 189); with 183 = 3 x 61 no rotation of the
// activation (its rings divide 183) aligns with the weight's ring of 8 along k, with 184 = 8 x 23
// it does. The enumeration once kept only the smallest factor per piece length and missed the
// plan (2.4x faster on the simulator: l0.ffn.down.mm 4.46 M -> 1.87 M cycles).
TEST_CASE("fop candidates keep, per piece length, the factor with the most twos", "[plan]") {
  // By hand (docs/compiler.md, "Enumeration and filters"): divisors of 5120 = 2^10 * 5 up to
  // 1472, powers of two, the fewest pieces of ceil(5120 / ceil(5120 / q)) for q = 1472, 736, ...
  // (1280, 732, 366, 183, 92, 46, 23, 11, 5, 2, 1), one per piece length; then per length the
  // factor with the most twos: 183..189 give 28 (184 = 2^3 * 23), 366..393 give 14 (384 =
  // 2^7 * 3), 732..853 give 7 (768 = 2^8 * 3); 93 (for 56) has fewer twos than 92, and no other
  // length has a factor with more twos than its smallest.
  const std::vector<std::int64_t> want{1,   2,   4,   5,   8,   10,  11,  16,  20,  23,  32,  40,  46,  64,   80,
                                       92,  128, 160, 183, 184, 256, 320, 366, 384, 512, 640, 732, 768, 1024, 1280};
  CHECK(plan::fop_candidates(5120, 1472, 0.9) == want);
  // A stricter padding bound drops the extra factors that pad more: 384 * 14 = 5376 (0.952).
  const auto strict = plan::fop_candidates(5120, 1472, 0.96);
  CHECK(std::count(strict.begin(), strict.end(), 384) == 0);
  CHECK(std::count(strict.begin(), strict.end(), 184) == 1);  // 5152: 0.994

  Rig r(1472, 655360);
  r.matmul(512, 20480, 5120);
  std::string why;
  for (std::int64_t ring : {61, 183})
    CHECK_FALSE(plan::make_plan(r.w.ops()[0], r.w, {{"m", 8}, {"n", 183}}, {plan::Rotation{1, ring}, plan::Rotation{0, 8}},
                                r.target, &why));
  auto p = r.plan({{"m", 8}, {"n", 184}}, {plan::Rotation{1, 184}, plan::Rotation{0, 8}});
  CHECK(p.cores == 1472);
  CHECK(p.steps == 184);
  CHECK(p.pace[2] == 112);  // axes m, n, k: 20480 / 184 = 111.3, rounded up
  bool found = false;
  for (const auto& q : plan::enumerate_plans(r.w.ops()[0], r.w, r.target)) found = found || q.same_as(p);
  CHECK(found);
}

TEST_CASE("shift pieces counted by size agree with the pieces listed, for every plan", "[plan]") {
  // Planning prices a rotation from the pieces counted by size when its chunk is larger than a
  // core (lower::shift_piece_counts: split()'s recursion counted, not made); here both forms of
  // every rotation of every candidate plan, with shift buffers that split rows and cut them.
  for (Bytes buffer : {Bytes{64}, Bytes{96}, Bytes{1000}, Bytes{4096}}) {
    Rig r(16, 1 << 20);
    r.matmul(48, 200, 36);
    std::size_t rotations = 0;
    for (const auto& p : plan::enumerate_plans(r.w.ops()[0], r.w, r.target))
      for (std::size_t k = 0; k < p.parts.size(); ++k) {
        std::map<Bytes, std::int64_t> listed;
        for (Bytes b : lower::shift_pieces(p, r.w.ops()[0], k, buffer)) ++listed[b];
        std::map<Bytes, std::int64_t> counted;
        for (const auto& [b, n] : lower::shift_piece_counts(p, r.w.ops()[0], k, buffer)) counted[b] += n;
        INFO("buffer " << buffer << ", part " << k);
        CHECK(listed == counted);
        rotations += !listed.empty();
      }
    CHECK(rotations > 10);
  }
}

TEST_CASE("a matmul of 2^20 on every side is named as not fitting at once", "[plan]") {
  // 2 TiB per operand: before, pricing its plans' rotations piece by piece took minutes and
  // gigabytes before the same error
  ir::Workload w;
  w.name = "huge";
  w.add_tensor("X", {1 << 20, 1 << 20}, ir::TensorRole::Input);
  w.add_tensor("W", {1 << 20, 1 << 20}, ir::TensorRole::Weight);
  w.add_op("mm", "Y[m,n] += X[m,k] * W[k,n]");
  w.finalize();
  const sim::Config cfg = sim::load_config(std::string(TESSERA_SOURCE_DIR) + "/configs/ipu-mk2.json");
  compiler::CompileOptions o;
  CHECK_THROWS_WITH(compiler::compile(w, cfg, o), Catch::Contains("workload 'huge' does not fit (t10 planner)"));
}
