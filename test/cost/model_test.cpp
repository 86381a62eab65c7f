// The cost model: least squares recovers known weights, keeps them non-negative, Kendall's tau
// matches hand-counted pairs, calibration files round-trip and refuse another config.
#include <catch2/catch.hpp>
#include <cstdio>

#include "compiler/cost/model.h"
#include "sim/common/error.h"
#include "test/support.h"

using namespace tessera;

namespace {

std::vector<cost::Terms> synthetic_terms(std::size_t n) {
  std::vector<cost::Terms> x;
  for (std::size_t i = 0; i < n; ++i) {
    cost::Terms t;
    t.mac_cycles = 100.0 + 37.0 * static_cast<double>(i % 11) * static_cast<double>(i % 5 + 1);
    t.steps = static_cast<double>(1 + i % 4);
    t.input_port_cycles = 50.0 + 13.0 * static_cast<double>((i * 7) % 13);
    t.input_messages = static_cast<double>(1 + (i * 3) % 7);
    t.sync_cycles = 118.0 * static_cast<double>(i % 3);
    x.push_back(t);
  }
  return x;
}

}  // namespace

TEST_CASE("the fit recovers the weights that generated the times", "[cost]") {
  const auto x = synthetic_terms(40);
  std::vector<double> y;
  // 1.25 x compute, 20 per step, 1 x sync, 1.8 x input, 30 per message, 118 constant.
  for (const auto& t : x)
    y.push_back(1.25 * t.mac_cycles + 20 * t.steps + t.sync_cycles + 1.8 * t.input_port_cycles + 30 * t.input_messages + 118);
  const cost::ClassModel m = cost::fit(x, y);
  CHECK(m.coef[cost::kMac] == Approx(1.25).margin(1e-9));
  CHECK(m.coef[cost::kSteps] == Approx(20).margin(1e-7));
  CHECK(m.coef[cost::kSync] == Approx(1).margin(1e-9));
  CHECK(m.coef[cost::kInputPort] == Approx(1.8).margin(1e-9));
  CHECK(m.coef[cost::kInputMessages] == Approx(30).margin(1e-7));
  CHECK(m.coef[cost::kConstant] == Approx(118).margin(1e-6));
  CHECK(m.coef[cost::kShift] == 0);  // shift, setup and the other gather features never vary from zero: weight 0
  CHECK(m.coef[cost::kSetupPort] == 0);
  CHECK(m.coef[cost::kInputOrder] == 0);
  CHECK(m.fit.mape < 1e-9);
  CHECK(m.fit.r2 == Approx(1.0));
  // The analytical weights miss by the hand-computable amount on one sample: compute 100,
  // 1 step, input 50 and 1 message -> simulated 125 + 20 + 90 + 30 + 118 = 383; analytical 100,
  // as it prices a gather by its messages in program order (input_order_cycles, 0 here), not
  // by its busiest port.
  CHECK(cost::analytical().predict(x[0]).total() == Approx(100));
  CHECK(m.predict(x[0]).total() == Approx(383));
}

TEST_CASE("a feature in too few samples keeps its analytical weight", "[cost]") {
  // Two of 40 samples have a setup gather (40 cycles of latency, analytical weight 1) and an
  // extra 160 cycles no feature explains. Least squares alone would weigh the latency 5 and
  // price a later setup of 50 cycles' latency at 250; held at its analytical weight it prices 50.
  auto x = synthetic_terms(40);
  std::vector<double> y;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i < 2) x[i].setup_latency_cycles = 40;
    y.push_back(1.25 * x[i].mac_cycles + 20 * x[i].steps + x[i].sync_cycles + 118 + (i < 2 ? 200 : 0));
  }
  CHECK(cost::thin_support(2, 40));
  CHECK(!cost::thin_support(5, 40));
  CHECK(cost::thin_support(2, 8));
  CHECK(!cost::thin_support(3, 8));
  const cost::ClassModel m = cost::fit(x, y);
  CHECK(m.coef[cost::kSetupLatency] == 1);
  CHECK(m.coef[cost::kMac] == Approx(1.25).epsilon(0.05));  // the unexplained 160 cycles pull a little
  cost::Terms later = x[5];
  later.setup_latency_cycles = 50;
  const double truth = 1.25 * later.mac_cycles + 20 * later.steps + later.sync_cycles + 118 + 50;
  CHECK(m.predict(later).total() == Approx(truth).epsilon(0.03));
}

