#pragma once
// A core: one SC_THREAD that runs its work items in order. Compute items take the cycle count
// computed at load time; send/recv/sync/load/store go through the ports to the interconnect,
// the barrier and the off-chip memory, which block the thread for as long as they take.
#include <array>
#include <string>
#include <systemc>

#include "sim/memory/offchip.h"
#include "sim/noc/fabric_if.h"
#include "sim/program/program.h"
#include "sim/sync/barrier.h"

namespace tessera::sim {

class TraceRecorder;

enum class Activity : std::uint8_t { Compute, Send, Recv, Sync, Memory };
constexpr int kActivities = 5;
const char* activity_name(Activity a);

// Where a failure inside a thread is parked until sc_start returns (no exceptions cross the kernel).
struct RunStatus {
  std::string error;
  bool simulation_error = false;
};

class Core : public sc_core::sc_module {
 public:
  sc_core::sc_port<FabricIf> net;
  sc_core::sc_port<BarrierIf> barrier;
  sc_core::sc_port<MemoryIf> memory;

  SC_HAS_PROCESS(Core);
  Core(sc_core::sc_module_name name, const CoreProgram& program, std::uint32_t chip,
       TraceRecorder* trace, int trace_track, RunStatus& status);

  const CoreProgram& program() const { return prog_; }
  bool done() const { return done_; }
  Cycles finish_cycle() const { return finish_; }
  Cycles busy(Activity a) const { return busy_[static_cast<int>(a)]; }
  // The item the core is executing (for deadlock reports).
  const Item& current() const { return prog_.code[pc_]; }

 private:
  void run();
  void execute(const Item& item);

  const CoreProgram& prog_;
  std::uint32_t chip_;
  TraceRecorder* trace_;
  int track_;
  RunStatus& status_;
  std::array<Cycles, kActivities> busy_{};
  std::size_t pc_ = 0;
  bool done_ = false;
  Cycles finish_ = 0;
};

}  // namespace tessera::sim
