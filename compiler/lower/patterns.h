#pragma once
// Programs for communication patterns that compiled models are made of, generated directly:
// a compute-shift ring (each step: compute, send to the next core, receive from the previous,
// sync), and an all-to-all. Used by `tessera gen`, the benchmark and tests.
#include <cstdint>
#include <string>

#include "sim/common/json_reader.h"

namespace tessera::compiler {

struct RingShiftSpec {
  std::uint32_t cores = 8;
  std::uint32_t first_core = 0;
  std::uint64_t steps = 4;
  std::uint64_t shift_bytes = 1024;
  std::uint64_t m = 16, k = 64, n = 16;  // per-step matmul on each core
  std::string dtype = "fp16";
  bool sync = true;
};
Json ring_shift_program(const RingShiftSpec& spec);

struct AllToAllSpec {
  std::uint32_t cores = 8;
  std::uint64_t bytes = 1024;  // per pair
};
Json all_to_all_program(const AllToAllSpec& spec);

}  // namespace tessera::compiler
