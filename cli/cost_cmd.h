#pragma once
// tessera calibrate / validate-cost: the cost model's calibration and its validation (docs/cost.md).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/compile_cmd.h"
#include "compiler/calibrate/calibrate.h"
#include "compiler/calibrate/validate.h"

namespace tessera::cli {

struct CalibrateArgs {
  std::vector<std::string> configs, held_out_configs;  // --config (repeatable), --hold-out-config
  std::string out, csv;
  std::vector<std::string> ops_texts;  // --ops as given (comma-separated); calibrate_cmd sets opt.classes
  cost::CalibrateOptions opt;
};

void add_calibrate_options(CLI::App* cmd, CalibrateArgs& a);
int calibrate_cmd(const CalibrateArgs& a);

struct ValidateArgs {
  CompileArgs compile;  // config, workload, batch, ..., calibration
  std::string csv = "validation.csv", plot, json;
  cost::ValidateOptions opt;
};

void add_validate_options(CLI::App* cmd, ValidateArgs& a);
int validate_cmd(const ValidateArgs& a);

}  // namespace tessera::cli
