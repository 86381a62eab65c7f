#pragma once
// The oracle's interface (`--price-by simulate`, docs/cost.md): a gather and a shift round priced
// by running their messages, and a local copy by the simulator's compute model. The cost model
// does not run anything; the schedule calls an oracle only when the user asks for one, and the
// implementation (compiler/oracle/replay.h, on the simulator's network engine) sits above the
// cost model, so that `cost` stays a leaf: features and weights.
#include <cstddef>
#include <utility>
#include <vector>

#include "compiler/cost/features.h"

namespace tessera::cost {

class Oracle {
 public:
  virtual ~Oracle() = default;
  // Cycles from the start of a re-layout (every core released at once) until the last core holds
  // its part; `messages` in program order (from == to: a local copy).
  virtual double gather(const std::vector<Message>& messages) = 0;
  // Cycles of one shift round: every (sender, receiver) pair moves `bytes` at once.
  virtual double round(const std::vector<std::pair<std::size_t, std::size_t>>& pairs, Bytes bytes) = 0;
  // Cycles to copy `bytes` (fp16) out of the shift buffer.
  virtual double copy(Bytes bytes) const = 0;
};

}  // namespace tessera::cost
