#include "sim/program/relayout_runner.h"

#include <algorithm>

#include "sim/core/compute_model.h"

namespace tessera::sim {

RelayoutRunner::Steps RelayoutRunner::steps(std::uint32_t r, std::uint32_t core) {
  auto it = live_.find(r);
  if (it == live_.end()) {
    Live l;
    l.by_core = relayout_steps(prog_.relayouts[r], prog_.layouts);
    for (RelayoutStep& s : l.by_core.steps) {
      if (s.kind == RelayoutStep::Copy) s.value = elementwise_cycles(core_, VecOp::Copy, s.value);
      else l.pieces = std::max(l.pieces, s.piece + 1);
    }
    l.runs_left = prog_.relayout_runs[r];
    held_ += l.by_core.steps.size();
    peak_held_ = std::max(peak_held_, held_);
    window_peak_ = std::max(window_peak_, held_);
    it = live_.emplace(r, std::move(l)).first;
  }
  const StepsByCore<RelayoutStep>& all = it->second.by_core;
  return Steps{all.first(core), all.count(core), it->second.pieces};
}

bool RelayoutRunner::done(std::uint32_t r) {
  auto it = live_.find(r);
  if (it == live_.end()) return true;
  if (it->second.runs_left > 1) {
    --it->second.runs_left;
    return false;
  }
  held_ -= it->second.by_core.steps.size();
  live_.erase(it);
  return true;
}

}  // namespace tessera::sim
