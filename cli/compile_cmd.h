#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "compiler/compile.h"

namespace tessera::cli {

struct CompileArgs {
  std::string config, workload, out, results, trace;
  std::int64_t batch = 1, seq = 0, layers = 0;
  std::vector<std::string> dims;  // --dim name=value (ONNX symbolic dimensions)
  std::string inputs;             // --inputs: JSON of model input values (functional mode)
  compiler::CompileOptions opt;
  bool quiet = false;
  bool save_workload = false;
  bool no_fast_forward = false;    // run: simulate every stretch (SimOptions::fast_forward)
  std::string calibration;         // cost model file (docs/cost.md); empty: analytical
  bool force_calibration = false;  // use it even if fitted on another config
  std::string price_by = "model";  // "model" or "simulate" (the oracle, docs/cost.md)
};
// Help of --no-fast-forward (run and simulate).
inline constexpr const char* kNoFastForwardHelp =
    "simulate every stretch between global barriers, even one that repeats from an idle state "
    "(the same results; docs/hardware-model.md, \"Fast-forward\")";

// What priced the plans, as the results file says: "analytical", the calibration's path, or
// "simulate (oracle)".
std::string cost_model_name(const CompileArgs& a);

// Writes `j` to `path`; a file that cannot be written is an Error naming it.
void write_json(const std::string& path, const Json& j, int indent = 2);

// The workload and the compile options the arguments name (the calibration loaded and checked
// against `cfg`).
ir::Workload load_workload(const CompileArgs& a);
// --dim NAME=VALUE arguments; a malformed one is an Error naming it.
std::map<std::string, std::int64_t> parse_dims(const std::vector<std::string>& specs);
void set_input_values(ir::Workload& w, const std::string& path, bool functional);
compiler::CompileOptions compile_options(const CompileArgs& a, const sim::Config& cfg);
// --config, --workload, --batch ... and --calibration, shared by compile, run and validate-cost.
void add_model_options(CLI::App* cmd, CompileArgs& a);

void add_compile_options(CLI::App* cmd, CompileArgs& a, bool run);
int compile_cmd(const CompileArgs& a);
int run_cmd(const CompileArgs& a);

}  // namespace tessera::cli
