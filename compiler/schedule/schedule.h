#pragma once
// Whole-model scheduling. T10: each operator keeps its weights in an idle plan (little memory)
// and runs in an active plan (fast); the setup phase between them is exchange traffic. The
// holistic reconciliation (Algorithm 1 of the paper) grows idle memory greedily where it saves
// the most setup time per byte, evaluates every step, and keeps the best end-to-end. VGM: the
// load-compute-store baseline (Roller/Ansor/PopART): every tensor lives striped over a virtual
// global memory; each operator loads its operands, computes without rotation, stores back.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/graph.h"
#include "sim/common/error.h"
#include "compiler/cost/oracle.h"
#include "compiler/plan/rtensor.h"

namespace tessera::schedule {

// The workload does not fit the cores' memory (the weights, an operator, the shift buffer): the
// compiler's memory check, which callers that try many placements catch (compiler/pipeline.h).
struct DoesNotFit : Error {
  using Error::Error;
};

struct OpSchedule {
  plan::Plan active;
  plan::Plan idle;          // layout of the operator's weights between uses (T10)
  double setup_cycles = 0;  // predicted idle -> active
  std::size_t pareto_size = 0;
  cost::Terms terms;        // the cost model's features in this context (input and setup included)
  // Which planner's plan this is ("t10" or "vgm"); empty: the schedule's (a collage mixes them).
  std::string planner;
};

struct Schedule {
  std::string planner;  // "t10" or "vgm"
  // T10 with a calibrated model: which search's plans it kept ("calibrated": steered by the
  // model; "analytical": steered by the analytical weights, judged faster by the model).
  std::string steered_by = "analytical";
  // T10: the choice of active plans kept (Options::paper_reconciliation): "fastest" (the paper's:
  // each operator's fastest plan, its setup added after) or "with-setup" (priced with its setup),
  // either followed by ", looked ahead" (Options::look_ahead); empty for VGM and collage schedules.
  std::string plan_choice;
  // T10: where layout following was applied in the kept schedule (Options::layout_following):
  // "all", "priced" or "none".
  std::string layout_following;
  std::vector<OpSchedule> ops;  // one per workload operator
  double predicted_cycles = 0;       // the operators, plus offchip_cycles
  // With --offchip-io: loading the model inputs before the first operator and storing the
  // outputs after the last (cost::offchip_cycles; set by the compiler, not by the schedule).
  double offchip_cycles = 0;
  Bytes idle_bytes_per_core = 0;     // T10: weights at rest; VGM: the VGM reservation
  Bytes active_bytes_per_core = 0;   // what is left for the running operator
  struct Step { Bytes idle_bytes; double predicted_cycles; };
  std::vector<Step> history;         // T10 reconciliation: every greedy step
};

// Candidate plans (each distinct operator's Pareto front, priced) kept across schedules: the
// shares of one model that a partition search compiles, sample after sample, hold the same few
// operators, and a compile that retries with more reserve needs the same fronts again. An entry's
// key is the operator's signature with its tensors' shapes, under a scope naming the planner,
// the config's fingerprint, the core count, every target option the fronts depend on and the
// cost model's weights; a different config or option misses, it never answers wrongly. A
// Config edited in code after parsing keeps its file's fingerprint: give such configs a cache
// of their own. Fronts priced by the oracle are not kept.
class FrontCache {
 public:
  const std::vector<plan::Plan>* find(const std::string& key) const {
    auto it = fronts_.find(key);
    return it == fronts_.end() ? nullptr : &it->second;
  }
  const std::vector<plan::Plan>& put(const std::string& key, std::vector<plan::Plan> front) {
    return fronts_.insert_or_assign(key, std::move(front)).first->second;
  }
  std::size_t size() const { return fronts_.size(); }

