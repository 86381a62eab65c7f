// The candidate fronts kept across compiles (schedule::FrontCache): one entry per distinct
// operator, reused by a later compile of the same operators under other names, and never
// answered for another config, another option or the oracle's prices.
#include <catch2/catch.hpp>

#include "compiler/compile.h"
#include "test/support.h"

using namespace tessera;

namespace {

// Three matmuls: the first reads the model input, the other two are the same operator (an
// activation times a 128x128 weight) under different names: two distinct signatures.
ir::Workload mlp(const std::string& prefix) {
  ir::Workload w;
  w.name = prefix + "mlp";
  w.add_tensor(prefix + "A", {64, 128}, ir::TensorRole::Input);
  for (int i = 1; i <= 3; ++i) w.add_tensor(prefix + "B" + std::to_string(i), {128, 128}, ir::TensorRole::Weight);
  w.add_op(prefix + "mm1", prefix + "X[m,n] += " + prefix + "A[m,k] * " + prefix + "B1[k,n]");
  w.add_op(prefix + "mm2", prefix + "Y[m,n] += " + prefix + "X[m,k] * " + prefix + "B2[k,n]");
  w.add_op(prefix + "mm3", prefix + "Z[m,n] += " + prefix + "Y[m,k] * " + prefix + "B3[k,n]");
  w.finalize();
  return w;
}

std::vector<std::string> plans(const schedule::Schedule& s) {
  std::vector<std::string> out;
  for (const auto& op : s.ops) out.push_back(op.active.describe() + " / " + op.idle.describe());
  return out;
}
std::vector<std::string> plans(const compiler::Compiled& c) { return plans(c.schedule); }

}  // namespace

TEST_CASE("front cache: one entry per distinct operator, reused under other names, scoped by config and options") {
  const sim::Config cfg8 = sim::parse_config(test::exchange_config(8), "test config");
  const sim::Config cfg4 = sim::parse_config(test::exchange_config(4), "test config");
  schedule::FrontCache cache;
  compiler::CompileOptions shared;
  shared.fronts = &cache;
  const compiler::CompileOptions alone;

  const ir::Workload a = mlp(""), b = mlp("other_");
  const auto first = compiler::compile(a, cfg8, shared);
  CHECK(cache.size() == 2);  // mm2 and mm3 share one front
  CHECK(plans(first) == plans(compiler::compile(a, cfg8, alone)));
  const auto renamed = compiler::compile(b, cfg8, shared);
  CHECK(cache.size() == 2);
  CHECK(plans(renamed) == plans(compiler::compile(b, cfg8, alone)));
  CHECK(renamed.schedule.predicted_cycles == first.schedule.predicted_cycles);

  // Another core count: new entries, and the plans an uncached compile picks (which differ
  // from the 8-core ones, so an answer from the wrong scope would show).
  const auto four = compiler::compile(a, cfg4, shared);
  CHECK(cache.size() == 4);
  CHECK(plans(four) == plans(compiler::compile(a, cfg4, alone)));
  CHECK(plans(four) != plans(first));

  // Another option the fronts depend on: a 64-byte shift buffer splits every rotation into
  // more pieces and reserves less memory, and the schedule differs (8,688 predicted cycles
  // against 9,712 when this was written), so an answer from the wrong scope would show.
  compiler::CompileOptions small_buffer = shared;
  small_buffer.shift_buffer_bytes = 64;
  compiler::CompileOptions small_buffer_alone;
  small_buffer_alone.shift_buffer_bytes = 64;
  const auto small = compiler::compile(a, cfg8, small_buffer);
  CHECK(cache.size() == 6);
  CHECK(plans(small) == plans(compiler::compile(a, cfg8, small_buffer_alone)));
  CHECK(small.schedule.predicted_cycles == compiler::compile(a, cfg8, small_buffer_alone).schedule.predicted_cycles);
  CHECK(small.schedule.predicted_cycles != first.schedule.predicted_cycles);

  // The oracle's prices are not kept.
  compiler::CompileOptions oracle = shared;
  oracle.model.simulate = true;
  compiler::compile(a, cfg8, oracle);
  CHECK(cache.size() == 6);
}

namespace {

// Each candidate as its predicted cycles and its plans.
std::vector<std::string> described(const std::vector<schedule::Schedule>& cands) {
  std::vector<std::string> out;
  for (const auto& s : cands) {
    std::string d = std::to_string(s.predicted_cycles);
    for (const auto& p : plans(s)) d += " | " + p;
    out.push_back(d);
  }
  return out;
}

}  // namespace

TEST_CASE("search memo: one memo kept across searches at other reserves answers as a fresh search") {
  const sim::Config cfg = sim::parse_config(test::exchange_config(8), "test config");
  const ir::Workload w = mlp("");
  schedule::Options o;
  o.target.config = &cfg;
  o.target.cores = static_cast<std::int64_t>(cfg.total_cores());
  auto fresh = [&](Bytes reserve) {
    schedule::Options f = o;
    f.reserve_bytes = reserve;
    return described(schedule::schedule_t10_candidates(w, f));
  };
  schedule::SearchMemo memo;
  schedule::Options shared = o;
  shared.memo = &memo;
  CHECK(described(schedule::schedule_t10_candidates(w, shared)) == fresh(0));
  REQUIRE(memo.state != nullptr);
  // A reserve that changes the schedule (the memo must not carry the plans of the roomier
  // search over), found by growing it until the fastest schedule differs or nothing fits.
  const auto roomy = fresh(0);
  Bytes reserve = 0;
  std::vector<std::string> tight;
  for (Bytes r = 1024; r < cfg.chip.core.sram_bytes; r += 1024) {
    try {
      tight = fresh(r);
    } catch (const schedule::DoesNotFit&) {
      break;
    }
    if (tight.front() != roomy.front()) {
      reserve = r;
      break;
    }
  }
  REQUIRE(reserve > 0);
  shared.reserve_bytes = reserve;
  CHECK(described(schedule::schedule_t10_candidates(w, shared)) == tight);
  shared.reserve_bytes = 0;
  CHECK(described(schedule::schedule_t10_candidates(w, shared)) == roomy);
}
