#pragma once
// The compiler's front door: load a workload (built-in model, JSON, ONNX), plan every operator,
// schedule the model (T10 or VGM), lower to a program; and the per-operator report that joins
// the plan with what the simulator measured.
#include <string>

#include "compiler/cost/model.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/models.h"
#include "compiler/lower/lower.h"
#include "compiler/schedule/schedule.h"
#include "sim/config/config.h"

namespace tessera::compiler {

struct CompileOptions {
  std::string planner = "t10";  // t10 | vgm
  bool functional = false;
  Bytes shift_buffer_bytes = 8192;
  double min_parallelism = 0.5;
  double min_padding_ratio = 0.9;
  Bytes reserve_bytes = 0;
  bool offchip_io = false;  // time loading model inputs and storing outputs (lower::Options)
  bool paper_reconciliation = false;  // schedule::Options::paper_reconciliation
  std::string layout_following = "auto";  // schedule::Options::layout_following
  bool look_ahead = true;                  // schedule::Options::look_ahead
  cost::Model model;        // prices plans (t10); empty: the analytical model
  // Candidate fronts shared by compiles (schedule::FrontCache: a partition search compiles the
  // shares of one model over and over); null: the compile keeps its own for its retries.
  schedule::FrontCache* fronts = nullptr;
};

struct Compiled {
  schedule::Schedule schedule;
  lower::Lowered program;
  double compile_seconds = 0;  // host CPU time of planning, scheduling and lowering
};

// `spec` is a built-in model name, a .json workload or an .onnx file.
ir::Workload load_workload(const std::string& spec, const ir::ModelOptions& opt);
Compiled compile(const ir::Workload& w, const sim::Config& cfg, const CompileOptions& o);

// One row per operator: plan, predicted and simulated cycles by phase, per-core memory.
Json operator_report(const ir::Workload& w, const Compiled& c, const Json& results);
std::string format_operator_table(const Json& report);
// Functional runs: the largest |simulated - reference| / (1 + |reference|) over every model
// output in `results` (docs/results.md "outputs"); an output that was never stored is an error.
double functional_max_error(const ir::Workload& w, const Json& results);

// Share of operator time spent exchanging (exchange + setup over the sum of operator spans).
double exchange_share(const Json& report);

}  // namespace tessera::compiler
