#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace tessera::cli {

struct PipelineArgs {
  std::string config, model = "mmt", planner = "both", schedule = "1f1b", out, trace;
  std::uint32_t devices = 0;   // 0: every chip of the config
  std::uint32_t branches = 0;  // 0: the model's default
  std::uint64_t batch = 0;     // mini-batch; 0: the model's default for the device count
  std::uint64_t min_micro_batch = 1;
  std::uint32_t max_replicas = 0;  // 0: no limit
  bool estimate_only = false;
};

void add_pipeline_options(CLI::App* cmd, PipelineArgs& a);
// `tessera plan-pipeline`: GraphPipe stage graphs and the sequential (PipeDream-style) baseline
// for a multi-branch model on the NPUs of a system, each plan's micro-batch schedule estimated
// and run on the simulator (docs/pipeline.md).
int pipeline_cmd(const PipelineArgs& a);

}  // namespace tessera::cli
