#pragma once
// The simulator's side of re-layouts: a relayout's steps are worked out when the first core
// reaches it, for every core at once (one pass over the pieces), and dropped once its cores have
// run it as often as the program says. Only relayouts in progress take memory: 24 bytes per step.
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/config/config.h"
#include "sim/program/program.h"
#include "sim/program/relayout.h"

namespace tessera::sim {

class RelayoutRunner {
 public:
  RelayoutRunner(const Program& prog, const CoreConfig& core) : prog_(prog), core_(core) {}

  struct Steps {
    const RelayoutStep* first = nullptr;
    std::size_t count = 0;
    std::uint32_t pieces = 0;  // of the whole relayout (every core's sends)
    const RelayoutStep* begin() const { return first; }
    const RelayoutStep* end() const { return first + count; }
  };
  // Relayout r's steps on `core` (none when it only holds boxes nothing is read from); copies
  // carry their cycles. They stay valid until done() for this run.
  Steps steps(std::uint32_t r, std::uint32_t core);
  // The core has run its steps of relayout r once. Returns true when that was the last run of
  // it (its steps are gone).
  bool done(std::uint32_t r);
  std::uint64_t peak_steps_held() const { return peak_held_; }
  // Fast-forward: steps held now; the most held since watch() was called; a replayed stretch
  // that held at most `steps` at once.
  std::uint64_t held() const { return held_; }
  void watch() { window_peak_ = held_; }
  std::uint64_t watched_peak() const { return window_peak_; }
  void replay_peak(std::uint64_t steps) { peak_held_ = std::max(peak_held_, steps); }

 private:
  struct Live {
    StepsByCore<RelayoutStep> by_core;
    std::uint64_t runs_left = 0;
    std::uint32_t pieces = 0;
  };
  const Program& prog_;
  const CoreConfig& core_;
  std::unordered_map<std::uint32_t, Live> live_;
  std::uint64_t held_ = 0, peak_held_ = 0, window_peak_ = 0;
};

}  // namespace tessera::sim
