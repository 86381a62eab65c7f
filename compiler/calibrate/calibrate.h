#pragma once
// Calibration of the cost model from simulator timings (docs/cost.md). Operator shapes are drawn
// at random per class (aligned and unaligned, small and large), each shape's candidate T10 plans
// are enumerated as the planner does, and a few plans per shape (the analytical favourite, and
// others from the Pareto front and the whole space) run alone on the simulator: the operator's
// inputs start striped over the cores, its weights in a lean, striped or the active layout. The
// fit uses three shapes in four; the fourth is held out to measure how the model predicts shapes
// it has not seen (MAPE, R2, and Kendall's tau over each held-out shape's plans).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/cost/model.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/rtensor.h"
#include "sim/config/config.h"

namespace tessera::cost {

struct Sample {
  std::string cls;
  std::size_t config = 0;      // index of its config (fitted ones first, then held-out ones)
  std::size_t shape = 0;       // index of the shape (its plans share it)
  bool held_out = false;       // a held-out shape of a fitted config
  bool held_out_config = false;  // a sample of a held-out config (never fitted)
  std::string expr, plan;      // the operator as written, the plan as described
  Terms terms;                 // analytical terms: the features
  double simulated_cycles = 0;
};

struct CalibrateOptions {
  std::vector<std::string> classes = op_classes();
  std::size_t samples = 720;       // simulator runs in all, split evenly over the classes
  std::size_t plans_per_shape = 4;
  std::uint64_t seed = 1;
  Bytes shift_buffer_bytes = 8192;
  std::function<void(const std::string&)> progress;  // one line per step, if set
  // The config the samples run on, when it is not the one the features are computed from: a
  // hidden hardware change the fit must find (tests plant costs this way). Null: the same config.
  const sim::Config* simulated_config = nullptr;
};

struct Calibration {
  Model model;
  std::vector<Sample> samples;
};

Calibration calibrate(const sim::Config& cfg, const CalibrateOptions& o);
// A config family: fitted on samples of every config of `fitted` (o.samples split evenly over
// them), measured on held-out shapes of those and on as many samples of each `held_out` config.
Calibration calibrate(const std::vector<const sim::Config*>& fitted, const std::vector<const sim::Config*>& held_out,
                      const CalibrateOptions& o);

// Runs a small workload on the simulator with the given active and idle plan per operator; fills
// the sample's terms and simulated cycles from its last operator. Throws lower::FitError when it
// does not fit.
void run_alone(const ir::Workload& w, const std::vector<plan::Plan>& active, const std::vector<plan::Plan>& idle,
               const plan::Target& t, Sample& s, const sim::Config* simulated_config = nullptr);

// The one-operator workload of `op` of `w`: its activation inputs become model inputs, its weights
// stay weights.
ir::Workload single_op(const ir::Workload& w, const ir::Operator& op);

// Candidate plans of a one-operator workload's operator that calibration and validation run:
// the analytically fastest first, then up to `count - 1` others spread over the Pareto front and
// the rest of the space (deterministic for a seed).
std::vector<plan::Plan> candidate_plans(const ir::Workload& w, const plan::Target& t, std::size_t count,
                                        std::uint64_t seed);

// Idle layouts a sample's weights may rest in: the active plan's own, the leanest plan's, and
// stripes over every core (only the first when operator 0 has no weights).
std::vector<plan::Plan> idle_choices(const ir::Workload& w, const plan::Plan& active, const plan::Target& t);

}  // namespace tessera::cost
