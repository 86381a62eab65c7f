#pragma once
// Barriers over all cores of a program or a named group: the last core to arrive releases every
// member `latency` cycles later (the chip's latency, or the system's when the group spans chips).
#include <memory>
#include <systemc>
#include <vector>

#include "sim/config/config.h"
#include "sim/program/program.h"

namespace tessera::sim {

class BarrierIf : public virtual sc_core::sc_interface {
 public:
  virtual void arrive(std::uint32_t group, std::uint32_t core) = 0;
};

class Barrier : public sc_core::sc_module, public BarrierIf {
 public:
  Barrier(sc_core::sc_module_name name, const Config& cfg, const Program& prog);
  void arrive(std::uint32_t group, std::uint32_t core) override;
  // For deadlock reports.
  std::size_t arrived(std::uint32_t group) const { return groups_[group]->arrived; }
  std::size_t members(std::uint32_t group) const { return groups_[group]->members; }
  std::uint64_t barriers() const { return completed_; }
  // Fast-forward: no member of any group but `except` waits; barriers completed in a replayed
  // stretch are added.
  bool idle_except(std::uint32_t except) const {
    for (std::size_t g = 0; g < groups_.size(); ++g)
      if (g != except && groups_[g]->arrived != 0) return false;
    return true;
  }
  void add_barriers(std::uint64_t n) { completed_ += n; }

 private:
  struct State {
    std::size_t members = 0, arrived = 0;
    Cycles latency = 0;
    sc_core::sc_event release;
  };
  std::vector<std::unique_ptr<State>> groups_;
  std::uint64_t completed_ = 0;
};

}  // namespace tessera::sim
