#pragma once
// T10's rTensor and compute-shift plans (docs/compiler.md). An operator's axes are split by the
// operator partition factor fop (one sub-operator per core; reduction axes are not split, so no
// core needs another core's partial sums). Each tensor inherits its spatial partition factor fs
// from fop; the cores that share a sub-tensor (s = cores / prod(fs)) form rings of prod(ft) cores
// by its temporal partition factor ft, and the sub-tensor's partitions rotate around each ring by
// the rotating pace rp of their axis: aligned across the tensors rotating on that axis and equal
// to the smallest partition length. A tensor rotates along at most one (plain) dimension.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/cost/features.h"
#include "compiler/cost/model.h"
#include "compiler/ir/graph.h"
#include "sim/config/config.h"

namespace tessera::plan {

struct Part {  // the rTensor of one operand: inputs in expression order, then the output
  std::string tensor;
  std::vector<std::int64_t> fs, ft, rp;  // per tensor dimension
  std::int64_t sharing = 1;              // cores that need each sub-tensor
  std::int64_t rings = 1;                // sharing / prod(ft): copies of each sub-tensor
  int rot_dim = -1;                      // the rotating dimension, -1 if stationary
  int rot_axis = -1;                     // its axis (index into Plan::axes)
  std::int64_t window_chunks = 1;        // chunks of rp held per core along rot_dim
  std::vector<int> share_axes;           // axes (fop > 1) the tensor lacks: ring formation order
  Bytes bytes_per_core = 0;              // what one core holds
  std::vector<std::int64_t> window, stride;  // per dimension: a core's box extent, and the
                                             // distance between neighbouring cores' boxes
  Bytes shift_bytes = 0;                 // bytes one core sends per rotation
};

// Priced by the cost model (analytical, or calibrated: compiler/cost) from the analytical terms.
struct Cost {
  cost::Terms terms;             // analytical terms (input: the default gather; setup: none)
  double compute_cycles = 0, shift_cycles = 0, sync_cycles = 0;
  double input_cycles = 0;       // gathering activations into this plan's layout (re-layout)
  double total_cycles = 0;
  Bytes memory_bytes = 0;        // per core, every operand (the shift buffer is reserved apart)
  Bytes shift_bytes_per_step = 0;
  std::int64_t syncs = 0;
};

struct Plan {
  std::vector<std::string> axes;  // expr.all_axes()
  std::vector<std::int64_t> extent, fop, len, pace, steps_on;  // per axis
  std::vector<int> loop;          // rotating axes, outer to inner
  std::vector<Part> parts;
  std::int64_t cores = 1, steps = 1;
  double padding_ratio = 1;       // smallest |X| / |X padded| over the operands
  // VGM only: the sub-operator runs in `rounds` load-compute rounds along a reduction axis, so
  // that its operands fit beside the VGM reservation (partial sums stay in the output buffer).
  int round_axis = -1;
  std::int64_t rounds = 1;
  // T10 idle layouts only: the weights striped evenly over all cores (the leanest layout any
  // operator can keep them in between uses; never an active plan).
  bool weights_striped = false;
  Cost cost;
  std::string describe() const;   // "fop[m:2,k:1,n:4] A:ft[1,4] B:ft[2,1] rp[k:2] 4 steps"
  // Same factors (and so the same layouts and steps) as `o`, for plans of one operator.
  bool same_as(const Plan& o) const;
};

struct Rotation {  // a choice for one input: rotate dimension `dim` with temporal factor `ft`
  int dim = -1;
  std::int64_t ft = 1;
};

// Target and cost parameters of plan search.
struct Target {
  const sim::Config* config = nullptr;
  std::int64_t cores = 0;             // cores available to one operator
  Bytes shift_buffer_bytes = 8192;    // T10's bounded shift buffer
  double min_parallelism = 0.5;       // fraction of cores a plan must use (relaxed if none can)
  double min_padding_ratio = 0.9;     // |X| / |X padded| for every operand (relaxed if none can)
  const cost::Model* model = nullptr; // prices the analytical terms; null: analytical weights
  const cost::ClassModel& model_for(const ir::Operator& op) const {
    return model ? model->for_op(op) : cost::analytical();
  }
};

// Builds the plan for given factors; nullopt with `why` set when they break a rule (divisibility
// of ft into the sharing degree, alignment of paces on an axis, non-plain rotation, ...).
std::optional<Plan> make_plan(const ir::Operator& op, const ir::Workload& w,
                              const std::map<std::string, std::int64_t>& fop,
                              const std::vector<Rotation>& rotations, const Target& target,
                              std::string* why = nullptr);

// Analytical terms (cycles, bytes) from the simulator's compute model and the config's links,
// priced by the target's cost model. The input term is left to the caller.
Cost estimate(const Plan& p, const ir::Operator& op, const Target& target);
// Sets the priced cycles of `c` from its terms (input included, setup left out: the schedule adds it).
void price(Cost& c, const cost::ClassModel& m);

// Split factors worth trying for an axis of `extent` on `cores` cores (docs/compiler.md,
// "Enumeration and filters"): divisors of the extent and powers of two, one or two per distinct
// piece length (the smallest factor, and the one with the most factors of two), each within the
// padding bound; ascending.
std::vector<std::int64_t> fop_candidates(std::int64_t extent, std::int64_t cores, double min_padding_ratio);
// Whether every axis of `p` is split by the first factor fop_candidates keeps for its piece
// length (not the second, the one with the most factors of two): the plans the enumeration
// made before it kept second factors (the search runs on those alone too: schedule.cpp).
bool first_factors(const Plan& p, std::int64_t cores);
// Every plan passing the filters (relaxed step by step until some plan passes).
std::vector<Plan> enumerate_plans(const ir::Operator& op, const ir::Workload& w, const Target& t,
                                  bool allow_rotation = true, std::size_t* space_size = nullptr);
// The same plan run in `rounds` rounds along reduction axis `axis` (VGM sub-operator sizing).
Plan with_rounds(const Plan& p, const ir::Operator& op, const ir::Workload& w, int axis,
                 std::int64_t rounds, const Target& t);
// One round of a plan in rounds (p.rounds > 1): the first slice of the round axis, computed in
// one step. Lowering runs every round as this plan at its offset; the collage prices it.
Plan one_round(const Plan& p);
// Non-dominated plans in (time, memory), fastest first.
std::vector<Plan> pareto_front(std::vector<Plan> plans);

// Per-core cycles of one step's compute (used by the cost model and by lowering).
struct StepCompute {
  std::string kind;  // program compute kind: matmul, a vector op, reduce_sum, softmax, ...
  std::int64_t batch = 1, m = 1, k = 1, n = 1, elements = 1, rows = 1, cols = 1;
  Cycles cycles = 0;
};
StepCompute step_compute(const Plan& p, const ir::Operator& op, const sim::Config& cfg);

// Block lengths per dimension of a tensor striped over `cores` cores (lower::stripes): activations
// split outer dimensions first, weights inner ones first.
std::vector<std::int64_t> stripe_parts(const ir::Tensor& t, std::size_t cores);  // cores per dimension
std::vector<std::int64_t> stripe_block(const ir::Tensor& t, std::size_t cores);
// Expected number of source boxes (a grid of `block` per dimension) that one core's window of
// `dst` intersects: the messages a core receives to gather it.
double gather_messages(const Part& dst, const std::vector<std::int64_t>& block, const std::vector<std::int64_t>& shape);

// Latency of one barrier over a plan's `cores` (a group spanning chips costs the system's).
Cycles sync_latency_cycles(const sim::Config& cfg, std::int64_t cores);

// Cycles to move `bytes` between two cores as the analytical model sees the fabric.
double transfer_cycles(const sim::Config& cfg, Bytes bytes);

}  // namespace tessera::plan
