#pragma once
// The compiler's model of one operator's time (docs/cost.md). The analytical model (compiler/plan,
// compiler/schedule) splits an operator's time into terms computed from the simulator's compute
// model and the config's link figures. The cost model weights those terms, plus a per-step and a
// constant term, with coefficients per operator class. Uncalibrated, the weights are the
// analytical ones (1 per term, 0 for steps and the constant); a calibration file (fitted on
// isolated simulator runs by compiler/cost/calibrate) replaces them class by class.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "sim/common/json_reader.h"
#include "sim/config/config.h"

namespace tessera::cost {

// Analytical terms of one operator's time (cycles): the features of the cost model.
struct Terms {
  double compute_cycles = 0;  // steps x one step's compute (the simulator's compute model)
  double steps = 0;           // compute steps per core
  double shift_cycles = 0;    // rotations: transfer through the shift buffer, copy out of it
  // The same replayed: per piece at its real size, its barrier, one ring round of the plan's
  // sends on the interconnect model, the copy (the syncs of the pieces included).
  double shift_exchange_cycles = 0;
  double sync_cycles = 0;     // one barrier per rotated piece, at the config's sync latency
  double input_cycles = 0;    // gathering activation inputs into the plan's layout
  double input_messages = 0;  // source boxes each core gathers its inputs from
  // The same gather replayed message by message on the interconnect model (compiler/cost/
  // exchange.h): port and link contention and data already in place included. Computed only
  // where a model weighs it or a calibration records it (0 otherwise).
  double input_exchange_cycles = 0;
  double setup_cycles = 0;    // weights from their idle layout into the active one
  double setup_messages = 0;  // source boxes each core gathers its weights from
  double setup_exchange_cycles = 0;  // the setup gather replayed
};

// Feature order (coefficient indices): the eleven terms and a constant.
enum Feature : std::size_t {
  kCompute, kSteps, kShift, kShiftExchange, kSync, kInput, kInputMessages, kInputExchange, kSetup, kSetupMessages,
  kSetupExchange, kConstant, kFeatures
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

struct ClassModel {
  Vec coef{1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0};  // analytical weights (the replays unweighted)
  bool calibrated = false;
  FitStats fit, held_out;
  Breakdown predict(const Terms& t) const;
};

// Operator classes with a model of their own: matmul (contractions over plain indices), conv
// (contractions with compound indices), elementwise, reduce (sums, max, pooling), softmax, layernorm.
const std::vector<std::string>& op_classes();
std::string op_class(const ir::Operator& op);

struct Model {
  std::map<std::string, ClassModel> classes;  // missing classes are analytical
  // Provenance (calibrated models).
  std::string config_name, config_fingerprint;
  std::uint64_t seed = 0;
  std::size_t samples = 0;
  bool calibrated() const { return !classes.empty(); }
  const ClassModel& for_class(const std::string& cls) const;
  const ClassModel& for_op(const ir::Operator& op) const { return for_class(op_class(op)); }
  Json to_json() const;
};

// The analytical model's weights.
const ClassModel& analytical();

// Reads a calibration file; fitted on another config (fingerprint differs) is an error naming both
// unless `force`.
Model load_calibration(const std::string& path, const sim::Config& cfg, bool force = false);
void save_calibration(const std::string& path, const Model& m);

// Least squares on relative error (each sample weighted by 1 / simulated), with non-negative
// weights: a negative one would reward plans for moving more bytes. Features that never vary from
// zero keep weight 0.
ClassModel fit(const std::vector<Terms>& x, const std::vector<double>& simulated);
FitStats stats(const ClassModel& m, const std::vector<Terms>& x, const std::vector<double>& simulated);
// Mean |predicted - simulated| / simulated, and 1 - SS_res / SS_tot (0 for empty series).
double mape(const std::vector<double>& predicted, const std::vector<double>& simulated);
double r2(const std::vector<double>& predicted, const std::vector<double>& simulated);
// Kendall's tau-b between two equally long series (0 when either is constant).
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tessera::cost
