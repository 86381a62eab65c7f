// Calibration end to end on a small chip: sampled operators run on the simulator, the fitted
// model fits them at least as well as the analytical one, the same seed gives the same file,
// and validation reports every operator of a model.
#include <catch2/catch.hpp>
#include <cmath>

#include "compiler/cost/calibrate.h"
#include "compiler/cost/validate.h"
#include "test/support.h"

using namespace tessera;

namespace {

sim::Config chip16() {
  Json c = test::exchange_config(16);
  c["chip"]["core"]["sram_bytes"] = 131072;
  return sim::parse_config(c, "test config");
}

cost::CalibrateOptions small_run() {  // 64 simulator runs of a few milliseconds each
  cost::CalibrateOptions o;
  o.classes = {"matmul", "elementwise"};
  o.samples = 64;
  o.plans_per_shape = 4;
  o.shift_buffer_bytes = 256;
  o.seed = 3;
  return o;
}

// Root mean square of relative errors: what the fit minimises.
double rms_relative(const cost::ClassModel& m, const std::vector<cost::Terms>& x, const std::vector<double>& y) {
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = (m.predict(x[i]).total() - y[i]) / y[i];
    s += e * e;
  }
  return std::sqrt(s / static_cast<double>(x.size()));
}

}  // namespace

TEST_CASE("a calibration fits simulated times at least as well as the analytical model", "[cost][calibrate]") {
  const sim::Config cfg = chip16();
  const cost::Calibration cal = cost::calibrate(cfg, small_run());
  CHECK(cal.model.config_fingerprint == cfg.fingerprint);
  CHECK(cal.model.samples == 64);
  for (const std::string cls : {"matmul", "elementwise"}) {
    INFO(cls);
    const cost::ClassModel& m = cal.model.for_class(cls);
    REQUIRE(m.calibrated);
    std::vector<cost::Terms> fx, hx;
    std::vector<double> fy, hy;
    for (const auto& s : cal.samples) {
      if (s.cls != cls) continue;
      CHECK(s.simulated_cycles > 0);
      (s.held_out ? hx : fx).push_back(s.terms);
      (s.held_out ? hy : fy).push_back(s.simulated_cycles);
    }
    REQUIRE(hx.size() >= 4);
    CHECK(m.fit.samples == fx.size());
    CHECK(m.held_out.samples == hx.size());
    CHECK(m.held_out.mape == Approx(cost::stats(m, hx, hy).mape));
    // The analytical weights are a feasible point of the non-negative least squares: the fit can
    // only do better on the samples it saw.
    CHECK(rms_relative(m, fx, fy) <= rms_relative(cost::analytical(), fx, fy) + 1e-12);
    // With the exchange replay, held-out shapes are predicted within the 2%.
    CHECK(m.held_out.mape < 0.02);
  }
  // Same seed, same calibration, bit for bit.
  CHECK(cost::calibrate(cfg, small_run()).model.to_json() == cal.model.to_json());
}

TEST_CASE("calibrate rejects classes it does not know and too few samples", "[cost][calibrate]") {
  const sim::Config cfg = chip16();
  cost::CalibrateOptions o = small_run();
  o.classes = {"matmul", "gemm"};
  CHECK_THROWS_WITH(cost::calibrate(cfg, o), Catch::Contains("'gemm'") && Catch::Contains("matmul, conv"));
  o = small_run();
  o.samples = 10;
  CHECK_THROWS_WITH(cost::calibrate(cfg, o), Catch::Contains("at least 8 per class"));
}

TEST_CASE("validation sets every operator's prediction beside its simulated time", "[cost][calibrate]") {
  const sim::Config cfg = chip16();
  const ir::Workload w = test::mlp_workload();
  compiler::CompileOptions co;
  co.shift_buffer_bytes = 256;
  co.model = cost::calibrate(cfg, small_run()).model;
  cost::ValidateOptions vo;
  vo.rank_ops_per_class = 1;
  vo.plans_per_op = 4;
  const cost::Validation v = cost::validate(w, cfg, co, vo);
  REQUIRE(v.ops.size() == 3);
  double sum = 0;
  for (const auto& r : v.ops) {
    CHECK(r.simulated > 0);
    sum += r.predicted;
  }
  CHECK(v.predicted_cycles == Approx(sum));
  CHECK(v.classes.at("matmul").ops == 2);
  CHECK(v.classes.at("matmul").calibrated);
  REQUIRE(v.classes.at("matmul").tau_ops == 1);
  CHECK(v.classes.at("matmul").kendall_tau >= -1.0);
  CHECK(v.classes.at("matmul").kendall_tau <= 1.0);
  // The calibrated model predicts the whole model within the 5%, and ranks the plans of
  // its costliest matmul as the simulator does.
  CHECK(std::abs(v.predicted_cycles - v.simulated_cycles) < 0.05 * v.simulated_cycles);
  CHECK(v.classes.at("matmul").kendall_tau >= 0.9);
  const Json j = cost::to_json(v);
  CHECK(j["end_to_end"]["simulated_cycles"].get<double>() == v.simulated_cycles);
}
