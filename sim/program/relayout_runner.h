#pragma once
// The simulator's side of re-layouts: a relayout's steps are worked out when the first core
// reaches it, for every core at once (one pass over the pieces), and dropped once its cores have
// run it as often as the program says. Only relayouts in progress take memory: 24 bytes per step.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/config/config.h"
#include "sim/program/program.h"

namespace tessera::sim {

class RelayoutRunner {
 public:
  RelayoutRunner(const Program& prog, const CoreConfig& core) : prog_(prog), core_(core) {}

  // Relayout r's steps on `core` (empty when it only holds boxes nothing is read from); copies
  // carry their cycles. The reference stays valid until done() for this run.
  const std::vector<RelayoutStep>& steps(std::uint32_t r, std::uint32_t core);
  // The core has run its steps of relayout r once.
  void done(std::uint32_t r);
  // Steps held right now, over every relayout in progress (for memory figures).
  std::uint64_t steps_held() const { return held_; }
  std::uint64_t peak_steps_held() const { return peak_held_; }

 private:
  struct Live {
    std::unordered_map<std::uint32_t, std::vector<RelayoutStep>> by_core;
    std::uint64_t runs_left = 0, steps = 0;
  };
  const Program& prog_;
  const CoreConfig& core_;
  std::unordered_map<std::uint32_t, Live> live_;
  const std::vector<RelayoutStep> none_;
  std::uint64_t held_ = 0, peak_held_ = 0;
};

}  // namespace tessera::sim
