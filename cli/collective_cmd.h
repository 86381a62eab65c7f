#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "sim/collective/collective.h"

namespace tessera::cli {

struct CollectiveArgs {
  std::string config, op = "allreduce", algorithm = "ring", engine = "ideal", out;
  std::string model;  // "": the config's system.model
  std::string forwarding;  // "message" or "packet"; "": the config's system.collective_forwarding
  std::uint64_t bytes = 0, chunk_bytes = 64 << 10;
  std::uint32_t chunks_in_flight = 16;
  // overrides of the config's system.endpoint and system.ace (0: keep the config's)
  double memory_gb_per_s = 0;
  std::uint32_t cores = 0, ace_fsms = 0;
  std::uint64_t ace_sram_bytes = 0;
  std::uint64_t packet_bytes = 0;  // 0: the config's
};

void add_collective_options(CLI::App* cmd, CollectiveArgs& a);
// `tessera collective`: one collective on a system of chips; time, algorithm and bus bandwidth,
// bytes sent per chip, link use (docs/collectives.md).
int collective_cmd(const CollectiveArgs& a);

}  // namespace tessera::cli
