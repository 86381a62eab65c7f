#pragma once
// The compiler's model of one operator's time (docs/cost.md): closed-form features of the plan
// (features.h; the planners compute them in compiler/plan and compiler/schedule), weighted per
// operator class. Uncalibrated, the weights are the analytical ones (1 for the cycle features a
// step or a transfer cannot avoid, 0 for the rest); a calibration file (fitted on isolated
// simulator runs by compiler/calibrate) replaces them class by class. Nothing here runs the
// simulator: `--price-by simulate` prices by an oracle outside this library (oracle.h).
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "sim/common/json_reader.h"
#include "sim/config/config.h"

namespace tessera::cost {

// Features of one operator's time (docs/cost.md, "Features"): closed-form quantities computed
// from the plan and the config (features.h), most of them in cycles at the config's rates.
struct Terms {
  // Compute: a step's compute times the steps (features.h, compute_features).
  double mac_cycles = 0, fetch_cycles = 0, writeback_cycles = 0, vector_cycles = 0;
  double steps = 0;            // compute steps per core
  double shift_cycles = 0;     // rotations: per piece, one ring round in order + its latency, and the copy out of the shift buffer
  double shift_link_cycles = 0;  // per piece, the busiest mesh link of the plan's rings
  double shift_chip_link_cycles = 0;  // per piece, the busiest chip link's time beyond the round's ordered port time
  double sync_cycles = 0;      // one barrier per rotated piece, at the config's sync latency
  double barrier_cycles = 0;   // the operator's closing barrier over all the config's cores (chip or system latency)
  // Gathering activation inputs into the plan's layout, and weights from their idle layout into
  // the active one (setup): the gather's features (features.h, GatherFeatures).
  // The chip-link terms are the busiest link between chips beyond the busiest port (0 when the
  // port is slower), so that port + chip link = the larger of the two.
  double input_port_cycles = 0, input_link_cycles = 0, input_chip_link_cycles = 0, input_order_cycles = 0,
         input_messages = 0, input_local_cycles = 0, input_latency_cycles = 0;
  double setup_port_cycles = 0, setup_link_cycles = 0, setup_chip_link_cycles = 0, setup_order_cycles = 0,
         setup_messages = 0, setup_local_cycles = 0, setup_latency_cycles = 0;
  // Not features: what `--price-by simulate` (the oracle) prices with, set only in that mode: the
  // simulator's compute model, and the shifts and gathers replayed on its network engine
  // (compiler/oracle/replay.h), with the operator's closing barrier.
  struct Oracle {
    double compute = 0, shift = 0, input = 0, setup = 0, barrier = 0;
  } oracle;
};

// Feature order (coefficient indices): the terms above and a constant.
enum Feature : std::size_t {
  kMac, kFetch, kWriteback, kVector, kSteps, kShift, kShiftLink, kShiftChipLink, kSync, kBarrier,
  kInputPort, kInputLink, kInputChipLink, kInputOrder, kInputMessages, kInputLocal, kInputLatency,
  kSetupPort, kSetupLink, kSetupChipLink, kSetupOrder, kSetupMessages, kSetupLocal, kSetupLatency,
  kConstant, kFeatures
};
using Vec = std::array<double, kFeatures>;
const std::array<const char*, kFeatures>& feature_names();
Vec features(const Terms& t);

// Predicted cycles, by the phase the simulator reports them in (docs/results.md).
struct Breakdown {
  double compute = 0, shift = 0, sync = 0, input = 0, setup = 0;
  double total() const { return compute + shift + sync + input + setup; }
};

struct FitStats {
  std::size_t samples = 0;
  double mape = 0;          // mean |predicted - simulated| / simulated
  double r2 = 0;            // 1 - SS_res / SS_tot of simulated cycles
  double kendall_tau = 0;   // mean over shapes of tau between predicted and simulated plan times
  std::size_t tau_groups = 0;
};

// The analytical weights: 1 for the cycle features that a transfer or a step cannot avoid (MACs,
// write-back, vector unit, the shift transfers and their barriers, the closing barrier, a
// gather's busiest port, what the busiest chip link adds to it, its local copies and its
// latency), 0 for the rest.
Vec analytical_weights();

struct ClassModel {
  Vec coef = analytical_weights();
  bool calibrated = false;
  bool oracle = false;  // --price-by simulate: Terms::oracle, not the features
  FitStats fit, held_out, held_out_configs;  // fitted samples, held-out shapes, held-out configs
  double prior_strength = 0;  // the fit's pull toward the analytical weights (fit(), below)
  Breakdown predict(const Terms& t) const;
};

// Operator classes with a model of their own: matmul (contractions over plain indices), conv
// (contractions with compound indices), elementwise, reduce (sums, max, pooling), softmax, layernorm.
const std::vector<std::string>& op_classes();
std::string op_class(const ir::Operator& op);

struct Model {
  std::map<std::string, ClassModel> classes;  // missing classes are analytical
  bool simulate = false;                      // every class priced by the oracle
  // Provenance (calibrated models): the configs fitted on and those held out, (name, fingerprint).
  std::vector<std::pair<std::string, std::string>> configs, held_out_configs;
  std::uint64_t seed = 0;
  std::size_t samples = 0;
  bool calibrated() const { return !classes.empty() && !simulate; }
  const ClassModel& for_class(const std::string& cls) const;
  const ClassModel& for_op(const ir::Operator& op) const { return for_class(op_class(op)); }
  Json to_json() const;
};

// The analytical model's weights.
const ClassModel& analytical();
// The oracle: every operator priced by the simulator's compute model and its network engine
// replaying the operator's transfers (`--price-by simulate`; slow, exact on isolated operators).
const ClassModel& oracle();

// Reads a calibration file; fitted on another config (fingerprint differs) is an error naming both
// unless `force`.
Model load_calibration(const std::string& path, const sim::Config& cfg, bool force = false);
void save_calibration(const std::string& path, const Model& m);

// Least squares on relative error (each sample weighted by 1 / simulated), with non-negative
// weights: a negative one would reward plans for moving more bytes. Features that never vary from
// zero keep weight 0. With prior_strength > 0 the compute features' weights are also pulled
// toward the analytical ones (a ridge penalty on the difference, in units where every feature's
// column has norm 1): MAC, fetch and write-back cycles, which move together, then keep the
// analytical split instead of trading weight for a better fit on the samples and a worse one on
// other shapes.
// A feature non-zero in fewer than 3 samples, or in under an eighth of them, is not fitted: it
// keeps its analytical weight (too few samples to tell its weight from their residuals).
ClassModel fit(const std::vector<Terms>& x, const std::vector<double>& simulated, double prior_strength = 0);
bool thin_support(std::size_t nonzero_samples, std::size_t samples);
FitStats stats(const ClassModel& m, const std::vector<Terms>& x, const std::vector<double>& simulated);
// Mean |predicted - simulated| / simulated, and 1 - SS_res / SS_tot (0 for empty series).
double mape(const std::vector<double>& predicted, const std::vector<double>& simulated);
double r2(const std::vector<double>& predicted, const std::vector<double>& simulated);
// Kendall's tau-b between two equally long series (0 when either is constant).
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tessera::cost
