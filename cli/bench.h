#pragma once
#include <string>

namespace tessera::cli {

struct BenchOptions {
  std::string config = "configs/ipu-mk2.json";
  std::string mesh_config = "configs/mesh-10x12.json";
  std::uint64_t steps = 1000;
  std::uint32_t cores = 0;  // 0: every core of the config
};

// `tessera bench sim`: prints simulation speed and its ratio to a bare SystemC loop.
void bench_sim(const BenchOptions& options);

}  // namespace tessera::cli
