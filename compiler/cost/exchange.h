#pragma once
// Re-layouts priced by replaying their messages on the simulator's packet-level network engine
// (sim::PacketNetwork, plain C++): the same ports, links, routes and time-ordered contention the
// simulator uses, without SystemC. The byte-count terms of the analytical model miss what decides
// a gather's time on these fabrics: an exchange transfer holds both ports for its whole duration,
// so the order of the messages matters; data a core already holds is a local copy; mesh links are
// shared. This is the simulator's own transport: an oracle, exact by construction.
#include <memory>
#include <vector>

#include "compiler/lower/lower.h"
#include "sim/config/config.h"
#include "sim/noc/packet_net.h"

namespace tessera::cost {

class ExchangeReplay {
 public:
  explicit ExchangeReplay(const sim::Config& cfg);
  // Cycles from the start of a re-layout (every core released by a barrier at once) until the
  // last core holds its part: as in the program, each core issues its sends in order (a send
  // occupies the core until its source port is done), then makes its local copies, then waits
  // for its receives.
  double cycles(const std::vector<lower::Piece>& pieces);
  // Cycles of one shift round: every (sender, receiver) pair moves `bytes` at once, released by
  // a barrier; until the last arrival.
  double round(const std::vector<std::pair<std::size_t, std::size_t>>& pairs, Bytes bytes);

 private:
  const sim::Config& cfg_;
  sim::PacketNetwork net_;  // reset before each replay
};

}  // namespace tessera::cost