 private:
  std::unordered_map<std::string, std::vector<plan::Plan>> fronts_;
};

// What pricing exchanges learns that depends on neither the cost model's weights nor the memory
// left (each distinct gather's features, plan parts' views, shift rings): the searches of one
// workload on one target can share it. `compile` keeps one across its searches with less room
// (a retry otherwise measured every gather again: OPT-6.7B's calibrated compile searched three
// times, 2.7 CPU-s each). Opaque: schedule.cpp's memo.
struct SearchMemo {
  std::shared_ptr<void> state;
};

enum class Follow { Auto, All, Priced, None };
const char* follow_name(Follow f);  // "auto", "all", "priced", "none"
// The mode of a name; throws Error naming the expected ones.
Follow parse_follow(const std::string& name);

struct Options {
  plan::Target target;
  Bytes reserve_bytes = 0;  // per core, kept for code and runtime (not for tensors)
  // Prices gathers and shift rounds where the target's model is the oracle (--price-by simulate).
  cost::Oracle* oracle = nullptr;
  FrontCache* fronts = nullptr;  // null: each schedule enumerates its own
  SearchMemo* memo = nullptr;     // null: each schedule_t10_candidates call measures its own
  // T10: the paper's memory reconciliation alone (Algorithm 1: each operator's fastest plan,
  // its setup added after). Default: also a reconciliation and a choice that price each plan
  // with its setup from the idle layout, the schedule predicted fastest kept (docs/compiler.md).
  bool paper_reconciliation = false;
  // T10: layout following (docs/compiler.md): All (every element-wise or row-wise operator
  // that can takes its producer's layout), Priced (only where it and its readers are predicted
  // faster following), None, or Auto (each of the three finished, the fastest predicted kept).
  Follow layout_following = Follow::Auto;
  // T10: the search's best states are also revisited looking ahead, an operator's plan priced
  // with its followers' and its readers' gathers (docs/compiler.md, "Looking ahead"); each
  // finished state is a candidate. Not with the paper's reconciliation nor without following.
  bool look_ahead = true;
};

// T10; with a calibrated target model, the better (by that model) of the search it steers and
// the analytically steered one.
Schedule schedule_t10(const ir::Workload& w, const Options& o);
// Every candidate, fastest predicted first: the search's schedule of each choice of active plans
// (the paper's, and with setup unless Options::paper_reconciliation; one when they agree), and
// with a calibrated model also the analytically steered search's best, priced by the calibrated
// model. The compiler lowers the first that fits: the schedule's memory model spreads live
// activations evenly over the cores, and a plan choice can concentrate them beyond what its
// reserve corrects.
std::vector<Schedule> schedule_t10_candidates(const ir::Workload& w, const Options& o);
Schedule schedule_vgm(const ir::Workload& w, const Options& o);
// Collage-style placement (thesis ch. 2): per operator the T10 or the VGM plan, chosen by dynamic
// programming over the execution order with the previous operator's choice as the state. Both
// are priced by the target's cost model: T10 as its schedule has it; VGM as compute, its
// operands gathered from stripes (and stored back) and its barrier; a T10 operator whose
// producer ran on VGM pays for reading its activations from stripes. `predicted_cycles` is the
// chosen assignment priced over every edge (docs/compiler.md, "Collage").
Schedule schedule_collage(const ir::Workload& w, const Options& o, const Schedule& t10, const Schedule& vgm);
// What the collage's choice prices, per operator: t10 and vgm, each backend's own price; restripe,
// what a T10 operator pays beyond its own input gather when a VGM producer left its activations
// in stripes; store, what a T10 operator pays to store its output to stripes for a VGM reader.
struct CollagePrices {
  std::vector<double> t10, vgm, restripe, store;
};
// An assignment (true: VGM) priced over every producer-reader edge.
double collage_price(const ir::Workload& w, const CollagePrices& c, const std::vector<bool>& use_vgm);
// The collage's choice: the chain DP, then single-operator moves priced over every edge, then
// the better uniform assignment unless the mix is priced 0.5% under it (docs/compiler.md).
std::vector<bool> collage_choice(const ir::Workload& w, const CollagePrices& c);
// The planner of operator i's plan.
inline const std::string& planner_of(const Schedule& s, std::size_t i) {
  return s.ops[i].planner.empty() ? s.planner : s.ops[i].planner;
}
// A T10 schedule with a given active and idle plan per operator, priced by the target's model
// (calibration and validation run candidate plans this way; no memory reconciliation).
Schedule schedule_fixed(const ir::Workload& w, const Options& o, const std::vector<plan::Plan>& active,
                        const std::vector<plan::Plan>& idle);

// Bytes per core of a plan's weight operands.
Bytes weight_bytes(const plan::Plan& p, const ir::Workload& w);
bool has_weights(const ir::Operator& op, const ir::Workload& w);
// `p` as a T10 idle layout with its weights striped evenly over `cores` cores: the leanest layout
// any operator can keep them in between uses (never an active plan).
plan::Plan striped_weights(const plan::Plan& p, const ir::Workload& w, std::int64_t cores);

// Per core bytes of activations that are live across operator boundaries (at the worst boundary),
// spread evenly over the cores: what every plan must leave room for.
Bytes live_activation_bytes(const ir::Workload& w, std::int64_t cores);

}  // namespace tessera::schedule