TEST_CASE("the fit keeps every weight non-negative", "[cost]") {
  const auto x = synthetic_terms(30);
  std::vector<double> y;
  // Unconstrained least squares would give input a weight of -0.5.
  for (const auto& t : x) y.push_back(2 * t.mac_cycles - 0.5 * t.input_port_cycles + 300);
  const cost::ClassModel m = cost::fit(x, y);
  for (double c : m.coef) CHECK(c >= 0);
  CHECK(m.coef[cost::kInputPort] == 0);
  CHECK(m.fit.mape > 0);  // the constraint costs some accuracy
  CHECK(m.fit.mape < 0.1);
}

TEST_CASE("the prior settles collinear features on the analytical split", "[cost]") {
  // Write-back cycles are exactly 3x the fetch cycles in every sample, and the times are the
  // write-back cycles plus the vector work: fetch 3 / write-back 0 fits as exactly as the
  // analytical split, fetch 0 / write-back 1. Only the pull toward the analytical weights
  // decides between them.
  std::vector<cost::Terms> x;
  std::vector<double> y;
  for (std::size_t i = 0; i < 24; ++i) {
    cost::Terms t;
    t.fetch_cycles = 40.0 + 17.0 * static_cast<double>(i % 7) * static_cast<double>(i % 3 + 1);
    t.writeback_cycles = 3 * t.fetch_cycles;
    t.vector_cycles = 500.0 + 61.0 * static_cast<double>((i * 5) % 11);
    x.push_back(t);
    y.push_back(t.writeback_cycles + t.vector_cycles);
  }
  const cost::ClassModel plain = cost::fit(x, y);
  CHECK(plain.fit.mape < 1e-9);
  CHECK(plain.coef[cost::kFetch] == Approx(3));  // without the pull: the first of the equal columns
  const cost::ClassModel pulled = cost::fit(x, y, 0.01);
  CHECK(pulled.prior_strength == 0.01);
  CHECK(pulled.coef[cost::kWriteback] == Approx(1).epsilon(1e-6));
  CHECK(pulled.coef[cost::kFetch] == Approx(0).margin(1e-6));
  CHECK(pulled.coef[cost::kVector] == Approx(1).epsilon(1e-6));
  CHECK(pulled.fit.mape < 1e-9);
}

TEST_CASE("the fit refuses empty or non-positive samples", "[cost]") {
  CHECK_THROWS_WITH(cost::fit({}, {}), Catch::Contains("at least one"));
  CHECK_THROWS_WITH(cost::fit({cost::Terms{}}, {0.0}), Catch::Contains("sample 0 has simulated time 0"));
}

TEST_CASE("Kendall's tau-b counts concordant and discordant pairs", "[cost]") {
  // One swapped pair among 6: (5 - 1) / 6.
  CHECK(cost::kendall_tau({1, 2, 3, 4}, {10, 30, 20, 40}) == Approx(4.0 / 6.0));
  CHECK(cost::kendall_tau({1, 2, 3}, {3, 2, 1}) == Approx(-1.0));
  // A tie in the first series: 2 concordant, 0 discordant, 1 tie -> 2 / sqrt(3 * 2).
  CHECK(cost::kendall_tau({1, 1, 2}, {1, 2, 3}) == Approx(2.0 / std::sqrt(6.0)));
  CHECK(cost::kendall_tau({5, 5}, {1, 2}) == 0.0);
}

