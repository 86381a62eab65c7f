#pragma once
// The program the simulator runs: per core, an ordered list of work items. Parsed from JSON
// (docs/program.md) and validated against a config before any simulation: every error names the
// core and the item. Loading also turns each compute item into its cycle count, so the
// simulation itself does no timing arithmetic for compute.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/json_reader.h"
#include "sim/config/config.h"
#include "sim/core/compute_model.h"

namespace tessera::sim {

enum class Op : std::uint8_t { Compute, Send, Recv, Sync, Load, Store, LoopBegin, LoopEnd };

// Run-time form of a work item (alloc/free are resolved at load time and vanish).
struct Item {
  Op op;
  ComputeKind kind = ComputeKind::Matmul;  // Compute only
  std::uint32_t arg = 0;  // Send/Recv: peer core; Sync: group; Load/Store: tensor;
                          // LoopBegin: count; LoopEnd: index of its LoopBegin
  std::uint32_t where = 0;  // index into CoreProgram::where (diagnostics)
  std::uint64_t value = 0;  // Send/Recv/Load/Store: bytes; Compute: cycles
};

struct CoreProgram {
  std::uint32_t core = 0;
  std::vector<Item> code;
  std::vector<std::string> where;  // "cores[2].items[5]" for each item, for error messages
  Bytes peak_scratchpad_bytes = 0;
  std::uint64_t work_items = 0;  // items executed, counting loop iterations
};

struct Group {
  std::string name;
  std::vector<std::uint32_t> members;  // sorted global core ids
  bool spans_chips = false;
};

struct OffchipTensor {
  std::string name;
  std::uint32_t chip = 0;
  Bytes bytes = 0;
};

struct Program {
  std::string name;
  std::vector<Group> groups;  // groups[0] is "all": every core listed in the program
  std::vector<OffchipTensor> tensors;
  std::vector<CoreProgram> cores;  // only the cores that have work, ascending core id
  std::uint64_t total_work_items() const;
};

// Parses and validates; `what` names the source in errors (a file name).
Program parse_program(const Json& json, const std::string& what, const Config& config);
Program load_program(const std::string& path, const Config& config);

}  // namespace tessera::sim
