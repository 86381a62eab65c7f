#pragma once
// The program the simulator runs: per core, an ordered list of work items. Parsed from JSON
// (docs/program.md) and validated against a config before any simulation: every error names the
// core and the item. Loading also turns each compute item into its cycle count, so the
// simulation itself does no timing arithmetic for compute.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/common/json_reader.h"
#include "sim/collective/collective.h"
#include "sim/config/config.h"
#include "sim/core/compute_model.h"
#include "sim/functional/data.h"
#include "sim/program/relayout.h"

namespace tessera::sim {

enum class Op : std::uint8_t {
  Compute, Send, Recv, Sync, Load, Store, LoopBegin, LoopEnd,
  Wait,  // for a transfer started with a handle (arg: the handle; value: the Op that started it)
  Alloc, Free, Init,  // functional mode only: buffers that hold values, weights preloaded (0 cycles)
  Relayout,  // arg: index into Program::relayouts; the core's sends, copies and receives of it
  Collective  // arg: index into Program::collectives; this chip's part of it (one core per chip)
};
constexpr std::uint32_t kNoTag = ~0u;

// Run-time form of a work item (alloc/free are resolved at load time and vanish).
struct Item {
  Op op;
  ComputeKind kind = ComputeKind::Matmul;  // Compute only
  std::uint32_t arg = 0;  // Send/Recv: peer core; Sync: group; Load/Store: tensor;
                          // LoopBegin: count; LoopEnd: index of its LoopBegin; Relayout: relayout
  std::uint32_t where = 0;  // index into CoreProgram::where (diagnostics, functional details)
  std::uint32_t tag = kNoTag;  // index into Program::tags: which operator and phase it belongs to
  std::uint64_t value = 0;  // Send/Recv/Load/Store: bytes; Compute: cycles
  std::uint32_t handle = 0;  // Send/Recv/Load/Store/Wait: DMA handle; 0 = blocking
};

// Run-time memory per item of a program (issue 12's goal: at most 64 bytes).
static_assert(sizeof(Item) <= 32, "a work item should stay within 32 bytes");

// Functional details of an item (functional mode): buffers are slots in CoreProgram::views.
struct FunctionalItem {
  int expr = -1;  // Compute: index into Program::exprs
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;  // Compute: per axis [lo, hi)
  std::vector<std::uint32_t> inputs;                          // Compute: buffer slots
  std::uint32_t buffer = 0;  // Compute: output; Send/Recv/Load/Store/Init/Alloc/Free: the buffer
  Box box;                   // Send: the values carried
};

// Where an item stands in its program, for messages: entry `index` of the item list that the
// repeat at place `parent` (an index into CoreProgram::where) holds, or of the core's own list
// (kTop). 8 bytes an item, where a path string took tens.
struct ItemPlace {
  static constexpr std::uint32_t kTop = ~0u;
  static constexpr std::uint32_t kWhole = ~0u;  // index: the place is the whole root
  std::uint32_t parent = kTop;
  std::uint32_t index = kWhole;
};

struct CoreProgram {
  std::uint32_t core = 0;
  std::vector<Item> code;
  // Item::where indexes `where`; a place's text starts at `where_root` ("cores[2].items", or
  // "compiled program"): item_location() gives "cores[2].items[5].body[3]".
  std::string where_root;
  std::vector<ItemPlace> where;
  Bytes peak_scratchpad_bytes = 0;
  std::uint64_t work_items = 0;  // items to run, counting loop iterations; a relayout as one item
                                 // (the results count its steps as they run)
  std::uint32_t dma_handles = 0;  // distinct handle names (DMA slots 1..dma_handles)
  std::vector<FunctionalItem> functional;  // by Item::where, functional mode only
  std::vector<View> views;                 // buffer slots, functional mode only
};

// What an item tag names: an operator of the compiled model and the phase of its execution.
struct Tag {
  std::string op;
  std::string phase;  // "setup" (idle -> active layout), "input" (re-layout), "main"
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
  std::vector<Tag> tags;
  // Re-layouts (relayout.h): the layouts they move between, and per relayout how many times
  // cores run it in all (counting loop iterations), so the simulator can drop it after the last.
  std::vector<Layout> layouts;
  std::vector<Relayout> relayouts;
  // Collectives between all chips (collective.h); a `collective` item on one core of each chip
  // takes that chip's part, run by the engine the simulation is given.
  std::vector<CollectiveSpec> collectives;
  std::vector<std::uint64_t> relayout_runs;
  // Functional mode: global tensors (shape) and the kernels compute items evaluate.
  bool functional = false;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> data_tensors;
  std::map<std::string, std::vector<float>> data_values;  // given initial values (else generated)
  std::vector<ir::Expr> exprs;
  std::uint64_t total_work_items() const;
};

// Parses and validates; `what` names the source in errors (a file name).
// Where an item comes from, for messages: its place in the program and, when it carries a tag,
// the operator and phase it belongs to.
std::string item_location(const Program& prog, const CoreProgram& core, const Item& item);
// Its place alone (cores[1].items[2]), which item_location() begins with.
std::string item_place(const CoreProgram& core, const Item& item);

struct ProgramOptions {
  bool functional = false;  // keep the values-carrying details (the program must have them)
};
Program parse_program(const Json& json, const std::string& what, const Config& config,
                      const ProgramOptions& options = {});

// The same parse, one core at a time, for programs read from a stream (program_file.h): the
// top level (everything but the cores' items) first, then each core's {"core", "items"} entry
// in the order `core_ids` lists them, then finish(). Errors are those of parse_program, word for
// word; only one core's items need to exist as JSON at a time.
class ProgramParser {
 public:
  // Without `core_ids`, the header's own "cores" array lists them (a whole JSON program).
  ProgramParser(const Json& header, const std::string& what, const Config& config,
                const ProgramOptions& options, const Json* core_ids = nullptr);
  ~ProgramParser();
  std::size_t cores() const;
  void add_core(const Json& entry);
  Program finish();

 private:
  struct State;
  std::unique_ptr<State> s_;
};
// load_program (a file of either form): sim/program/program_file.h.

}  // namespace tessera::sim
