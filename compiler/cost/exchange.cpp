#include "compiler/cost/exchange.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "sim/core/compute_model.h"

namespace tessera::cost {

ExchangeReplay::ExchangeReplay(const sim::Config& cfg)
    : cfg_(cfg), fabric_(cfg), links_(cfg.system), boundary_(cfg.system.chips > 1 ? &links_ : nullptr) {
  fabric_.resources(resources_);
  links_.resources(resources_);
}

void ExchangeReplay::reset() {
  for (sim::Resource* r : resources_) r->reset();
}

double ExchangeReplay::cycles(const std::vector<lower::Piece>& pieces) {
  if (pieces.empty()) return 0;
  reset();
  std::size_t cores = 0;
  for (const auto& p : pieces) cores = std::max({cores, p.from + 1, p.to + 1});
  struct Send { std::size_t to; Bytes bytes; };
  std::vector<std::vector<Send>> sends(cores);
  std::vector<Cycles> copy_cycles(cores, 0);
  for (const auto& p : pieces) {
    const auto elements = static_cast<std::uint64_t>(p.box.elements());
    if (p.from == p.to)
      copy_cycles[p.to] += sim::elementwise_cycles(cfg_.chip.core, sim::VecOp::Copy, elements);
    else
      sends[p.from].push_back({p.to, static_cast<Bytes>(elements * 2)});
  }
  // Sends in time order; a core's next send waits for its previous one's source port.
  using Event = std::tuple<Cycles, std::size_t, std::size_t>;  // time, core, send index
  std::priority_queue<Event, std::vector<Event>, std::greater<>> ready;
  for (std::size_t c = 0; c < cores; ++c)
    if (!sends[c].empty()) ready.emplace(0, c, 0);
  std::vector<Cycles> arrived(cores, 0), sent(cores, 0);
  while (!ready.empty()) {
    const auto [t, c, i] = ready.top();
    ready.pop();
    const Send& s = sends[c][i];
    const sim::Transfer tr = fabric_.transfer(static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(s.to), t,
                                              s.bytes, boundary_, nullptr);
    arrived[s.to] = std::max(arrived[s.to], tr.arrival);
    sent[c] = tr.sender_done;
    if (i + 1 < sends[c].size()) ready.emplace(tr.sender_done, c, i + 1);
  }
  Cycles end = 0;
  for (std::size_t c = 0; c < cores; ++c) end = std::max(end, std::max(sent[c] + copy_cycles[c], arrived[c]));
  return static_cast<double>(end);
}

double ExchangeReplay::round(const std::vector<std::pair<std::size_t, std::size_t>>& pairs, Bytes bytes) {
  reset();
  Cycles end = 0;
  for (const auto& [from, to] : pairs)
    if (from != to)
      end = std::max(end, fabric_.transfer(static_cast<std::uint32_t>(from), static_cast<std::uint32_t>(to), 0, bytes,
                                           boundary_, nullptr).arrival);
  return static_cast<double>(end);
}

}  // namespace tessera::cost
