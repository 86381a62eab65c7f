#pragma once
// Inter-chip links of a multi-chip system: a ring (bidirectional, shortest way round, ties go
// the increasing way) or fully connected. Implements the chip-boundary port of the network.
#include <deque>
#include <systemc>

#include "sim/config/config.h"
#include "sim/noc/fabric_if.h"

namespace tessera::sim {

// The links and their routes, usable without a simulation (the compiler's exchange replay).
class InterChipLinks : public ChipBoundaryIf {
 public:
  explicit InterChipLinks(const SystemConfig& cfg);
  void route(std::uint32_t from, std::uint32_t to, std::vector<Resource*>& out) override;
  Bytes packet_bytes() const override { return cfg_.packet_bytes; }
  void resources(std::vector<Resource*>& out) override;

 private:
  Resource* link(std::uint32_t from, std::uint32_t to) { return links_[from * cfg_.chips + to]; }
  SystemConfig cfg_;
  std::deque<Resource> storage_;
  std::vector<Resource*> links_;  // from*chips+to -> direct link, or null
};

// The same links as a module of the simulated system.
class ChipLinks : public sc_core::sc_module, public InterChipLinks {
 public:
  ChipLinks(sc_core::sc_module_name name, const SystemConfig& cfg)
      : sc_core::sc_module(name), InterChipLinks(cfg) {}
};

}  // namespace tessera::sim
