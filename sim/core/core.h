#pragma once
// A core: one SC_THREAD that runs its work items in order. Compute items take the cycle count
// computed at load time; sync goes to the barrier; send/recv/load/store go to the core's DMA
// engine: the blocking forms wait there until the transfer is done, the asynchronous ones (with
// a handle) cost the issue cycles and the core goes on until a `wait` on the handle.
#include <array>
#include <memory>
#include <string>
#include <systemc>

#include "sim/core/dma.h"
#include "sim/program/program.h"
#include "sim/program/relayout_runner.h"
#include "sim/sync/barrier.h"

namespace tessera::sim {

class TraceRecorder;

enum class Activity : std::uint8_t { Compute, Send, Recv, Sync, Memory };
constexpr int kActivities = 5;
const char* activity_name(Activity a);

// Per-tag (operator and phase) accounting shared by all cores of a system: summed busy cycles by
// activity, and the first start and last end of any item with the tag.
struct TagStats {
  std::vector<std::array<Cycles, kActivities>> busy;
  std::vector<Cycles> first, last;
  explicit TagStats(std::size_t tags) : busy(tags), first(tags, ~Cycles{0}), last(tags, 0) {}
};

// Functional mode: the global tensors and the program's kernels (null in timing mode).
struct FunctionalContext {
  DataStore store;
  const Program* program = nullptr;
};

// Where a failure inside a thread is parked until sc_start returns (no exceptions cross the kernel).
struct RunStatus {
  std::string error;
  bool simulation_error = false;
  std::size_t failed_core = ~std::size_t{0};  // index in Program::cores of the core that failed
};

// Where cores report the stretches of their programs between the program's global barriers
// (sim/system/fast_forward.h): a stretch already simulated from the same idle state can be
// replayed instead of simulated again.
class SegmentHook {
 public:
  // What one core's part of a replayed stretch adds: the cycles from its start to the core's
  // arrival at the closing barrier, busy cycles by activity, work items run.
  struct CoreDelta {
    Cycles cycles = 0;
    std::array<Cycles, kActivities> busy{};
    std::uint64_t items = 0;
  };
  virtual ~SegmentHook() = default;
  // Per core (by its index in Program::cores): the item index of each global barrier that
  // closes a stretch, ascending.
  virtual const std::vector<std::uint32_t>& bounds(std::size_t core_index) const = 0;
  // The core starts stretch `s` (after bound s-1) at `now`: what to add instead of running it,
  // or null to simulate it.
  virtual const CoreDelta* begin(std::size_t s, std::size_t core_index, Cycles now,
                                 const std::array<Cycles, kActivities>& busy, std::uint64_t items) = 0;
  // The core is at the barrier that closes stretch `s`.
  virtual void end(std::size_t s, std::size_t core_index, Cycles now, const std::array<Cycles, kActivities>& busy,
                   std::uint64_t items) = 0;
  // While a stretch is being recorded, every accounted span is reported to note().
  bool recording = false;
  virtual void note(std::size_t core_index, std::uint32_t tag, Activity a, Cycles start, Cycles end) = 0;
};

class Core : public sc_core::sc_module, private StepSink {
 public:
  sc_core::sc_port<DmaIf> dma;
  sc_core::sc_port<BarrierIf> barrier;

  SC_HAS_PROCESS(Core);
  Core(sc_core::sc_module_name name, const CoreProgram& program, Cycles dma_issue_cycles,
       TraceRecorder* trace, int trace_track, RunStatus& status, TagStats& tags,
       FunctionalContext* functional, RelayoutRunner& relayouts, bool relayouts_by_items = false,
       SegmentHook* segments = nullptr, std::size_t index = 0);

  const CoreProgram& program() const { return prog_; }
  bool done() const { return done_; }
  Cycles finish_cycle() const { return finish_; }
  Cycles busy(Activity a) const { return busy_[static_cast<int>(a)]; }
  // The item the core is executing (for deadlock reports): within a relayout, its current step.
  const Item& current() const;
  // Work items run so far, counting loop iterations and every step of a relayout.
  std::uint64_t items_run() const { return items_run_; }

 private:
  void run();
  void at_bound(const std::vector<std::uint32_t>& bounds, std::size_t& segment);
  void execute(const Item& item);
  void run_relayout(const Item& item);
  void run_relayout_items(const Item& item, const RelayoutRunner::Steps& steps);
  void functional(const Item& item);
  Activity transfer(const Item& item);
  void step_done(const RelayoutStep& step, Cycles start, Cycles end) override;
  void account(Activity a, std::uint32_t tag, Cycles start, Cycles end);
  std::shared_ptr<const Payload> payload(const Item& item);
  Buffer& buffer(std::uint32_t slot);

  const CoreProgram& prog_;
  Cycles issue_cycles_;
  TraceRecorder* trace_;
  int track_;
  RunStatus& status_;
  TagStats& tags_;
  FunctionalContext* fx_;
  RelayoutRunner& relayouts_;
  const Item* relayout_ = nullptr;  // the relayout item being run
  bool relayouts_by_items_;
  SegmentHook* segments_;  // null: every stretch is simulated
  std::size_t index_;      // in Program::cores
  mutable Item step_{};  // within it, the current step as an item (current() fills it on the DMA path)
  std::uint64_t items_run_ = 0;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // functional mode: by slot
  std::shared_ptr<const Payload> received_;
  std::array<Cycles, kActivities> busy_{};
  std::size_t pc_ = 0;
  bool done_ = false;
  Cycles finish_ = 0;
  sc_core::sc_event never_;  // what a finished core waits for (see run())
};

}  // namespace tessera::sim
