#pragma once
#include <cstdint>
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

struct CompileBenchOptions {
  std::string config = "configs/ipu-mk2.json";
  std::string workload = "bert-large";
  std::int64_t batch = 8;
  std::string planner = "t10";
};

// `tessera bench compile`: host CPU time to compile a whole model, and to simulate the program.
void bench_compile(const CompileBenchOptions& options);

struct NocBenchOptions {
  std::string mesh_config = "configs/mesh-8x8.json";
  std::string chips_config = "configs/vipu-2.json";
  // Long enough that the hops outweigh the set-up: 20,000 cycles at 10% of saturation are about
  // 54,000 packet-hops, a few ms, as long as building the topology and routes and forking, and
  // near the resolution of the CPU clock.
  std::uint64_t measure_cycles = 200000;
};

// `tessera bench noc`: speed of both levels of detail on synthetic traffic (8x8 mesh at 10%, 50%
// and 90% of saturation; noxim's low rates) and of the 1472-core cross-chip case at 16-128 KiB.
void bench_noc(const NocBenchOptions& options);

struct CollectiveBenchOptions {
  std::string big_config = "configs/ace-torus-1024.json";
  std::string torus_config = "configs/ace-torus-64.json";
  std::string train_config = "configs/ace-torus-128.json";
  std::string train_layers = "workloads/train/resnet-50.json";
};

// `tessera bench collective`: the 1024-NPU ring all-reduce of 256 MiB at message granularity,
// the 4x4x4 torus all-reduce of 16 MiB on each engine at packet level, and one training run
// (ACE) of ResNet-50 on 128 NPUs: CPU seconds, packet-hops per CPU-second, peak memory.
void bench_collective(const CollectiveBenchOptions& options);

struct CostBenchOptions {
  std::string config = "configs/ipu-mk2.json";
  std::string workload = "resnet-18";
  std::int64_t batch = 1;
  std::string calibration;      // empty: the analytical weights (same features, same speed)
  std::size_t ops = 8;          // distinct operators, costliest first by analytical prediction
  std::size_t plans_per_op = 4; // candidate plans per operator
  std::uint64_t seed = 1;
};

// `tessera bench cost`: the same sampled plans priced by the cost model, priced by the oracle
// (--price-by simulate) and simulated; CPU time per plan of each and `pricing speedup: X`.
void bench_cost(const CostBenchOptions& options);

}  // namespace tessera::cli
