#pragma once
// The top-level SystemC module: every core of every chip with its DMA engine, the network (the
// on-chip fabrics and the links between chips), barriers and off-chip memory, wired through ports.
#include <memory>
#include <systemc>
#include <vector>

#include "sim/common/json_reader.h"
#include "sim/core/core.h"
#include "sim/memory/offchip.h"
#include "sim/noc/network.h"
#include "sim/sync/barrier.h"
#include "sim/system/fast_forward.h"

namespace tessera::sim {

class System : public sc_core::sc_module {
 public:
  // `collective_engine`: the engine that runs the program's collective items (ideal, cores, ace).
  // `relayouts_by_items`, `fast_forward`: SimOptions's.
  System(sc_core::sc_module_name name, const Config& cfg, const Program& prog, TraceRecorder* trace,
         const std::string& collective_engine = "ideal", bool relayouts_by_items = false, bool fast_forward = false);

  // After sc_start: throws SimulationError on a failure or deadlock, else returns the results
  // document (docs/results.md).
  Json results() const;

 private:
  void check_finished() const;
  Json operators() const;
  Json outputs() const;
  std::vector<ChannelStats*> channels() const;

  const Config& cfg_;
  const Program& prog_;
  RunStatus status_;
  TagStats tags_;
  std::unique_ptr<FunctionalContext> fx_;
  RelayoutRunner relayouts_;
  Network network_;
  Barrier barrier_;
  OffchipMemory memory_;
  std::vector<std::unique_ptr<Dma>> dmas_;
  std::unique_ptr<FastForward> fast_forward_;  // null: every stretch is simulated
  std::vector<std::unique_ptr<Core>> cores_;
};

}  // namespace tessera::sim
