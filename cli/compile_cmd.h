#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "compiler/compile.h"

namespace tessera::cli {

struct CompileArgs {
  std::string config, workload, out, results, trace;
  std::int64_t batch = 1, seq = 0, layers = 0;
  compiler::CompileOptions opt;
  bool quiet = false;
  bool save_workload = false;
};

void add_compile_options(CLI::App* cmd, CompileArgs& a, bool run);
int compile_cmd(const CompileArgs& a);
int run_cmd(const CompileArgs& a);

}  // namespace tessera::cli
