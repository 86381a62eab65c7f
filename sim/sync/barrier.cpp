#include "sim/sync/barrier.h"

#include "sim/common/clock.h"

namespace tessera::sim {

Barrier::Barrier(sc_core::sc_module_name name, const Config& cfg, const Program& prog)
    : sc_core::sc_module(name) {
  for (const Group& g : prog.groups) {
    auto s = std::make_unique<State>();
    s->members = g.members.size();
    s->latency = g.spans_chips ? cfg.system.sync_latency_cycles : cfg.chip.sync.latency_cycles;
    groups_.push_back(std::move(s));
  }
}

void Barrier::arrive(std::uint32_t group, std::uint32_t) {
  State& s = *groups_[group];
  if (++s.arrived < s.members) {
    wait(s.release);
    return;
  }
  s.arrived = 0;  // the next barrier on this group starts counting now
  ++completed_;
  s.release.notify(cycles(s.latency));
  wait(cycles(s.latency));
}

}  // namespace tessera::sim
