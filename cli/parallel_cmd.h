#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "compiler/partition/dfmodel.h"

namespace tessera::cli {

struct ParallelArgs {
  std::string config, model = "gpt3-175b", mapping, partitions, fusion = "search", out, trace;
  std::string compute = "peak", array, weight_load = "stream";  // array: "" is 16x16 (systolic only)
  partition::LlmSpec llm;
  std::uint32_t top = 10;
  bool simulate = false;               // run the best mapping on the simulator
  std::uint64_t sim_micro_batches = 4;
  bool sim_no_stream = false;          // --simulate: TP all-reduces after each partition's compute
  ParallelArgs() { llm.layers = 0; }  // 0: the preset's
};

void add_parallel_options(CLI::App* cmd, ParallelArgs& a);
// `tessera plan-parallel`: DFModel-style mappings of an LLM onto a system (docs/parallel.md):
// the best assignments of TP/PP/DP to the topology's dimensions, kernel by kernel and fused,
// with each partition's compute, DRAM and network time; the results JSON has every mapping.
int parallel_cmd(ParallelArgs a);

}  // namespace tessera::cli
