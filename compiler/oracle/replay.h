#pragma once
// The oracle of `--price-by simulate` (docs/cost.md): re-layouts and shift rounds replayed on the
// simulator's packet-level network engine (sim::PacketNetwork, plain C++): the same ports, links,
// routes and time-ordered contention the simulator uses, without SystemC. This is the simulator's
// own transport, exact by construction on an operator run alone, and slow: a yardstick for the
// cost model, never the cost model.
#include <vector>

#include "compiler/cost/oracle.h"
#include "sim/config/config.h"
#include "sim/noc/packet_net.h"

namespace tessera::oracle {

class Replay : public cost::Oracle {
 public:
  explicit Replay(const sim::Config& cfg);
  // As in the program, each core issues its sends in order (a send occupies the core until its
  // source port is done), then makes its local copies, then waits for its receives.
  double gather(const std::vector<cost::Message>& messages) override;
  double round(const std::vector<std::pair<std::size_t, std::size_t>>& pairs, Bytes bytes) override;
  double copy(Bytes bytes) const override;

 private:
  const sim::Config& cfg_;
  sim::PacketNetwork net_;  // reset before each replay
};

}  // namespace tessera::oracle