TEST_CASE("operators fall into classes by their expression", "[cost]") {
  ir::Workload w;
  w.add_tensor("X", {8, 16}, ir::TensorRole::Input);
  w.add_tensor("W", {16, 4}, ir::TensorRole::Weight);
  w.add_tensor("I", {1, 2, 6, 6}, ir::TensorRole::Input);
  w.add_tensor("K", {3, 2, 3, 3}, ir::TensorRole::Weight);
  w.add_tensor("O", {1, 3, 4, 4}, ir::TensorRole::Activation);
  CHECK(cost::op_class(w.add_op("mm", "Y[m,n] += X[m,k] * W[k,n]")) == "matmul");
  CHECK(cost::op_class(w.add_op("cv", "O[n,f,y,x] += I[n,c,y+ky,x+kx] * K[f,c,ky,kx]")) == "conv");
  CHECK(cost::op_class(w.add_op("r", "R[m,n] = relu(Y[m,n])")) == "elementwise");
  CHECK(cost::op_class(w.add_op("s", "S[m] += R[m,n]")) == "reduce");
  CHECK(cost::op_class(w.add_op("sm", "P[m,n] = softmax(R[m,n])")) == "softmax");
  CHECK(cost::op_class(w.add_op("ln", "L[m,n] = layernorm(P[m,n])")) == "layernorm");
}

TEST_CASE("a calibration file round-trips and belongs to its config", "[cost]") {
  const sim::Config a = sim::parse_config(test::exchange_config(16), "a");
  Json renamed = test::exchange_config(16);
  renamed["name"] = "renamed copy";
  CHECK(sim::parse_config(renamed, "r").fingerprint == a.fingerprint);
  Json bigger = test::exchange_config(16);
  bigger["chip"]["core"]["sram_bytes"] = 131072;  // the architect changed the SRAM size
  const sim::Config b = sim::parse_config(bigger, "b");
  CHECK(b.fingerprint != a.fingerprint);

  cost::Model m;
  m.configs = {{a.name, a.fingerprint}};
  m.seed = 7;
  m.samples = 3;
  cost::ClassModel cm;
  cm.calibrated = true;
  cm.coef = {1.5, 2, 1, 0.5, 1, 1.75, 12.5, 0.25, 1.1, 1, 0, 0.75, 3, 1, 1, 0.5, 0, 0, 7, 1, 1, 118};
  cm.fit.samples = 3;
  cm.fit.mape = 0.01;
  m.classes["matmul"] = cm;
  const std::string path = "/tmp/tessera-model-test-calibration.json";
  cost::save_calibration(path, m);
  const cost::Model back = cost::load_calibration(path, a);
  REQUIRE(back.classes.count("matmul") == 1);
  CHECK(back.classes.at("matmul").coef == cm.coef);
  CHECK(back.for_class("matmul").calibrated);
  CHECK_FALSE(back.for_class("conv").calibrated);  // missing classes stay analytical
  CHECK(back.for_class("conv").coef == cost::analytical().coef);

  CHECK_THROWS_WITH(cost::load_calibration(path, b), Catch::Contains("fitted on config 'test-exchange'") &&
                                                         Catch::Contains("recalibrate"));
  CHECK_NOTHROW(cost::load_calibration(path, b, /*force=*/true));

  auto write = [&path](const Json& doc) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(doc.dump().c_str(), f);
    std::fclose(f);
  };
  Json j = m.to_json();
  j["classes"]["matmul"]["coefficients"]["input_port_cycles"] = -1.0;
  write(j);
  CHECK_THROWS_WITH(cost::load_calibration(path, a), Catch::Contains("input_port_cycles") && Catch::Contains(">= 0"));
  j = m.to_json();
  j["classes"]["matmull"] = j["classes"]["matmul"];
  write(j);
  CHECK_THROWS_WITH(cost::load_calibration(path, a), Catch::Contains("matmull") && Catch::Contains("unknown operator class"));
  std::remove(path.c_str());
}
