#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace tessera::cli {

struct TrainArgs {
  std::string config, layers, mode = "all", out, trace, share_hold = "static";
  std::uint64_t chunk_bytes = 64 << 10;
  std::uint32_t chunks_in_flight = 16;
  double comm_memory_gb_per_s = 0;  // 0: the configuration's own (Table VI)
  std::uint32_t comm_sms = 0;
};

void add_train_options(CLI::App* cmd, TrainArgs& a);
// `tessera train`: data-parallel training of a layer table on a system of NPUs in the ACE
// paper's configurations; iteration time, exposed communication (docs/train.md).
int train_cmd(const TrainArgs& a);

}  // namespace tessera::cli
