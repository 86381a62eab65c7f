#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tessera::cli {

struct InspectArgs {
  std::string model;               // built-in model name, workload JSON or .onnx file
  std::int64_t batch = 1, seq = 0, layers = 0;
  std::vector<std::string> dims;   // --dim NAME=VALUE
  std::string out;                 // JSON report
  bool operators = false;          // print every operator with its shapes
};

void add_inspect_options(CLI::App* cmd, InspectArgs& a);
// Prints what a model holds and whether tessera imports it; exit status 1 when it does not.
int inspect_cmd(const InspectArgs& a);

}  // namespace tessera::cli
