#pragma once
// Time inside the network engines is kept in 1/1024 cycle, so fractional bandwidths add up
// exactly over a busy period; events still happen at whole cycles.
#include <cstdint>

#include "sim/common/types.h"

namespace tessera::sim {

constexpr std::int64_t kFrac = 1024;

// The first whole cycle at or after `fp`, and the cycle `fp` falls in. Times are never negative:
// dividing them unsigned is a shift (signed division rounds towards zero and costs a fix-up).
inline Cycles ceil_cycles(std::int64_t fp) { return (static_cast<Cycles>(fp) + kFrac - 1) / kFrac; }
inline Cycles floor_cycles(std::int64_t fp) { return static_cast<Cycles>(fp) / kFrac; }

}  // namespace tessera::sim
