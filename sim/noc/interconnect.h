#pragma once
// The timing of a system's whole interconnect, without SystemC: one on-chip fabric per chip, and
// the chip-boundary port for messages between chips. The simulator's Network runs every message
// through it; the compiler replays a re-layout's messages on its own instance to price it
// (compiler/cost/exchange.h), so both see one model of ports, links and contention.
#include <memory>
#include <vector>

#include "sim/config/config.h"
#include "sim/noc/fabric_if.h"

namespace tessera::sim {

class Interconnect {
 public:
  explicit Interconnect(const Config& cfg);
  // Reserves the message's path from `now`; `boundary` joins the chips (may be null when the
  // message stays on one chip).
  Transfer transfer(std::uint32_t src, std::uint32_t dst, Cycles now, Bytes bytes,
                    ChipBoundaryIf* boundary, TraceRecorder* trace);
  void resources(std::vector<Resource*>& out);

 private:
  const Config& cfg_;
  std::vector<std::unique_ptr<ChipFabric>> chips_;
  std::vector<Resource*> path_;  // scratch for cross-chip routes
};

}  // namespace tessera::sim
