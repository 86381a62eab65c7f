#pragma once
// Simulated time is counted in cycles of the config's clock: one cycle is one SystemC nanosecond
// (the kernel's default 1 ps resolution leaves 1000 ticks per cycle), so every timing is an
// exact integer and seconds are derived once from clock_ghz at the end.
#include <systemc>

#include "sim/common/types.h"

namespace tessera::sim {

constexpr sc_core::sc_time::value_type kTicksPerCycle = 1000;

inline Cycles now_cycles() { return sc_core::sc_time_stamp().value() / kTicksPerCycle; }
inline sc_core::sc_time cycles(Cycles c) { return sc_core::sc_time::from_value(c * kTicksPerCycle); }
// Suspends the calling SC_THREAD until cycle `t` (no-op if it is not in the future).
inline void wait_until(Cycles t) {
  Cycles now = now_cycles();
  if (t > now) sc_core::wait(cycles(t - now));
}

}  // namespace tessera::sim
